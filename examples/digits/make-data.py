#!/usr/bin/python3
"""make-data.py: writes digits.bin, the 8x8 handwritten digits of
scikit-learn (sklearn.datasets.load_digits: 1797 samples, 10 classes), with
a fixed train/test split.  Run from anywhere:

    /usr/bin/python3 examples/digits/make-data.py [OUT]   (default: digits.bin
                                                          beside this script)

The output depends only on the data and the fixed seed, so running it again
writes the same bytes (digits.bin is kept in the repository; see
LICENSE-data.md for the data's origin and terms).

Format of digits.bin (all integers little-endian):

    offset  size          field
    0       8             magic, the ASCII bytes "DIGITS01"
    8       4             count, u32: number of samples (1797)
    12      4             n_train, u32: the first n_train samples are the
                          training set, the remaining count - n_train the
                          test set (1437 and 360)
    16      65 * count    the samples, each 64 pixel bytes (row-major 8x8,
                          values 0..16) followed by 1 label byte (0..9)

Total 16 + 65 * 1797 = 116821 bytes.  The samples are in the order of
numpy.random.RandomState(SEED).permutation(1797) applied to load_digits()'s
order (RandomState's stream is fixed across numpy versions), so the split
is a fixed random one.
"""
import os
import struct
import sys

import numpy as np
from sklearn.datasets import load_digits

MAGIC = b"DIGITS01"
SEED = 0
N_TEST = 360


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "digits.bin")
    digits = load_digits()
    images = np.asarray(digits.data)
    labels = np.asarray(digits.target)
    count = images.shape[0]
    assert images.shape == (count, 64), images.shape
    assert images.min() >= 0 and images.max() <= 16
    assert np.all(images == np.round(images))
    assert labels.min() >= 0 and labels.max() <= 9
    n_train = count - N_TEST

    order = np.random.RandomState(SEED).permutation(count)
    records = np.empty((count, 65), dtype=np.uint8)
    records[:, :64] = images[order].astype(np.uint8)
    records[:, 64] = labels[order].astype(np.uint8)

    blob = MAGIC + struct.pack("<II", count, n_train) + records.tobytes()
    tmp = out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(blob)
    os.replace(tmp, out)
    print("%s: %d samples (%d train, %d test), %d bytes"
          % (out, count, n_train, count - n_train, len(blob)))


if __name__ == "__main__":
    main()
