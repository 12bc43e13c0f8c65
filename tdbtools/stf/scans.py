"""The STF lexer's pre-scans of a large ASCII text (stf.parser._ascii_scans) run by the
compiled kernel of stf/_scan_kernel.py: the same answers, one pass over each slice's
bytes instead of three ``bytes.translate`` and a search (docs/formats.md §6, "The
compiled pre-scans").

Used only for a text of SCANS_COMPILED_MIN_CHARS or more (the size from which the .tdb
reader's kernels load numba as well: formats/tdb_bulk_nodes.py), when numba is usable and
not switched off (``TDBTOOLS_PURE_PYTHON``, tdbtools/_compiled.py); smaller texts keep the
reference and never import numba.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._compiled import numba_usable, pure_python_requested

__all__ = ["SCANS_COMPILED_MIN_CHARS", "ascii_scans_compiled", "scans_compiled"]

#: From this many characters on, the pre-scans are compiled (the .tdb reader's
#: NUMBERS_COMPILED_MIN_CHARS, which loads numba for the same file anyway).
SCANS_COMPILED_MIN_CHARS = 64 << 20
#: Keyword positions one slice may give back (more: that slice takes the reference's
#: search; a keyword is rare in a table's text).
_FOUND_CAP = 4096


def scans_compiled(chars: int) -> bool:
    """Whether the pre-scans of ``chars`` characters run compiled (see the module's text)."""
    return chars >= SCANS_COMPILED_MIN_CHARS and not pure_python_requested() and numba_usable()


def ascii_scans_compiled(
    text: str,
    start: int,
    keywords: tuple[str, ...],
    long_word: int,
    step: int,
    reference_find: Callable[[bytes, int, list[list[int]]], None],
) -> tuple[bool, list[list[int]], bool]:
    """stf.parser._ascii_scans of ``text[start:]`` in the same slices (``step``
    characters, overlapping by ``long_word``), each slice read by the kernel;
    ``reference_find(part, lo, out)``: the reference's keyword search of one slice (for a
    slice with more hits than the kernel keeps)."""
    from ._scan_kernel import scan_slice

    nw = len(keywords)
    width = max(len(w) for w in keywords)
    words = np.zeros((nw, width), dtype=np.uint8)
    for k, w in enumerate(keywords):
        words[k, : len(w)] = np.frombuffer(w.encode("ascii"), dtype=np.uint8)
    lengths = np.array([len(w) for w in keywords], dtype=np.int64)
    found = np.empty((nw, _FOUND_CAP), dtype=np.int64)
    counts = np.empty(nw, dtype=np.int64)
    control = long_run = False
    out: list[list[int]] = [[] for _ in keywords]
    for at in range(start, max(len(text), start + 1), step):
        lo = max(at - long_word, start)
        part = text[lo : at + step].encode("ascii")
        c, r = scan_slice(np.frombuffer(part, dtype=np.uint8), long_word, words, lengths, found, counts)
        control = control or bool(c)
        long_run = long_run or bool(r)
        if (counts < 0).any():
            reference_find(part, lo, out)
            continue
        for k, (w, hits) in enumerate(zip(keywords, out)):
            for i in found[k, : counts[k]].tolist():
                if lo + i >= (hits[-1] + len(w) if hits else 0):
                    hits.append(lo + i)
    return control, out, long_run
