"""What one pass over a file's text tells the STF parser before Lark sees it: which grammar
it needs (a bare comment marker, a comment/skip/include word, a very long word), where its
include blocks are, whether ``str.split`` splits it exactly (no control characters, no
Unicode spaces), and the text to parse with its SIMIS line 1 blanked or skipped.

These scans run over every file a load reads (a 200 MB .tdb included), so they work on
slices of ASCII bytes in C (``bytes.translate``/``find``) and never copy a whole file.
"""

from __future__ import annotations

import re

from .source import Source

# STF white space is every character with code 0..32. str.split() (fast, in C) agrees
# except for the control characters below (white space in STF, not for str.split) and
# Unicode spaces (part of words in STF): text holding any of those splits exactly.
_CONTROL = re.compile("[\x01-\x08\x0e-\x1b]")
_NOT_CONTROL = bytes(c for c in range(256) if not (1 <= c <= 8 or 0x0E <= c <= 0x1B))


def _has_control(text: str) -> bool:
    if text.isascii():  # O(1) in CPython; then bytes.translate scans in C
        return bool(text.encode("ascii").translate(None, _NOT_CONTROL))
    return _CONTROL.search(text) is not None


_UNICODE_SPACE = re.compile("[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
#: The UTF-8 of those spaces but the ones starting "\xe2\x80" (_has_e280_space).
_UNICODE_SPACE_UTF8 = (b"\xc2\x85", b"\xc2\xa0", b"\xe1\x9a\x80", b"\xe2\x81\x9f", b"\xe3\x80\x80")


def _prepare(source: Source) -> tuple[str, int, list[list[int]] | None, bool | None]:
    """The text to parse and where its parse starts, past line 1 (the SIMIS signature,
    discarded), setting ``source.exact_split``. For ASCII text that is the source's own
    text from its first line break (no copy: a 200 MB .tdb's blanked copy took 0.12 s
    and 200 MB more at the parse's peak), with the keyword offsets (:func:`_find_lower`)
    and :func:`has_long_word` found in the same pass (:func:`_ascii_scans`); else the
    text with line 1 blanked, from 0, and None for both."""
    text = source.text
    if text.isascii():
        nl = text.find("\n")
        start = len(text) if nl < 0 else nl
        source.exact_split, keywords, long_word = _ascii_scans(text, start)
        return text, start, keywords, long_word
    text = _blank_first_line(text)
    # Other text is scanned as UTF-8 bytes, in C (two regex searches of a 3 MB
    # tsection.dat took 35 ms): multi-byte characters hold no byte below 0x80.
    data = text.encode("utf-8", "surrogatepass")
    source.exact_split = bool(data.translate(None, _NOT_CONTROL)) or (
        # The lead byte first: one memchr, where a 2-3 byte search costs ~2.5 ms per MB.
        any(u[:1] in data and u in data for u in _UNICODE_SPACE_UTF8) or _has_e280_space(data)
    )
    return text, 0, None, None


def _has_e280_space(data: bytes) -> bool:
    """Whether UTF-8 ``data`` holds one of U+2000-U+200A, U+2028, U+2029, U+202F."""
    i = data.find(b"\xe2\x80")
    while i >= 0:
        if data[i + 2 : i + 3] in _E280_SPACES:
            return True
        i = data.find(b"\xe2\x80", i + 2)
    return False


_E280_SPACES = frozenset(bytes([c]) for c in (*range(0x80, 0x8B), 0xA8, 0xA9, 0xAF))


_WORD_START = frozenset(
    " \t\r\n()\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x11"
    "\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
)
_KEYWORDS = ("comment", "skip", "include")


_BLOCK_EDGE = re.compile(r'"(?:[^"\\]|\\.)*"|[()]')


def needs_full_grammar(text: str) -> bool:
    return _scan_markers(text)[0]


def _find_lower(text: str, words: tuple[str, ...]) -> list[list[int]]:
    """Offsets of each of ``words`` (lower case, ASCII) in ``text`` in any case, not
    overlapping, in one pass.

    Lower-cased slice by slice (overlapping by the longest word's length): a whole-file
    copy of a 200 MB file would be one more 200 MB at the peak of a load. Lowered as
    ASCII bytes, any other character one "?" (offsets agree)."""
    out: list[list[int]] = [[] for _ in words]
    n = len(text)
    k = max(len(w) for w in words)
    step = _SCAN_SLICE
    at = 0
    while at < n:
        lo = max(at - k + 1, 0)
        part = text[lo : at + step]
        low = part.encode("ascii", "replace").lower()
        for word, found in zip(words, out):
            w = word.encode("ascii")
            i = low.find(w)
            while i >= 0:
                if lo + i >= (found[-1] + len(word) if found else 0):
                    found.append(lo + i)
                i = low.find(w, i + len(word))
        at += step
    return out


def _scan_markers(
    text: str, keywords: list[list[int]] | None = None, start: int = 0
) -> tuple[bool, list[int]]:
    """(:func:`needs_full_grammar`, the sorted offsets of the include blocks the tree
    builder would follow: not inside a comment block nor another include block).

    The first is True if ``text`` holds a comment marker or a comment/skip/include word that is
    not a block of its own (``_INFO ( ... )``, ``include ( ... )``) nor inside one, so
    that the fast grammar (stf_plain.lark) cannot be used. The tree builder drops
    comment blocks and follows include blocks at any depth, so text whose markers
    are all blocks parses the same with either grammar. False positives only cost
    speed; the scan only runs where a marker character or keyword occurs at all.
    ``keywords`` (offsets at or past ``start``) and the scan start at ``start``."""
    includes: list[int] = []
    candidates: list[int] = []
    for ch in "#_":
        i = text.find(ch, start)
        while i >= 0:
            if i == 0 or text[i - 1] in _WORD_START:  # not inside a word like SNCF_TGV
                candidates.append(i)
            i = text.find(ch, i + 1)
    if keywords is None:
        keywords = _find_lower(text, _KEYWORDS)
    for kw, offsets in zip(_KEYWORDS, keywords):
        for i in offsets:
            end = i + len(kw)
            if (i == 0 or text[i - 1] in _WORD_START) and (end >= len(text) or text[end] in _WORD_END):
                candidates.append(i)
    if not candidates:
        return False, includes
    candidates.sort()
    n = len(text)
    skip_to = 0
    for i in candidates:
        if i < skip_to:
            continue  # inside a comment block already skipped
        j = i
        while j < n and text[j] not in _WORD_END:
            j += 1
        k = j
        while k < n and text[k] <= " ":
            k += 1
        if k >= n or text[k] != "(":
            return True, includes  # a bare marker: it acts on the next item
        # A comment or include block: skip it whole (its content is dropped or is a path).
        if text[i] in "iI":
            includes.append(i)
        depth = 0
        for e in _BLOCK_EDGE.finditer(text, k):
            c = e.group()
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    skip_to = e.end()
                    break
        else:
            return True, includes  # unbalanced: let the full grammar report it
    return False, includes


_WORD_END = frozenset(_WORD_START | {'"'})

#: A plain word this long (UTF-8 bytes) makes the fast grammar's DATA regex backtrack at a
#: cost that grows with its square (a 40 kB word before a deep block took seconds; 127-byte
#: words ~0.6 s per MB), while the full grammar stays linear. Real content has no word over
#: ~100 characters, so a file with one is parsed with the full grammar (same tree).
LONG_WORD = 128
_WORD_BYTES = bytes(0 if c <= 0x20 or c in b'()"' else 0x78 for c in range(256))
#: For _ascii_scans: ASCII letters lowered; every other byte deleted.
_LOWER_LETTERS = bytes(range(256)).lower()
_NOT_LETTERS = bytes(c for c in range(256) if not (0x41 <= c <= 0x5A or 0x61 <= c <= 0x7A))


def has_long_word(text: str) -> bool:
    """True if ``text`` holds a run of LONG_WORD word bytes (C speed: ~2 ms per MB)."""
    run = b"x" * LONG_WORD
    # In slices (overlapping by a run's length), so that a 200 MB file costs two small
    # copies at a time, not two of its size.
    step = _SCAN_SLICE
    for at in range(0, max(len(text), 1), step):
        part = text[max(at - LONG_WORD, 0) : at + step]
        if run in part.encode("utf-8", "surrogatepass").translate(_WORD_BYTES):
            return True
    return False


#: Characters per slice of the whole-text scans (has_long_word, _scan_markers).
_SCAN_SLICE = 1 << 23


def _ascii_scans(text: str, start: int = 0) -> tuple[bool, list[list[int]], bool]:
    """For ASCII ``text``: (:func:`_has_control`, :func:`_find_lower` of the keywords,
    :func:`has_long_word`) in one pass of slices, each slice copied and encoded once
    instead of three times (~0.35 s less for a 200 MB file). The slices overlap by
    LONG_WORD characters, more than a keyword's length: a keyword found twice is kept
    once (they cannot overlap themselves), as in _find_lower. Only ``text[start:]`` is
    scanned."""
    control = long_word = False
    out: list[list[int]] = [[] for _ in _KEYWORDS]
    words = [w.encode("ascii") for w in _KEYWORDS]
    run = b"x" * LONG_WORD
    step = _SCAN_SLICE
    for at in range(start, max(len(text), start + 1), step):
        lo = max(at - LONG_WORD, start)
        part = text[lo : at + step].encode("ascii")
        if not control:
            control = bool(part.translate(None, _NOT_CONTROL))
        if not long_word:
            long_word = run in part.translate(_WORD_BYTES)
        # A keyword is a run of letters: it is in the slice's letters alone, lowered (in
        # one translate; ~7 % of a .tdb's bytes), if it is in the slice. Searching those
        # first spares the lowered copy and three searches of nearly every slice (~0.45 s
        # for a 200 MB .tdb); a hit (maybe made of letters that white space kept apart)
        # takes the exact search below.
        letters = part.translate(_LOWER_LETTERS, _NOT_LETTERS)
        if not any(w in letters for w in words):
            continue
        low = part.lower()
        for w, found in zip(words, out):
            i = low.find(w)
            while i >= 0:
                if lo + i >= (found[-1] + len(w) if found else 0):
                    found.append(lo + i)
                i = low.find(w, i + len(w))
    return control, out, long_word


def _blank_first_line(text: str) -> str:
    # Line 1 is the SIMIS signature and is discarded. It is blanked, not cut, so that
    # every character keeps its offset, line and column.
    nl = text.find("\n")
    # str.replace of a prefix by as many spaces: one copy of the text, where
    # " " * nl + text[nl:] made two (0.2 s and 200 MB more at the peak for a 200 MB file).
    return " " * len(text) if nl < 0 else text.replace(text[:nl], " " * nl, 1)
