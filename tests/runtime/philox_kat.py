#!/usr/bin/env python3
"""Philox4x32-10 known-answer vectors, recomputed from the specification
(Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3",
SC'11): an implementation independent of runtime/src/ref/ref_random.c, whose
output tests/runtime/test_random.c holds.  Run: python3 philox_kat.py"""

M0, M1 = 0xD2511F53, 0xCD9E8D57  # the round multipliers
W0, W1 = 0x9E3779B9, 0xBB67AE85  # the key schedule's Weyl increments
MASK = 0xFFFFFFFF


def philox4x32(ctr, key, rounds=10):
    c, k = list(ctr), list(key)
    for r in range(rounds):
        if r:
            k = [(k[0] + W0) & MASK, (k[1] + W1) & MASK]
        p0, p1 = M0 * c[0], M1 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & MASK, (p0 >> 32) ^ c[3] ^ k[1], p0 & MASK]
    return c


CASES = [
    ([0, 0, 0, 0], [0, 0]),
    ([MASK] * 4, [MASK] * 2),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0]),  # digits of pi
]

for ctr, key in CASES:
    print(" ".join("%08x" % w for w in philox4x32(ctr, key)))
