#!/usr/bin/python3
"""Writes a tree of small test inputs for the batch tests.

    make_batch_tree.py DIR GOOD BAD

GOOD tiny PNG/JPEG images holding a word or two (OpenCV's Hershey font),
spread over nested directories, and BAD corrupt files with image names
(random bytes, a truncated PNG, an empty file), plus files that are not
inputs (a .txt). Deterministic: the same arguments give the same bytes.
Prints the relative names of the bad files, one per line.
"""
import os
import random
import sys

import cv2
import numpy as np

WORDS = ["lector", "batch", "shard", "resume", "output", "archive", "scan", "page", "index",
         "paper", "ledger", "folio", "report", "summary", "queue", "worker"]


def image(rng, text):
    w = 24 + 16 * len(text)
    img = np.full((40, w, 3), 255, np.uint8)
    cv2.putText(img, text, (8, 28), cv2.FONT_HERSHEY_SIMPLEX, 0.7, (0, 0, 0), 2, cv2.LINE_AA)
    return img


def main():
    root, good, bad = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(23)
    dirs = ["", "a", "a/b", "a/b/c", "scans 2024", "z"]
    for d in dirs:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for i in range(good):
        d = dirs[i % len(dirs)]
        text = rng.choice(WORDS) + (" " + rng.choice(WORDS) if i % 3 == 0 else "")
        ext = ".jpg" if i % 5 == 0 else ".png"
        cv2.imwrite(os.path.join(root, d, "img%03d%s" % (i, ext)), image(rng, text))
    png = cv2.imencode(".png", image(rng, "truncated"))[1].tobytes()
    for i in range(bad):
        d = dirs[(i * 7 + 3) % len(dirs)]
        kind = i % 3
        name = os.path.join(d, "bad%03d%s" % (i, ".jpg" if kind == 0 else ".png"))
        with open(os.path.join(root, name), "wb") as f:
            if kind == 0:
                f.write(bytes(rng.randrange(256) for _ in range(200)))
            elif kind == 1:
                f.write(png[: len(png) // 2])
        print(name)
    with open(os.path.join(root, "a", "notes.txt"), "w") as f:
        f.write("not an image\n")


main()
