#!/usr/bin/env python3
"""Writes fuzz/corpus_xplane/: real XSpace seeds for fuzz_xplane, each one GPU plane of a
sample in ../shared/jax (TraceLens test data, MIT) re-wrapped as a one-plane XSpace.
Usage: fuzz/make_corpus_xplane.py [SHARED_JAX_DIR]"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
jax = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "shared", "jax")


def varint(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def enc_varint(n):
    out = bytearray()
    while True:
        c = n & 0x7F
        n >>= 7
        out.append(c | 0x80 if n else c)
        if not n:
            return bytes(out)


def planes(data):  # XSpace.planes (field 1, length-delimited)
    i = 0
    while i < len(data):
        key, i = varint(data, i)
        if key & 7 == 2:
            n, i = varint(data, i)
            if key >> 3 == 1:
                yield data[i : i + n]
            i += n
        elif key & 7 == 0:
            _, i = varint(data, i)
        else:
            raise SystemExit("unexpected wire type")


def plane_name(p):
    i = 0
    while i < len(p):
        key, i = varint(p, i)
        if key & 7 == 2:
            n, i = varint(p, i)
            if key >> 3 == 2:
                return p[i : i + n].decode()
            i += n
        elif key & 7 == 0:
            _, i = varint(p, i)
    return ""


def fields(p):  # (number, wire type, raw bytes of the whole field)
    i = 0
    while i < len(p):
        start = i
        key, i = varint(p, i)
        if key & 7 == 2:
            n, i = varint(p, i)
            i += n
        elif key & 7 == 0:
            _, i = varint(p, i)
        else:
            raise SystemExit("unexpected wire type")
        yield key >> 3, key & 7, p[start:i]


def entry_key(field_bytes):  # a map entry's key (field 1) inside XPlane.event_metadata
    _, i = varint(field_bytes, 0)
    n, i = varint(field_bytes, i)
    for num, wt, raw in fields(field_bytes[i : i + n]):
        if num == 1 and wt == 0:
            return varint(raw, 1)[0]
    return None


def metadata_plane_of(data, program):
    """The /host:metadata plane keeping only `program`'s HLO proto."""
    for p in planes(data):
        if plane_name(p) != "/host:metadata":
            continue
        return b"".join(raw for num, _, raw in fields(p) if num != 4 or entry_key(raw) == program)


seeds = {
    "legacy_gpu7.pb": ("jax_conv_minimal_legacy/trace.xplane.pb", "/device:GPU:7"),
    "legacy_gpu0_memcpy.pb": ("jax_conv_minimal_legacy/trace.xplane.pb", "/device:GPU:0"),
}
os.makedirs(os.path.join(here, "corpus_xplane"), exist_ok=True)
# The conv program's HLO (program 15) with the GPU plane that runs it.
legacy = open(os.path.join(jax, "jax_conv_minimal_legacy/trace.xplane.pb"), "rb").read()
meta = metadata_plane_of(legacy, 15)
gpu7 = next(p for p in planes(legacy) if plane_name(p) == "/device:GPU:7")
with open(os.path.join(here, "corpus_xplane", "legacy_hlo_gpu7.pb"), "wb") as f:
    f.write(b"\x0a" + enc_varint(len(meta)) + meta + b"\x0a" + enc_varint(len(gpu7)) + gpu7)

for out, (src, want) in seeds.items():
    data = open(os.path.join(jax, src), "rb").read()
    for p in planes(data):
        if plane_name(p) == want:
            with open(os.path.join(here, "corpus_xplane", out), "wb") as f:
                f.write(b"\x0a" + enc_varint(len(p)) + p)
