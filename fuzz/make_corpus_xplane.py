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


seeds = {
    "legacy_gpu7.pb": ("jax_conv_minimal_legacy/trace.xplane.pb", "/device:GPU:7"),
    "legacy_gpu0_memcpy.pb": ("jax_conv_minimal_legacy/trace.xplane.pb", "/device:GPU:0"),
}
os.makedirs(os.path.join(here, "corpus_xplane"), exist_ok=True)
for out, (src, want) in seeds.items():
    data = open(os.path.join(jax, src), "rb").read()
    for p in planes(data):
        if plane_name(p) == want:
            with open(os.path.join(here, "corpus_xplane", out), "wb") as f:
                f.write(b"\x0a" + enc_varint(len(p)) + p)
