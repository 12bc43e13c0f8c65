"""The .tdb TrackNodes table walked compiled with numba (docs/formats.md §6, "The
compiled node scanner"): one pass over the bytes that finds every node, its kind, its
sections' span, pins, item references, UiD and the span of its TrJunctionNode /
TrEndNode values, instead of the regular expressions of grammars/tdb_nodes.lark run
once by the lexer's table-run hint and once more by the bulk reader.

It accepts a SUBSET of what those regular expressions accept, with the same values: a
node is taken only if the terminal it would match (VECTOR_HEAD + sections + VECTOR_TAIL,
JUNCTION or END) matches it whole; on top of that the kernel asks for what the bulk
reader checks anyway (the node's index is its position, a TrItemRefs count equals its
references, every UiD float is a number one IEEE operation gives, read by the number
reader's own fast path, formats/_numbers_kernel.fast_number, so ``float()`` of its text
gives the same double). Anything
else (another shape, a value it does not read exactly, a quote in the sections) makes it
give up (status 1), and the callers run the regular expressions (the reference) as
before. Each rule below names the part of the grammar it stands for.

Imported only when numba is usable and the text is large (formats/tdb_scan.py).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# (numba's cache checks a cached function against its own file only: after a change to
# fast_number, touch this file or clear its cache, as for _step_kernel's use of the engine's)
from ._numbers_kernel import fast_number

__all__ = ["DONE", "GIVE_UP", "MORE", "scan_nodes"]

#: scan_nodes' statuses: the walk ended before white space and ")" (or the end of the
#: last buffer); a node it does not take (hand everything back); the buffer ends (or the
#: outputs are full) before the next node is complete: call again from ``pos``.
DONE, GIVE_UP, MORE = 0, 1, 2

_jit = njit(cache=True, nogil=True)


def _word(s: str) -> np.ndarray:
    return np.frombuffer(s.encode("ascii"), dtype=np.uint8).copy()


_TRACKNODE = _word("TrackNode")
_VECTOR = _word("TrVectorNode")
_SECTIONS = _word("TrVectorSections")
_REFS = _word("TrItemRefs")
_REF = _word("TrItemRef")
_PINS = _word("TrPins")
_PIN = _word("TrPin")
_JUNCTION = _word("TrJunctionNode")
_END = _word("TrEndNode")
_UID = _word("UiD")


@_jit
def _skip(buf, i, n):  # _S: [\x00-\x20]*
    while i < n and buf[i] <= 32:
        i += 1
    return i


@_jit
def _lit(buf, i, n, word):  # a literal of the grammar; -1 if it is not there
    m = word.size
    if i + m > n:
        return -1
    for k in range(m):
        if buf[i + k] != word[k]:
            return -1
    return i + m


@_jit
def _open(buf, i, n):  # _S "(" _S; -1 if no "("
    i = _skip(buf, i, n)
    if i >= n or buf[i] != 40:
        return -1
    return _skip(buf, i + 1, n)


@_jit
def _uint(buf, i, n):  # _U: [0-9]{1,9} (what follows is never a digit: maximal run)
    j = i
    v = 0
    while j < n and 48 <= buf[j] <= 57 and j - i < 10:
        v = v * 10 + (buf[j] - 48)
        j += 1
    if j == i or j - i > 9:
        return 0, -1
    return v, j


@_jit
def _int(buf, i, n):  # _I: -?[0-9]{1,9}
    if i < n and buf[i] == 45:
        v, j = _uint(buf, i + 1, n)
        return -v, j
    return _uint(buf, i, n)


@_jit
def _ws1(buf, i, n):  # _W: [\x00-\x20]+; -1 if none
    j = _skip(buf, i, n)
    return j if j > i else -1


@_jit
def _float(buf, i, e):
    """The double of the token ``buf[i:e]`` where one IEEE operation gives it (then
    Python's float() of the text, correctly rounded, gives the same), else ok False."""
    ok, v, j = fast_number(buf, i, e)
    return ok and j == e, v


@_jit
def _pin(buf, i, n, out, row, col):  # _PIN: "TrPin" _S "(" _S _U _W _U _S ")" _S
    i = _lit(buf, i, n, _PIN)
    if i < 0:
        return -1
    i = _open(buf, i, n)
    if i < 0:
        return -1
    a, i = _uint(buf, i, n)
    if i < 0:
        return -1
    i = _ws1(buf, i, n)
    if i < 0:
        return -1
    b, i = _uint(buf, i, n)
    if i < 0:
        return -1
    i = _skip(buf, i, n)
    if i >= n or buf[i] != 41:
        return -1
    out[row, col] = a
    out[row, col + 1] = b
    return _skip(buf, i + 1, n)


@_jit
def _pins(buf, i, n, outs, out, row, col):
    """``"TrPins" _S "(" _S "1" _W "<outs>" _W _PIN{1 + outs} ")" _S ")"``, the tail of
    every node (a vector node 1 + 1 pins, a junction 1 + 2, an end node 1 + 0): the
    node's end, or -1."""
    i = _lit(buf, i, n, _PINS)
    if i < 0:
        return -1
    i = _open(buf, i, n)
    if i < 0 or i >= n or buf[i] != 49:  # "1"
        return -1
    i = _ws1(buf, i + 1, n)
    if i < 0 or i >= n or buf[i] != 48 + outs:
        return -1
    i = _ws1(buf, i + 1, n)
    if i < 0:
        return -1
    for p in range(1 + outs):
        i = _pin(buf, i, n, out, row, col + 2 * p)
        if i < 0:
            return -1
    if i >= n or buf[i] != 41:
        return -1
    i = _skip(buf, i + 1, n)
    if i >= n or buf[i] != 41:
        return -1
    return i + 1


@_jit
def _uid(buf, i, n, ints, flts, row, slow, ns, base):
    """_UID: "UiD" _S "(" _S (_I _W){6} (_F _W){5} _F _S ")" _S: ``(its end or -1, ns)``.
    A float off the fast path is left to Python's float() of its text: ``slow[ns]`` is
    (row, which float, its span in the text)."""
    i = _lit(buf, i, n, _UID)
    if i < 0:
        return -1, ns
    i = _open(buf, i, n)
    if i < 0:
        return -1, ns
    for k in range(6):
        v, i = _int(buf, i, n)
        if i < 0:
            return -1, ns
        ints[row, k] = v
        i = _ws1(buf, i, n)
        if i < 0:
            return -1, ns
    for k in range(6):
        j = i
        while j < n and buf[j] > 32 and buf[j] != 40 and buf[j] != 41 and buf[j] != 34:
            j += 1
        if j == i or j >= n:
            return -1, ns
        ok, v = _float(buf, i, j)
        if not ok:
            if ns >= slow.shape[0]:
                return -1, ns
            slow[ns, 0] = row
            slow[ns, 1] = k
            slow[ns, 2] = base + i
            slow[ns, 3] = base + j
            ns += 1
        flts[row, k] = v
        if k < 5:
            i = _ws1(buf, j, n)
            if i < 0:
                return -1, ns
        else:
            i = _skip(buf, j, n)
    if i >= n or buf[i] != 41:
        return -1, ns
    return _skip(buf, i + 1, n), ns


@_jit
def _out(status, pos, counters, nn, nv, no, nr, ns):
    # (a node not taken: in the last buffer the reference decides; else it may only be
    # cut by the buffer's end, and the caller tries again from ``pos`` with a larger one)
    counters[0] = nn
    counters[1] = nv
    counters[2] = no
    counters[3] = nr
    counters[4] = ns
    return status, pos


@_jit
def _until_close(buf, a, n):  # [^()"]* from ``a``: its end, if a ")" ends it, else -1
    b = a
    while b < n and buf[b] != 41 and buf[b] != 40 and buf[b] != 34:
        b += 1
    return b if b < n and buf[b] == 41 else -1


@_jit
def scan_nodes(buf, base, last, counters, kinds, vspan, vpins, vrefs, refs, ospan, oints, oflts, slow):
    """Walks the nodes of ``buf`` (bytes of a TrackNodes table, ``buf[0]`` at ``base`` in
    the text, from just after its count or after a node; ``last``: the buffer ends where
    the table's text does). ``counters``: nodes, vector nodes, other nodes and references
    stored so far (updated), the first node here being numbered ``counters[0] + 1``. Per
    node, in order: ``kinds`` (0 vector, 1 junction, 2 end); a vector node's sections span
    (``vspan``, positions in the text), 4 pin values, and the end of its references in
    ``refs`` (``vrefs``); a junction or end node's values span (``ospan``), 6 UiD ints
    then its pin values (``oints``: 6 for a junction, 2 for an end node) and 6 UiD
    floats (``oflts``; those off the fast path 0, listed in ``slow``: row, which one,
    span, ``counters[4]`` of them). More nodes than ``kinds`` holds: GIVE_UP.

    Returns ``(status, pos)``: ``pos`` is the end of the last node taken, in ``buf``
    (DONE: the walk is over; MORE: call again from ``pos``)."""
    n = buf.size
    cap = kinds.size
    pos = 0
    nn, nv, no, nr = counters[0], counters[1], counters[2], counters[3]
    ns = counters[4]
    while True:
        i = _skip(buf, pos, n)
        if i >= n:
            return _out(DONE if last else MORE, pos, counters, nn, nv, no, nr, ns)
        if buf[i] == 41:  # ")": the table's close (the callers check what follows)
            return _out(DONE, pos, counters, nn, nv, no, nr, ns)
        if i == pos:  # (every node terminal starts with _W: [\x00-\x20]+)
            return _out(GIVE_UP, pos, counters, nn, nv, no, nr, ns)
        if nn >= cap:
            return _out(GIVE_UP, pos, counters, nn, nv, no, nr, ns)
        # "TrackNode" _S "(" _S _U _W, the index being the node's position
        j = _lit(buf, i, n, _TRACKNODE)
        if j >= 0:
            j = _open(buf, j, n)
        v = 0
        if j >= 0:
            v, j = _uint(buf, j, n)
        if j >= 0:
            j = _ws1(buf, j, n)
        if j < 0 or v != nn + 1:
            return _out(GIVE_UP if last else MORE, pos, counters, nn, nv, no, nr, ns)
        k = _lit(buf, j, n, _VECTOR)
        if k >= 0:
            # VECTOR_HEAD's "TrVectorNode" _S "(" _S "TrVectorSections" _S "(", the
            # sections (str.find's ")", no "(" before it; no quote either), VECTOR_TAIL
            k = _open(buf, k, n)
            if k >= 0:
                k = _lit(buf, k, n, _SECTIONS)
            if k >= 0:
                k = _skip(buf, k, n)
                k = k + 1 if k < n and buf[k] == 40 else -1
            end = -1
            got = 0
            a = b = k
            if k >= 0:
                b = _until_close(buf, a, n)
                if b >= 0:
                    end, got = _vector_tail(buf, b, n, vpins, nv, refs, nr)
            if end < 0:
                return _out(GIVE_UP if last else MORE, pos, counters, nn, nv, no, nr, ns)
            vspan[nv, 0] = base + a
            vspan[nv, 1] = base + b
            nr += got
            vrefs[nv] = nr
            kinds[nn] = 0
            nv += 1
        else:
            # JUNCTION / END: "TrJunctionNode" | "TrEndNode", _S "(" _TEXT ")" _S _UID, the pins
            kind = 1
            k = _lit(buf, j, n, _JUNCTION)
            if k < 0:
                kind = 2
                k = _lit(buf, j, n, _END)
            end = -1
            a = b = -1
            ns1 = ns
            if k >= 0:
                k = _skip(buf, k, n)
                if k < n and buf[k] == 40:
                    a = k + 1
                    b = _until_close(buf, a, n)
            if b >= 0:
                k, ns1 = _uid(buf, _skip(buf, b + 1, n), n, oints, oflts, no, slow, ns, base)
                if k >= 0:
                    end = _pins(buf, k, n, 2 if kind == 1 else 0, oints, no, 6)
            if end < 0:
                return _out(GIVE_UP if last else MORE, pos, counters, nn, nv, no, nr, ns)
            ospan[no, 0] = base + a
            ospan[no, 1] = base + b
            ns = ns1
            kinds[nn] = kind
            no += 1
        nn += 1
        pos = end


@_jit
def _vector_tail(buf, b, n, vpins, row, refs, nr):
    """VECTOR_TAIL from the sections' ")" at ``b``: ``")" _S _REFS? ")" _S "TrPins" ...``:
    ``(the node's end or -1, references read into refs[nr:])``."""
    i = _skip(buf, b + 1, n)
    got = 0
    if i < n and buf[i] != 41:
        # _REFS: "TrItemRefs" _S "(" _S _U ((?:_W "TrItemRef" _S "(" _S [0-9]{1,9} _S ")")*) _S ")" _S
        i = _lit(buf, i, n, _REFS)
        if i >= 0:
            i = _open(buf, i, n)
        count = 0
        if i >= 0:
            count, i = _uint(buf, i, n)
        if i < 0:
            return -1, 0
        while True:  # (a repetition that does not complete is given back, as the regex does)
            j = _ws1(buf, i, n)
            if j >= 0:
                j = _lit(buf, j, n, _REF)
            if j >= 0:
                j = _open(buf, j, n)
            v = 0
            if j >= 0:
                v, j = _uint(buf, j, n)
            if j >= 0:
                j = _skip(buf, j, n)
            if j < 0 or j >= n or buf[j] != 41:
                break
            if nr + got >= refs.size:
                return -1, 0
            refs[nr + got] = v
            got += 1
            i = j + 1
        if got != count:  # (the bulk reader refuses it: the reference decides)
            return -1, 0
        i = _skip(buf, i, n)
        if i >= n or buf[i] != 41:
            return -1, 0
        i = _skip(buf, i + 1, n)
    if i >= n or buf[i] != 41:
        return -1, 0
    i = _pins(buf, _skip(buf, i + 1, n), n, 1, vpins, row, 0)
    return i, got
