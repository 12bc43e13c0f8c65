"""The STF lexer's pre-scans of a large ASCII text compiled with numba (stf/scans.py):
one pass over a slice's bytes where stf.parser._ascii_scans, the reference, runs three
``bytes.translate`` and a search (~0.6 s of CPU for a 202 MB .tdb).

Imported only when numba is usable and the text is large enough to repay loading it
(stf/scans.py, SCANS_COMPILED_MIN_CHARS).
"""

from __future__ import annotations

from numba import njit

__all__ = ["scan_slice"]


@njit(cache=True, nogil=True)
def scan_slice(buf, long_word, words, lengths, found, counts):  # noqa: ANN001, ANN201
    """For the bytes ``buf`` of one slice: (whether it holds a control byte (1..8,
    14..27), whether it holds a run of ``long_word`` word bytes (none of 0..32, "(",
    ")", '"')). Keyword ``k`` (``words[k, :lengths[k]]``, lower-case letters) is found
    where the slice's bytes, ASCII letters lowered, equal it, left to right without
    overlapping itself (``bytes.find`` from past the last hit, as the reference): its
    positions in ``found[k, :counts[k]]``; ``counts[k]`` is -1 where there are more than
    ``found`` holds (the caller then takes the reference's search of the slice)."""
    n = buf.size
    control = False
    long_run = False
    run = 0
    nw = lengths.size
    cap = found.shape[1]
    after = [0] * nw  # (where each keyword may be found next)
    for k in range(nw):
        counts[k] = 0
    for i in range(n):
        c = buf[i]
        if c <= 32 or c == 40 or c == 41 or c == 34:  # (white space, "(", ")", '"')
            run = 0
            if 1 <= c <= 8 or 14 <= c <= 27:
                control = True
        else:
            run += 1
            if run >= long_word:
                long_run = True
            low = c + 32 if 65 <= c <= 90 else c
            for k in range(nw):
                m = lengths[k]
                if low != words[k, 0] or i < after[k] or i + m > n:
                    continue
                same = True
                for j in range(1, m):
                    d = buf[i + j]
                    if (d + 32 if 65 <= d <= 90 else d) != words[k, j]:
                        same = False
                        break
                if same:
                    after[k] = i + m
                    if counts[k] >= 0:
                        if counts[k] < cap:
                            found[k, counts[k]] = i
                            counts[k] += 1
                        else:
                            counts[k] = -1
    return control, long_run
