#!/usr/bin/env python3
"""lector__utf8_valid / lector__utf8_repair against Python's own UTF-8 codec:
strict decoding says what is valid, errors="replace" does the Unicode
standard's "substitution of maximal subparts" (U+FFFD per maximal ill-formed
subsequence), which is what the repair must give, byte for byte.
    test_utf8.py UTF8_FILTER"""
import random
import subprocess
import sys

rng = random.Random(21)
tricky = [0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF,
          0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF8, 0xFE, 0xFF, 0x41, 0x7F]
cases = [
    b"", b"plain ascii", "纯臻营养护发素".encode(), b"\xff", b"a\xffb", b"\xe2\x82", b"\xe2\x82A",
    b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xf0\x80\x80\xaf",
    bytes.fromhex("61F18080E180C2628063 80BF64".replace(" ", "")),  # Unicode 15, table 3-8
]
for _ in range(20000):
    n = rng.randint(1, 12)
    cases.append(bytes(rng.choice(tricky) if rng.random() < 0.7 else rng.randint(1, 255) for _ in range(n)))
for _ in range(2000):  # valid text of every length class, then damaged
    s = "".join(chr(rng.choice([rng.randint(0x20, 0x7E), rng.randint(0x80, 0x7FF), rng.randint(0x800, 0xD7FF),
                                rng.randint(0xE000, 0xFFFF), rng.randint(0x10000, 0x10FFFF)])) for _ in range(6))
    b = bytearray(s.encode())
    if rng.random() < 0.5:
        del b[rng.randrange(len(b))]
    cases.append(bytes(b))
inp = "".join(c.hex() + "\n" for c in cases)
out = subprocess.run([sys.argv[1]], input=inp, capture_output=True, text=True)
if out.returncode:
    sys.exit(f"filter failed: {out.returncode}")
bad = 0
for c, line in zip(cases, out.stdout.splitlines()):
    valid, rep = line.split(" ") if " " in line else (line, "")
    try:
        c.decode("utf-8")
        want_valid = "1"
    except UnicodeDecodeError:
        want_valid = "0"
    want = c.decode("utf-8", "replace").encode("utf-8").hex()
    if valid != want_valid or rep != want:
        bad += 1
        if bad <= 10:
            print(f"{c.hex()}: valid {valid} (want {want_valid}), repaired {rep} (want {want})")
print(f"{len(cases)} strings, {bad} differ from Python's codec")
sys.exit(1 if bad else 0)
