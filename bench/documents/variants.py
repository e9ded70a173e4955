#!/usr/bin/python3
"""bench/documents/variants.py - an archive of distinct pages made from a few: each JPEG page
scaled and cropped N ways, so that a run over the archive meets every page size for the first time,
as a real archive does, where a page list repeated would meet each size once and then hit its plan.

  variants.py --out DIR --count N [--seed S] [--lib PATH] PAGE...

Writes DIR/NNNNN.jpg (N pages, the inputs taken in turn) and prints one line per page written to
DIR/list.txt (absolute paths, for `lector @DIR/list.txt`). Variant k of a page: scaled by a factor
TurboJPEG decodes at (n/8), chosen so that the longer side stays between 900 and 3600 px, then
cropped by 0 to 8% on each side, so its size is new; text is neither moved within the page nor
re-rendered, so its lines' widths recur about as much as in a run of similar documents.

Only the standard library and TurboJPEG (libturbojpeg.so.0 through ctypes: the offline bundle has
it, so this runs on the accelerator machine, which has no Pillow); PNG inputs are skipped.
Deterministic: variant k of page p depends only on (seed, p, k).
"""
import argparse
import ctypes
import os
import random
import sys
from concurrent.futures import ProcessPoolExecutor

TJPF_RGB, TJSAMP_420, TJFLAG_FASTDCT = 0, 2, 2048
_tj = None


def turbojpeg(path):
    global _tj
    if _tj is None:
        _tj = ctypes.CDLL(path)
        _tj.tjInitDecompress.restype = ctypes.c_void_p
        _tj.tjInitCompress.restype = ctypes.c_void_p
        _tj.tjDecompressHeader3.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_ulong] + [
            ctypes.POINTER(ctypes.c_int)] * 4
        _tj.tjDecompress2.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p,
                                      ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        _tj.tjCompress2.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                    ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_ulong),
                                    ctypes.c_int, ctypes.c_int, ctypes.c_int]
        _tj.tjFree.argtypes = [ctypes.c_void_p]
        _tj.tjGetErrorStr2.argtypes = [ctypes.c_void_p]
        _tj.tjGetErrorStr2.restype = ctypes.c_char_p
    return _tj


def variant(job):
    """(lib, src, dst, seed, p, k) -> dst, or an error line."""
    lib, src, dst, seed, p, k = job
    tj = turbojpeg(lib)
    data = open(src, "rb").read()
    d = tj.tjInitDecompress()
    w, h, sub, cs = (ctypes.c_int() for _ in range(4))
    if tj.tjDecompressHeader3(d, data, len(data), *(ctypes.byref(v) for v in (w, h, sub, cs))):
        return f"error: {src}: {tj.tjGetErrorStr2(d).decode(errors='replace')}"
    rng = random.Random(f"{seed}/{p}/{k}")
    longer = max(w.value, h.value)
    nums = [n for n in range(4, 17) if 900 <= longer * n // 8 <= 3600] or [8]
    n = rng.choice(nums)
    sw, sh = (w.value * n + 7) // 8, (h.value * n + 7) // 8  # TurboJPEG's scaled size (rounded up)
    buf = ctypes.create_string_buffer(sw * sh * 3)
    if tj.tjDecompress2(d, data, len(data), buf, sw, sw * 3, sh, TJPF_RGB, TJFLAG_FASTDCT):
        return f"error: {src}: {tj.tjGetErrorStr2(d).decode(errors='replace')}"
    left, right = (int(sw * rng.uniform(0, 0.08)) for _ in range(2))
    top, bottom = (int(sh * rng.uniform(0, 0.08)) for _ in range(2))
    cw, ch = sw - left - right, sh - top - bottom
    raw = buf.raw
    rows = b"".join(raw[(top + y) * sw * 3 + left * 3:(top + y) * sw * 3 + (left + cw) * 3] for y in range(ch))
    c = tj.tjInitCompress()
    out, size = ctypes.c_void_p(), ctypes.c_ulong()
    if tj.tjCompress2(c, rows, cw, cw * 3, ch, TJPF_RGB, ctypes.byref(out), ctypes.byref(size), TJSAMP_420, 90,
                      TJFLAG_FASTDCT):
        return f"error: {src}: {tj.tjGetErrorStr2(c).decode(errors='replace')}"
    with open(dst, "wb") as f:
        f.write(ctypes.string_at(out, size.value))
    tj.tjFree(out)
    return dst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--lib", default="libturbojpeg.so.0")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("pages", nargs="+")
    a = ap.parse_args()
    pages = [p for p in a.pages if p.lower().endswith((".jpg", ".jpeg"))]
    if not pages:
        sys.exit("variants.py: no JPEG page among the inputs")
    os.makedirs(a.out, exist_ok=True)
    jobs = [(a.lib, pages[i % len(pages)], os.path.abspath(os.path.join(a.out, f"{i:05d}.jpg")), a.seed,
             i % len(pages), i // len(pages)) for i in range(a.count)]
    written = []
    with ProcessPoolExecutor(a.jobs) as ex:
        for r in ex.map(variant, jobs, chunksize=4):
            if r.startswith("error: "):
                print(f"variants.py: {r[7:]}", file=sys.stderr)
            else:
                written.append(r)
    with open(os.path.join(a.out, "list.txt"), "w") as f:
        f.write("".join(p + "\n" for p in written))
    print(f"variants.py: {len(written)} pages from {len(pages)} in {a.out}")
    return 0 if len(written) == a.count else 1


if __name__ == "__main__":
    sys.exit(main())
