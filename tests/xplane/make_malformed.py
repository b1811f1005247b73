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
for fname, data in files.items():
    with open(os.path.join(out, fname), "wb") as f:
        f.write(data)
