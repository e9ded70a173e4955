#!/usr/bin/env python3
"""Bodies for bench/serve/soak.sh (stdlib only): OUT/good/NNN.png, 300
text-like pages of distinct sizes (320..1600 px wide); OUT/corrupt/*,
truncated and garbled ones; OUT/huge/*, headers over the limits (pixels,
memory) in a few KB.  soak_images.py OUT"""
import os
import random
import struct
import sys
import zlib


def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)


def png(w, h, rows):
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(b"".join(b"\0" + r for r in rows), 6)) + chunk(b"IEND", b""))


def page(w, h, rng):
    rows = []
    white = b"\xff" * w
    for y in range(h):
        band = (y // 14) % 3 == 1 and y < h - 20
        if not band:
            rows.append(white)
            continue
        r = bytearray(white)
        x = 20
        while x < w - 30:  # words: strokes of random widths
            n = rng.randint(4, 12)
            for k in range(n):
                if (k % 2) == 0:
                    r[x + 2 * k:x + 2 * k + 2] = b"\x20\x20"
            x += 2 * n + rng.randint(6, 14)
        rows.append(bytes(r))
    return png(w, h, rows)


out = sys.argv[1]
rng = random.Random(7)
for d in ("good", "corrupt", "huge"):
    os.makedirs(os.path.join(out, d), exist_ok=True)
for i in range(300):
    w = 320 + i * 4 + (i % 7)
    h = 240 + (i * 37) % 900
    open(os.path.join(out, "good", "%03d.png" % i), "wb").write(page(w, h, rng))
good = open(os.path.join(out, "good", "010.png"), "rb").read()
open(os.path.join(out, "corrupt", "truncated.png"), "wb").write(good[: len(good) // 2])
open(os.path.join(out, "corrupt", "garbled.png"), "wb").write(good[:200] + bytes(rng.getrandbits(8) for _ in range(3000)))
open(os.path.join(out, "corrupt", "text.bin"), "wb").write(b"not an image at all\n" * 50)
white = b"\xff" * 12000
open(os.path.join(out, "huge", "12000x12000.png"), "wb").write(png(12000, 12000, [white] * 12000))
open(os.path.join(out, "huge", "60000x60000.png"), "wb").write(
    b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 60000, 60000, 8, 0, 0, 0, 0)) + chunk(b"IEND", b""))
