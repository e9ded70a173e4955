#!/usr/bin/python3
"""Makes tests/image/pnm: PBM/PGM/PPM files and, for each, the pixels OpenCV
reads from it (cv2.imread(path, cv2.IMREAD_COLOR), Debian's python3-opencv
4.6), the oracle of image.decode's PNM test. Run from anywhere with
/usr/bin/python3 (cv2, numpy and PIL):

    /usr/bin/python3 tests/image/pnm/gen_pnm_oracle.py

Each NAME.p?m gets NAME.p?m.bgr ("W H\\n" then W*H*3 bytes, rows top down, BGR)
when OpenCV reads it, or no .bgr when OpenCV refuses it (the test then expects
an error). The real crops come from phototest.tif (Tesseract's test page,
../shared/data/tesseract_test, Apache-2.0), written by PIL (another writer
than the reader under test)."""
import os
import sys

import cv2
import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import bgr_oracle  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, '..', '..', '..', '..', 'shared', 'data')


def be16(v):
    return int(v).to_bytes(2, 'big')


files = {
    # raw, 8-bit: OpenCV takes samples as they are whatever the maxval
    'raw_gray_maxval15.pgm': b'P5\n4 2\n15\n' + bytes([0, 5, 15, 10, 20, 1, 2, 3]),
    'raw_rgb_maxval100.ppm': b'P6\n2 1\n100\n' + bytes([100, 0, 50, 0, 100, 25]),
    # raw, 16-bit: the high byte
    'raw_gray16.pgm': b'P5 3 1 65535\n' + be16(0x1280) + be16(0xff7f) + be16(0x00ff),
    'raw_gray_maxval1000.pgm': b'P5 2 1 1000\n' + be16(500) + be16(1000),
    'raw_rgb16.ppm': b'P6\n1 2\n4095\n' + be16(4095) + be16(0) + be16(2048) + be16(256) + be16(512) + be16(1024),
    # plain: scaled by 255 / maxval, clamped to maxval first
    'plain_gray.pgm': b'P2\n# a comment\n3 1\n# another\n255\n0 128 255\n',
    'plain_gray_maxval15.pgm': b'P2\n3 2\n15\n0 7 15\n20 1 14\n',
    'plain_rgb.ppm': b'P3\n2 1\n255\n255 0 0  0 0 255\n',
    'plain_rgb_over.ppm': b'P3\n1 1\n15\n20 3 4\n',
    'plain_gray16.pgm': b'P2\n2 1\n1000\n500 1000\n',
    # bitmaps: 1 is black
    'plain_bits.pbm': b'P1\n4 1\n0101\n',
    'plain_bits_spaced.pbm': b'P1\n# c\n4 2\n0 1 0 1\n1 1 0 0\n',
    'raw_bits.pbm': b'P4\n10 2\n' + bytes([0b10100000, 0b01000000, 0b11111111, 0b11000000]),
    # the header ends at the one byte after the maxval: CR, then LF is a sample
    'crlf.pgm': b'P5\r\n2 1\r\n255\r\n' + bytes([10, 20]),
    'tabs.pgm': b'P5\t2\t1\t255\t' + bytes([7, 9]),
    # refused by OpenCV
    'cut_short.pgm': b'P5\n4 1\n255\n' + bytes([1, 2]),
    'comment_in_number.pgm': b'P5\n4#x\n 1\n255\n' + bytes([1, 2, 3, 4]),
    'maxval_zero.pgm': b'P5\n1 1\n0\n' + bytes([0]),
    'maxval_too_large.pgm': b'P5\n1 1\n65536\n' + bytes([0, 0]),
    'width_zero.ppm': b'P6\n0 1\n255\n',
    'letter_in_raster.pgm': b'P2\n2 1\n255\n1 x\n',
}

crop = Image.open(os.path.join(DATA, 'tesseract_test', 'images', 'phototest.tif')).convert('RGB')
crop = crop.crop((36, 40, 36 + 96, 40 + 40))  # a word and a half of the first line
tint = np.array(crop).astype(np.uint16)
tint[..., 2] = (tint[..., 2] * 3) // 4  # colour, so that R and B differ
crop = Image.fromarray(tint.astype(np.uint8))
for name, im in (('phototest_crop.ppm', crop), ('phototest_crop.pgm', crop.convert('L')),
                 ('phototest_crop.pbm', crop.convert('1'))):
    path = os.path.join(HERE, name)
    im.save(path)
    files[name] = open(path, 'rb').read()

for name, data in sorted(files.items()):
    path = os.path.join(HERE, name)
    with open(path, 'wb') as f:
        f.write(data)
    bgr_oracle.write(path, cv2.imread(path, cv2.IMREAD_COLOR), 'OpenCV')
