"""The .tdb bulk reader's numbers read compiled with numba (docs/formats.md §6, "Reading
numbers in bulk"): ``np.fromstring(span, dtype=float64, sep=" ")`` of many spans of one
text in one call, for the numbers whose value a single IEEE operation gives exactly.

A decimal number of at most 15 significant digits is an integer M < 10**15 < 2**53 times
10**k; for |k| <= 22 both M and 10**|k| are doubles exactly, so ``M * 10**k`` (or
``M / 10**-k``) rounded once is the correctly rounded value of the decimal, which is what
numpy's correctly rounded reader gives (Clinger's fast path, "How to read floating point
numbers accurately", 1990). A span holding any other token (more significant digits, a
larger exponent, ``nan``, ``inf``, a character that is neither a digit, a sign, a point,
an exponent nor C white space) or two tokens not parted by white space is handed back
(status 1), as is a span without a number: numpy reads it and decides, so the values,
and the refusals, are always numpy's.

Imported only when numba is usable and the table is large enough to repay loading it
(``formats/tdb_bulk_nodes.py``, NUMBERS_COMPILED_MIN_CHARS); its reference is numpy's reader.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["FAST_DIGITS", "FAST_EXPONENT", "POW10", "fast_number", "parse_spans"]

#: The fast path's bounds: significant digits (the integer fits 53 bits exactly) and
#: the decimal exponent either way (10**22 is the largest power of ten a double holds).
FAST_DIGITS = 15
FAST_EXPONENT = 22

POW10 = np.array([10.0**k for k in range(FAST_EXPONENT + 1)])  # (each exactly a double)

_jit = njit(cache=True, nogil=True)


@_jit
def _space(c):  # C's isspace, what numpy's separator " " skips
    return c == 32 or 9 <= c <= 13


# Inlined into its callers at numba's IR level: called as a function it made the number
# reader's loop ~1.6x slower (the value, the end and the status went through memory).
@njit(cache=True, nogil=True, inline="always")
def fast_number(buf, i, e):
    """The number token that starts at ``buf[i]`` (``i < e``) read by the fast path (see the
    module's text): (True, its value, the index past it) where one IEEE operation gives
    the value, else (False, 0.0, i). The token ends at the first byte below ``e`` that no
    number can hold there; what follows it is the caller's to judge."""
    neg = False
    c = buf[i]
    if c == 43 or c == 45:  # + -
        neg = c == 45
        i += 1
    m = 0
    digits = 0  # significant digits in m (leading zeros are not)
    frac = 0  # digits after the point
    seen = False
    while i < e and 48 <= buf[i] <= 57:
        d = buf[i] - 48
        if digits > 0 or d != 0:
            digits += 1
            if digits <= FAST_DIGITS:
                m = m * 10 + d
        seen = True
        i += 1
    if i < e and buf[i] == 46:  # .
        i += 1
        while i < e and 48 <= buf[i] <= 57:
            d = buf[i] - 48
            if digits > 0 or d != 0:
                digits += 1
                if digits <= FAST_DIGITS:
                    m = m * 10 + d
            frac += 1
            seen = True
            i += 1
    if not seen or digits > FAST_DIGITS:
        return False, 0.0, i
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
            return False, 0.0, i
        k += -ex if eneg else ex
    if m == 0:
        v = 0.0
    elif 0 <= k <= FAST_EXPONENT:
        v = float(m) * POW10[k]
    elif -FAST_EXPONENT <= k < 0:
        v = float(m) / POW10[-k]
    else:
        return False, 0.0, i
    return True, -v if neg else v, i


@_jit
def parse_spans(buf, starts, ends, out, offsets, counts, status):
    """For each span ``buf[starts[s]:ends[s]]`` (bytes): its numbers into
    ``out[offsets[s]:]``, their count into ``counts[s]``, and ``status[s]`` 0, or 1
    where the span is handed back to numpy (see the module's text)."""
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
            ok, v, i = fast_number(buf, i, e)
            if not ok or (i < e and not _space(buf[i])):
                bad = True
                break
            out[o + n] = v
            n += 1
        counts[s] = n
        status[s] = 1 if bad or n == 0 else 0


@_jit
def _int_of(v, lim):  # (whether v is an integer of magnitude <= lim, its int64)
    if not abs(v) <= lim:  # (False for nan and inf too)
        return False, 0
    iv = np.int64(v)  # (as numpy's cast: toward zero)
    return float(iv) == v, iv


@_jit
def fill_rows(values, offsets, nrows, r0, limits, i0, i1, i2, i3, i4, i5, i6, i7, i8, f0, f1, f2, f3, f4, f5):
    """The section rows of spans read by parse_spans into the columns, as
    formats/tdb_bulk_nodes.py's _BulkColumns.add (the numpy reference) fills and checks them: span
    k's ``nrows[k]`` rows of 16 numbers start at ``values[offsets[k] + 1]`` (after its
    count); ``i0``..``i8`` the integer columns (SECTION_COLUMNS without flag3),
    ``f0``..``f5`` the float ones, filled from row ``r0``. ``limits``: the largest
    magnitude of an integer (2**53), of a tile, of an offset, of an angle. Returns the
    rows written, or -1 where the reference refuses a value (not finite, out of range,
    an integer column's value not an integer, flag3 not 0)."""
    exact, tile, offset, angle = limits[0], limits[1], limits[2], limits[3]
    r = r0
    ok = True
    for k in range(offsets.size):
        o = offsets[k] + 1
        for _q in range(nrows[k]):
            row = values[o : o + 16]
            o += 16
            ok0, v0 = _int_of(row[0], exact)
            ok1, v1 = _int_of(row[1], exact)
            ok2, v2 = _int_of(row[2], exact)
            ok3, v3 = _int_of(row[3], exact)
            ok4, v4 = _int_of(row[4], exact)
            ok5, v5 = _int_of(row[5], exact)
            ok6, v6 = _int_of(row[6], exact)
            ok8, v8 = _int_of(row[8], tile)
            ok9, v9 = _int_of(row[9], tile)
            ok = ok0 and ok1 and ok2 and ok3 and ok4 and ok5 and ok6 and ok8 and ok9
            ok = ok and row[7] == 0.0  # flag3, kept as "00": its number must be 0
            ok = ok and abs(row[10]) <= offset and abs(row[11]) <= offset and abs(row[12]) <= offset
            ok = ok and abs(row[13]) <= angle and abs(row[14]) <= angle and abs(row[15]) <= angle
            if not ok:
                return -1
            i0[r] = v0
            i1[r] = v1
            i2[r] = v2
            i3[r] = v3
            i4[r] = v4
            i5[r] = v5
            i6[r] = v6
            i7[r] = v8
            i8[r] = v9
            f0[r] = row[10]
            f1[r] = row[11]
            f2[r] = row[12]
            f3[r] = row[13]
            f4[r] = row[14]
            f5[r] = row[15]
            r += 1
    return r - r0
