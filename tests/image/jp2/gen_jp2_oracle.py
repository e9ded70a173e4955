#!/usr/bin/python3
"""Makes tests/image/jp2: JPEG 2000 files and, for each, the pixels expected
of Lector, the oracle of image.decode's JPEG 2000 test. Run with
/usr/bin/python3 (cv2, numpy, PIL; opj_compress from libopenjp2-tools):

    /usr/bin/python3 tests/image/jp2/gen_jp2_oracle.py

Each file NAME gets NAME.bgr ("W H\\n" then W*H*3 bytes, rows top down, BGR):
what cv2.imread(NAME, IMREAD_COLOR) gives (Debian's python3-opencv 4.6), or,
for a file OpenCV refuses and Lector reads by its documented rule
(docs/IMAGES.md), the file's known source pixels under that rule (computed
here, not by Lector). A file with neither is expected to fail. Sources:
random pixels of a fixed seed, and a crop of phototest.tif (Tesseract's test
page, ../shared/data/tesseract_test, Apache-2.0)."""
import os
import subprocess
import sys

import cv2
import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import bgr_oracle  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, '..', '..', '..', '..', 'shared', 'data')
rng = np.random.default_rng(7)
expected = {}  # name -> BGR array where OpenCV refuses the file and Lector reads it


def path(name):
    return os.path.join(HERE, name)


crop = Image.open(os.path.join(DATA, 'tesseract_test', 'images', 'phototest.tif')).convert('RGB')
crop = np.array(crop.crop((36, 40, 36 + 96, 40 + 40))).astype(np.uint16)
crop[..., 2] = crop[..., 2] * 3 // 4  # colour, so that R and B differ
crop = crop.astype(np.uint8)

# written by PIL (OpenJPEG's encoder): lossless unless quality layers are given
Image.fromarray(crop).save(path('phototest_rgb.jp2'))
Image.fromarray(crop).save(path('phototest_rgb_lossy.jp2'), quality_mode='rates', quality_layers=[20])
Image.fromarray(crop).save(path('phototest_rgb.j2k'))
Image.fromarray(crop).convert('L').save(path('phototest_gray.jp2'))
rgb = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
rgba = np.concatenate([rgb, np.full((5, 7, 1), 255, np.uint8)], axis=2)
Image.fromarray(rgba).save(path('opaque_rgba.jp2'))  # alpha 255: the RGB, as OpenCV (which drops alpha)
g16 = rng.integers(0, 65536, (4, 6)).astype(np.uint16)
Image.fromarray(g16, 'I;16').save(path('gray16.jp2'))  # OpenCV: the high byte

# a grey codestream without a colour space: OpenCV refuses it, Lector reads it as grey
gray = rng.integers(0, 256, (6, 5), dtype=np.uint8)
Image.fromarray(gray).save(path('gray.j2k'))
expected['gray.j2k'] = np.repeat(gray[..., None], 3, axis=2)

# 4-bit precision (opj_compress from raw samples declared 4 bits): OpenCV
# refuses precisions under 8; Lector scales sample * 255 / 15 (rounded down)
g4 = rng.integers(0, 16, (3, 8), dtype=np.uint8)
with open('/tmp/lector_g4.raw', 'wb') as f:
    f.write(g4.tobytes())
subprocess.run(['opj_compress', '-n', '2', '-F', '8,3,1,4,u', '-i', '/tmp/lector_g4.raw', '-o', path('gray4bit.jp2')],
               check=True, stdout=subprocess.DEVNULL)
expected['gray4bit.jp2'] = np.repeat((g4.astype(np.uint32) * 255 // 15).astype(np.uint8)[..., None], 3, axis=2)

# not JPEG 2000 at all past its signature, and one cut short
sig = bytes([0, 0, 0, 12]) + b'jP  \r\n\x87\n'
with open(path('signature_only.jp2'), 'wb') as f:
    f.write(sig + b'\x00' * 20)
whole = open(path('phototest_rgb.jp2'), 'rb').read()
with open(path('cut_short.jp2'), 'wb') as f:
    f.write(whole[:len(whole) // 3])

for name in sorted(os.listdir(HERE)):
    if not (name.endswith('.jp2') or name.endswith('.j2k')):
        continue
    img = cv2.imread(path(name), cv2.IMREAD_COLOR)
    if img is not None and name in expected:
        sys.exit(f'{name}: OpenCV reads it now; take its pixels')
    bgr_oracle.write(path(name), img if img is not None else expected.get(name),
                     'documented rule' if name in expected else 'OpenCV')
