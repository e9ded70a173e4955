"""The .bgr files of tests/image's oracle directories (pnm/, jp2/), read by
test_image.c's check_oracle_dir: "W H\\n", then W*H*3 bytes, rows top down,
BGR. No .bgr beside an image means the test expects it to fail."""
import os
import sys

import numpy as np


def write(image_path, img, label):
    """Writes image_path + '.bgr' from img (H x W x 3, BGR), or removes it
    when img is None (the image is expected to fail)."""
    out = image_path + '.bgr'
    name = os.path.basename(image_path)
    if img is None:
        if os.path.exists(out):
            os.remove(out)
        print(f'{name}: expected to fail', file=sys.stderr)
        return
    h, w = img.shape[:2]
    with open(out, 'wb') as f:
        f.write(f'{w} {h}\n'.encode() + np.ascontiguousarray(img).tobytes())
    print(f'{name}: {w}x{h} ({label})', file=sys.stderr)
