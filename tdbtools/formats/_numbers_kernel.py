"""The .tdb bulk reader's numbers, read compiled with numba (docs/formats.md, "Reading
numbers in bulk"): ``np.fromstring(span, sep=" ")`` of many spans of one text at once,
for the numbers whose value one IEEE operation gives exactly.

A decimal number of at most 15 significant digits is an integer M < 2**53 times 10**k;
for |k| <= 22 both M and 10**|k| are doubles exactly, so ``M * 10**k`` (or ``M /
10**-k``) rounded once is the correctly rounded value, which is what numpy's (and
Python's) correctly rounded reading gives (Clinger's fast path). A span with any other
token (more digits, a larger exponent, ``nan``, ``inf``, any other character) or with two
tokens not separated by white space is left to numpy (status 1), as is an empty one.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_jit = njit(cache=True, nogil=True)

POW10 = np.array([10.0**k for k in range(23)])  # (each exactly a double)


@_jit
def _space(c):  # C's isspace
    return c == 32 or 9 <= c <= 13


@_jit
def parse_spans(buf, starts, ends, pow10, out, offsets, counts, status):
    """For each span ``buf[starts[s]:ends[s]]`` (bytes): its numbers into
    ``out[offsets[s]:]``, their count into ``counts[s]``, and ``status[s]`` 0, or 1
    where the span is left to numpy (see the module's text)."""
    for s in range(starts.size):
        i = starts[s]
        e = ends[s]
        o = offsets[s]
        n = 0
        bad = False
        while True:
            while i < e and _space(buf[i]):
                i += 1
            if i >= e:
                break
            neg = False
            c = buf[i]
            if c == 43 or c == 45:  # + -
                neg = c == 45
                i += 1
            m = 0
            digits = 0  # significant digits in m
            frac = 0  # digits after the point
            seen = False
            while i < e and 48 <= buf[i] <= 57:
                d = buf[i] - 48
                if digits > 0 or d != 0:
                    digits += 1
                    m = m * 10 + d
                seen = True
                i += 1
            if i < e and buf[i] == 46:  # .
                i += 1
                while i < e and 48 <= buf[i] <= 57:
                    d = buf[i] - 48
                    if digits > 0 or d != 0:
                        digits += 1
                        m = m * 10 + d
                    frac += 1
                    seen = True
                    i += 1
            if not seen or digits > 15:
                bad = True
                break
            k = -frac
            if i < e and (buf[i] == 101 or buf[i] == 69):  # e E
                i += 1
                eneg = False
                if i < e and (buf[i] == 43 or buf[i] == 45):
                    eneg = buf[i] == 45
                    i += 1
                ex = 0
                ed = 0
                while i < e and 48 <= buf[i] <= 57:
                    ex = ex * 10 + (buf[i] - 48)
                    ed += 1
                    i += 1
                if ed == 0 or ed > 4:
                    bad = True
                    break
                k += -ex if eneg else ex
            if i < e and not _space(buf[i]):
                bad = True
                break
            if m == 0:
                v = 0.0
            elif 0 <= k <= 22:
                v = float(m) * pow10[k]
            elif -22 <= k < 0:
                v = float(m) / pow10[-k]
            else:
                bad = True
                break
            out[o + n] = -v if neg else v
            n += 1
        counts[s] = n
        status[s] = 1 if bad or n == 0 else 0


def max_numbers(length: int) -> int:
    """How many numbers a span of ``length`` bytes can hold (each a character and a
    separator)."""
    return (length + 1) // 2
