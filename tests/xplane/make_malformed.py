#!/usr/bin/env python3
"""Writes the malformed XSpace inputs of tests/malformed/xplane/ (see README.md).

Each is a few hand-encoded protobuf bytes (field numbers of
xla/tsl/profiler/protobuf/xplane.proto) that the reader must refuse with a
TraceError naming the file."""
import os
import random

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "..", "malformed", "xplane")
os.makedirs(out, exist_ok=True)


def varint(n):
    b = bytearray()
    while True:
        c = n & 0x7F
        n >>= 7
        if n:
            b.append(c | 0x80)
        else:
            b.append(c)
            return bytes(b)


def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


name = field(2, 2, b"/device:GPU:0")  # XPlane.name
files = {
    # XSpace.planes whose length varint is cut off by the end of the file
    "truncated_varint.pb": b"\x0a\xff",
    # an XPlane whose name claims 16 bytes where 3 are left
    "length_past_end.pb": field(1, 2, name + b"\x22\x10abc"),
    # an XEvent stat (XLine.events -> XEvent.stats) holding a group (wire type 3)
    "group_in_stat.pb": field(1, 2, name + field(3, 2, field(4, 2, field(4, 2, b"\x0b\x0c")))),
    # a varint of 11 bytes in XLine.timestamp_ns
    "long_varint.pb": field(1, 2, name + field(3, 2, b"\x18" + b"\xff" * 10 + b"\x01")),
    # the first field is not an XSpace plane
    "not_xspace.pb": field(9, 0, varint(5)) + b"hello",
    "empty.pb": b"",
    "random.pb": bytes(random.Random(53).randrange(256) for _ in range(512)),
}


def metadata_space(hlo_bytes, name=b"jit_f(1)"):
    """An XSpace whose /host:metadata plane holds one program with `hlo_bytes`
    as its "Hlo Proto" stat (xplane.proto: XPlane.event_metadata 4 and
    stat_metadata 5 are map<int64, ...> entries of key 1 / value 2)."""
    stat = field(1, 0, varint(1)) + field(6, 2, hlo_bytes)  # XStat metadata_id, bytes_value
    event_meta = field(1, 0, varint(1)) + field(2, 2, name) + field(5, 2, stat)
    stat_meta = field(1, 0, varint(1)) + field(2, 2, b"Hlo Proto")
    plane = (field(2, 2, b"/host:metadata") + field(4, 2, field(1, 0, varint(1)) + field(2, 2, event_meta))
             + field(5, 2, field(1, 0, varint(1)) + field(2, 2, stat_meta)))
    return field(1, 2, plane)


# HloInstructionProto (name 1, opcode 2) inside HloComputationProto.instructions (2),
# HloModuleProto.computations (3), HloProto.hlo_module (1).
inst = field(1, 2, b"fusion.1") + field(2, 2, b"fusion")
module = field(1, 2, b"jit_f") + field(3, 2, field(1, 2, b"main") + field(2, 2, inst))
# A ShapeProto nested 100 tuples deep (tuple_shapes 4, element_type 2 = TUPLE 13).
shape = field(2, 0, varint(11))
for _ in range(100):
    shape = field(2, 0, varint(13)) + field(4, 2, shape)
deep = field(1, 2, field(1, 2, b"jit_f") + field(3, 2, field(2, 2, field(1, 2, b"t") + field(3, 2, shape))))
files.update({
    # the HloProto's hlo_module claims 200 bytes where fewer are left
    "hlo_length_past_end.pb": metadata_space(b"\x0a\xc8\x01" + module),
    # an instruction's operand_ids packed run ends inside a varint
    "hlo_packed_cut.pb": metadata_space(field(1, 2, field(3, 2, field(2, 2, inst + field(36, 2, b"\x81"))))),
    # a shape nested deeper than the decoder follows
    "hlo_deep_tuple.pb": metadata_space(deep),
    # bytes that are no protobuf at all
    "hlo_garbage.pb": metadata_space(b"\xff\xff\xff\xff"),
})

for fname, data in files.items():
    with open(os.path.join(out, fname), "wb") as f:
        f.write(data)
