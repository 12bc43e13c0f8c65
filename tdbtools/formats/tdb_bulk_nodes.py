"""The bulk reader of a ``.tdb``/``.rdb``'s TrackNodes table (docs/formats.md §6.6): the nodes
matched with the terminals of ``grammars/tdb_nodes.lark`` and their section numbers read
straight into numpy columns, or taken from the compiled scanner's walk of a large table
(:mod:`.tdb_scan`); None wherever the tree path of :mod:`.tdb` must read the table."""

from __future__ import annotations

import functools
import math
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import fields
from itertools import repeat
from typing import Any

import numpy as np

from .._compiled import numba_usable, pure_python_requested
from ..stf.parser import TABLE_RUN_ENDS
from ..stf.tree import Block
from ._pages import small_pages
from ._read import to_uint
from .tdb_records import (
    _EXACT_INT,
    MAX_SECTION_ANGLE,
    MAX_SECTION_OFFSET,
    MAX_TILE,
    SECTION_COLUMNS,
    EndNode,
    JunctionNode,
    TrPin,
    UiD,
    VectorNode,
    VectorSections,
)
from .tdb_scan import NodeScan, scan_nodes

# -- the bulk reader of TrackNodes -------------------------------------------------------
#
# The TrackNodes table is nearly the whole file. When the STF lexer gave its content as
# one run of plain text (stf_bulk.lark; Block.raw), the nodes are matched one after the
# other with the regular expressions of the terminals of grammars/tdb_nodes.lark, and
# the section numbers go straight into numpy: no tree of the table is ever made. Only
# content that the tree path reads without a single finding is accepted; anything else
# (another shape, a count that disagrees, a value out of range, a number numpy does not
# read, a position out of bounds) returns None and the tree path reads the table and
# reports what it finds, exactly as before. The result is the same model (tests check).


def _terminal_regexps(grammar: str) -> dict[str, str]:
    """The regular expressions of a grammar's terminals (the bulk readers match the
    table's text with exactly what the grammar accepts)."""
    from lark import Lark

    from ..stf.resources import grammar_text

    lark = Lark(grammar_text(grammar), parser="lalr", lexer="basic")
    return {t.name: t.pattern.to_regexp() for t in lark.terminals}


class _BulkPatterns:
    def __init__(self) -> None:
        terms = _terminal_regexps("tdb_nodes.lark")
        self.count = re.compile(r"[\x00-\x20]*(" + terms["COUNT"] + ")")
        ws = r"[\x00-\x20]+"
        self.vector_head = re.compile(ws + terms["VECTOR_HEAD"])
        self.vector_tail = re.compile(terms["VECTOR_TAIL"])
        self.junction = re.compile(ws + terms["JUNCTION"])
        self.end = re.compile(ws + terms["END"])
        self.tail = re.compile(r"[\x00-\x20]*\Z")
        self.ref = re.compile(r"\([\x00-\x20]*([0-9]+)")


@functools.cache
def _patterns() -> _BulkPatterns:
    return _BulkPatterns()


class _BulkUids:
    """The UiDs of a table's junction and end nodes (as _TdbReader._uid reads them),
    gathered node by node as numbers and made a slice at a time (``make``): one
    ``float``/``int`` pass per node in C, one finiteness check and one ``map`` over the
    UiD class for them all, instead of ~10 µs of Python per node (105,000 of them in a
    92× DK24 load). ``add`` returns False, and the bulk reader None, where a value is no
    number; ``make`` None where one is not finite (the tree path then reads the table)."""

    def __init__(self) -> None:
        self.ints: list[int] = []
        self.floats: list[float] = []

    def add(self, g: tuple, first: int) -> bool:
        """Groups ``first .. first + 11`` of a node's match."""
        try:
            self.floats.extend(map(float, g[first + 6 : first + 12]))
        except ValueError:
            return False
        # The first six are _I of tdb_nodes.lark, at most nine digits: always in the range
        # _TdbReader._uid accepts (-2**31 .. 2**32 - 1).
        self.ints.extend(map(int, g[first : first + 6]))
        return True

    def make(self) -> list[UiD] | None:
        """The UiDs added since the last call, in order, or None if a value is not
        finite (called once per slice of the bulk reader: the numbers wait a slice at
        most, a few MB, not the whole table's)."""
        ints, floats = self.ints, self.floats
        self.ints, self.floats = [], []
        if not all(map(math.isfinite, floats)):
            return None
        return list(map(UiD, *(ints[k::6] for k in range(6)), *(floats[k::6] for k in range(6))))


#: Kinds of :func:`scan_track_nodes`' nodes (BAD_NODE: a vector node of another shape).
VECTOR_NODE, JUNCTION_NODE, END_NODE, BAD_NODE = 0, 1, 2, -1


def scan_track_nodes(
    text: str, pos: int, stop: int | None = None
) -> Iterator[tuple[int, re.Match, re.Match | None, int, int]]:
    """The nodes of a raw TrackNodes table from ``pos`` (just after its count) to
    ``stop``, matched with the terminals of grammars/tdb_nodes.lark: ``(kind, match,
    tail, a, b)``, the node ending at ``(tail or match).end()``. A vector node's
    sections are ``text[a:b]`` (no parenthesis in them) and ``tail`` its
    TrItemRefs/TrPins match. Ends at the first text that is no node; a vector node whose
    sections or tail do not fit yields ``BAD_NODE`` last. The one walk of the bulk
    reader and of the lexer's table-run hook."""
    if stop is None:
        stop = len(text)
    pat = _patterns()
    head, tail, junction, end = (
        pat.vector_head.match,
        pat.vector_tail.match,
        pat.junction.match,
        pat.end.match,
    )
    find = text.find
    while pos < stop:
        mv = head(text, pos, stop)
        if mv is not None:
            a = mv.end()
            b = find(")", a, stop)
            mt = None
            if b >= 0 and find("(", a, b) < 0:  # (the lexer's DATA holds no quotes)
                mt = tail(text, b, stop)
            if mt is None:
                yield BAD_NODE, mv, None, a, b
                return
            yield VECTOR_NODE, mv, mt, a, b
            pos = mt.end()
            continue
        mj = junction(text, pos, stop)
        if mj is not None:
            yield JUNCTION_NODE, mj, None, pos, pos
            pos = mj.end()
            continue
        me = end(text, pos, stop)
        if me is None:
            return
        yield END_NODE, me, None, pos, pos
        pos = me.end()


def read_bulk_nodes(table: Block) -> tuple[list, VectorSections] | None:
    """The nodes and sections of a TrackNodes block held as raw text, or None if the
    block is not raw or the tree path is needed (see above)."""
    span = table.raw_span()
    if span is None or (table.source is not None and table.source.exact_split):
        return None
    # Usually the whole source text, scanned from ``pos`` to ``n_text`` (the table's
    # end) in place: every match and find below is bounded by ``n_text``.
    text, pos, n_text = span
    pat = _patterns()
    m = pat.count.match(text, pos, n_text)
    if m is None:
        return None
    count = int(m.group(1))
    pos = m.end()
    compiled = numbers_compiled(n_text - pos)
    scan = table.take_hint()
    if isinstance(scan, NodeScan) and scan.start == pos and scan.end <= n_text:
        return read_scanned_nodes(text, scan, count, n_text, compiled=compiled)
    nodes: list = [None]
    arrays: list[np.ndarray] = []
    columns = _BulkColumns(n_text - pos)
    counts: list[int] = []
    owners: list[int] = []
    rows = 0
    # Vector nodes wait in ``pending`` (index, sections' span, pins, refs) until a slice
    # is full: their numbers are then read in one go (parse_number_spans).
    pending: list[tuple[int, int, int, tuple[TrPin, ...], tuple[int, ...]]] = []
    # Junction and end nodes wait in ``ends`` (index, pins, shape or -1 for an end node,
    # values) for their UiDs, made in one go by flush (_BulkUids).
    ends: list[tuple[int, tuple[TrPin, ...], int, tuple[str, ...]]] = []
    uids = _BulkUids()

    def flush() -> bool:
        nonlocal rows
        got = parse_number_spans(text, [(a, b) for _i, a, b, _p, _r in pending], compiled=compiled)
        for (index, _a, _b, pins, refs), arr in zip(pending, got):
            if arr is None:
                return False
            n = int(arr[0]) if len(arr) and math.isfinite(arr[0]) else -1
            if n < 0 or len(arr) != 1 + 16 * n:
                return False
            nodes[index] = VectorNode(index, 1, 1, pins, rows, n, refs)
            arrays.append(arr[1:])
            counts.append(n)
            owners.append(index)
            rows += n
        pending.clear()
        ok = columns.add(arrays)
        arrays.clear()
        made = uids.make()
        if made is None:
            return False
        for (index, pins, shape, values), uid in zip(ends, made):
            if shape < 0:
                nodes[index] = EndNode(index, 1, 0, pins, uid, values)
            else:
                nodes[index] = JunctionNode(index, 1, 2, pins, uid, shape, values)
        ends.clear()
        return ok

    for kind, mn, mt, a, b in scan_track_nodes(text, pos, n_text):
        index = len(nodes)
        if kind == VECTOR_NODE:
            assert mt is not None
            if int(mn.group(1)) != index:
                return None
            g = mt.groups()
            refs: tuple[int, ...] = ()
            if g[0] is not None:
                refs = tuple(map(int, pat.ref.findall(g[1])))
                if len(refs) != int(g[0]):
                    return None
            pins: tuple[TrPin, ...] = (TrPin(int(g[2]), int(g[3])), TrPin(int(g[4]), int(g[5])))
            nodes.append(None)  # (made by flush, once its numbers are read)
            pending.append((index, a, b, pins, refs))
            pos = mt.end()
            if len(pending) >= _BULK_SLICE and not flush():
                return None
        elif kind == JUNCTION_NODE:
            g = mn.groups()
            values = tuple(g[1].split())
            if int(g[0]) != index or not uids.add(g, 2) or len(values) < 2:
                return None
            try:
                shape = to_uint(values[1])
            except ValueError:
                return None
            pins = (
                TrPin(int(g[14]), int(g[15])),
                TrPin(int(g[16]), int(g[17])),
                TrPin(int(g[18]), int(g[19])),
            )
            nodes.append(None)  # (made by flush, with its UiD)
            ends.append((index, pins, shape, values))
            pos = mn.end()
        elif kind == END_NODE:
            g = mn.groups()
            if int(g[0]) != index or not uids.add(g, 2):
                return None
            nodes.append(None)  # (made by flush, with its UiD)
            ends.append((index, (TrPin(int(g[14]), int(g[15])),), -1, tuple(g[1].split())))
            pos = mn.end()
        else:
            return None
    if pat.tail.match(text, pos, n_text) is None:
        return None
    if len(nodes) - 1 != count:
        return None
    if not flush():
        return None
    return nodes, columns.finish(counts, owners)


#: From this many characters of a TrackNodes table on, its section numbers are read by
#: the compiled reader (when numba is usable, formats/_numbers_kernel.py): importing
#: numba and loading the kernel costs ~0.6 s of CPU and ~110 MB of memory, which the
#: reader (~10 ns a number against numpy's ~100) earns back from ~50 MB of table on;
#: smaller tables keep numpy's reader and never import numba (measured:
#: benchmarks/README.md, "Issue 32: the compiled .tdb number reader").
NUMBERS_COMPILED_MIN_CHARS = 64 << 20


def numbers_compiled(chars: int) -> bool:
    """Whether a TrackNodes table of ``chars`` characters has its numbers read compiled:
    large enough (NUMBERS_COMPILED_MIN_CHARS), numba usable and not switched off
    (``TDBTOOLS_PURE_PYTHON``, tdbtools/_compiled.py)."""
    return chars >= NUMBERS_COMPILED_MIN_CHARS and not pure_python_requested() and numba_usable()


def parse_number_spans(
    text: str, spans: list[tuple[int, int]], *, compiled: bool = False
) -> list[np.ndarray | None]:
    """``np.fromstring(text[a:b], dtype=float64, sep=" ")`` of each span ``(a, b)`` of
    ``text`` (in rising order), None where numpy refuses it. ``compiled``: the spans whose
    every number one IEEE operation gives are read by the compiled reader in one call
    (formats/_numbers_kernel.py: the same values bit for bit), the others by numpy."""
    buf = None
    if compiled and spans:
        lo = spans[0][0]
        try:
            buf = np.frombuffer(text[lo : spans[-1][1]].encode("latin-1"), dtype=np.uint8)
        except UnicodeEncodeError:  # (a character numpy refuses anyway: it decides)
            buf = None
    if buf is None:
        return [_fromstring(text[a:b]) for a, b in spans]
    starts = np.array([a for a, _b in spans], dtype=np.int64)
    ends = np.array([b for _a, b in spans], dtype=np.int64)
    values, offsets, counts, status = compiled_number_spans(buf, starts - lo, ends - lo)
    out: list[np.ndarray | None] = []
    for k, (a, b) in enumerate(spans):
        if status[k]:
            out.append(_fromstring(text[a:b]))
        else:
            o = int(offsets[k])
            out.append(values[o : o + int(counts[k])])
    return out


def compiled_number_spans(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, scratch: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The compiled reader (formats/_numbers_kernel.py) over the spans ``buf[starts[k]:
    ends[k]]`` of bytes: ``(values, offsets, counts, status)``, span k's numbers being
    ``values[offsets[k]:][:counts[k]]`` where ``status[k]`` is 0 (else numpy decides).
    ``values`` is ``scratch`` where that is large enough (a caller done with the last
    slice's values before the next: no fresh memory touched per slice)."""
    from ._numbers_kernel import parse_spans

    room = (ends - starts + 1) // 2  # (at most one number per two characters)
    offsets = np.zeros(len(starts), dtype=np.int64)
    np.cumsum(room[:-1], out=offsets[1:])
    need = int(room.sum())
    if scratch is not None and len(scratch) >= need:
        values = scratch
    else:
        with small_pages():
            values = np.empty(need)
    counts = np.empty(len(starts), dtype=np.int64)
    status = np.empty(len(starts), dtype=np.int8)
    parse_spans(buf, starts, ends, values, offsets, counts, status)
    return values, offsets, counts, status


def _fromstring(text: str) -> np.ndarray | None:
    """numpy's reading of one span (the reference), None where it refuses it (a partial
    read is a DeprecationWarning, an error where warnings are errors)."""
    try:
        return np.fromstring(text, dtype=np.float64, sep=" ")
    except (ValueError, DeprecationWarning):
        return None


class _BulkColumns:
    """The section columns of the bulk reader, filled slice by slice (a few thousand
    nodes at a time). ``add`` returns False where _TdbReader._sections would report
    anything (a non-integer id, a flag that is not "00", a row out of range).

    Each column is made once at its largest possible size (``rows``: a table of
    ``chars`` characters holds at most ``chars // 32`` rows, 16 numbers of at least one
    character and a separator) and cut to the rows read at the end, in place. The pages
    never written are never given memory, and cutting a large array gives its tail back
    without a copy. Slices of a column gathered and joined at the end (as before) held
    the rows twice at the join, and left their ~200 MB of freed slices for a 200 MB file
    in the C heap, where the later work of a process did not always reuse them (the
    peak through load + audit + locate + GeoJSON: benchmarks/README.md, issue 32)."""

    def __init__(self, chars: int) -> None:
        self.capacity = max(chars // 32, 0)
        self.rows = 0
        with small_pages():  # (written once, front to back: formats/_pages.py)
            self.cols: list[np.ndarray | None] = [
                None if dtype is object else np.empty(self.capacity, dtype=dtype)
                for _n, dtype in SECTION_COLUMNS
            ]
        #: The compiled number reader's values of the last slice (compiled_number_spans).
        self.scratch: np.ndarray | None = None

    def add(self, arrays: list[np.ndarray]) -> bool:
        if not arrays:
            return True
        flat = np.concatenate(arrays) if len(arrays) > 1 else arrays[0]
        if not np.isfinite(flat).all():
            return False
        table = flat.reshape(-1, 16)
        r0, r1 = self.rows, self.rows + len(table)
        if r1 > self.capacity:  # (cannot happen: see the class's text)
            return False
        for j, (name, dtype) in enumerate(SECTION_COLUMNS):
            col = table[:, j]
            limit = _BULK_LIMITS.get(name)
            if limit is not None and not (np.abs(col) <= limit).all():
                return False
            out = self.cols[j]
            if out is None:  # (dtype object: made at the end, all "00")
                if (col != 0).any():
                    return False
            elif dtype is np.int64:
                if not (np.abs(col) <= _EXACT_INT).all():
                    return False
                ints = out[r0:r1]
                ints[:] = col  # (float to int64 as astype casts)
                if not np.array_equal(ints, col):
                    return False
            else:
                out[r0:r1] = col
        self.rows = r1
        return True

    def add_compiled(self, values: np.ndarray, offsets: np.ndarray, counts: np.ndarray) -> bool:
        """As ``add`` for spans the compiled reader read whole (compiled_number_spans):
        span k's ``counts[k]`` rows after its count at ``values[offsets[k]]``, filled and
        checked in one pass (formats/_numbers_kernel.fill_rows, ``add`` its reference)."""
        from ._numbers_kernel import fill_rows

        fill: Any = fill_rows  # (numba's Dispatcher is typed with fewer arguments)
        r0 = self.rows
        rows = int(counts.sum())
        if r0 + rows > self.capacity:  # (cannot happen: see the class's text)
            return False
        ints = tuple(c for c in self.cols if c is not None and c.dtype == np.int64)
        flts = tuple(c for c in self.cols if c is not None and c.dtype == np.float64)
        assert len(ints) == 9 and len(flts) == 6
        got = fill(values, offsets, counts, r0, _FILL_LIMITS, *ints, *flts)
        if got != rows:
            return False
        self.rows += rows
        return True

    def finish(self, counts: list[int], owners: list[int]) -> VectorSections:
        if not counts:
            return VectorSections.empty()  # as _TdbReader._sections
        rows = sum(counts)
        assert rows == self.rows
        cols: dict[str, np.ndarray] = {}
        for j, (name, _dtype) in enumerate(SECTION_COLUMNS):
            col = self.cols[j]
            if col is None:
                col = np.empty(rows, dtype=object)
                col[:] = "00"
            else:
                col.resize(rows, refcheck=False)  # (in place: realloc gives the tail back)
            self.cols[j] = None
            col.flags.writeable = False
            cols[name] = col
        self.scratch = None
        node_ids = np.repeat(np.array(owners, dtype=np.int64), counts)
        node_ids.flags.writeable = False
        return VectorSections(**cols, node=node_ids)


#: The range checks of _TdbReader._check_geometry, per column.
_BULK_LIMITS = {
    "tile_x": MAX_TILE,
    "tile_z": MAX_TILE,
    "x": MAX_SECTION_OFFSET,
    "y": MAX_SECTION_OFFSET,
    "z": MAX_SECTION_OFFSET,
    "ax": MAX_SECTION_ANGLE,
    "ay": MAX_SECTION_ANGLE,
    "az": MAX_SECTION_ANGLE,
}
#: fill_rows' limits: an integer column's, a tile's, an offset's, an angle's magnitude.
_FILL_LIMITS = np.array([_EXACT_INT, MAX_TILE, MAX_SECTION_OFFSET, MAX_SECTION_ANGLE])
assert _BULK_LIMITS["x"] == _BULK_LIMITS["y"] == _BULK_LIMITS["z"] == MAX_SECTION_OFFSET
assert _BULK_LIMITS["ax"] == _BULK_LIMITS["ay"] == _BULK_LIMITS["az"] == MAX_SECTION_ANGLE
#: Vector nodes per slice of _BulkColumns.
_BULK_SLICE = 4096


def _table_run_end(text: str, pos: int) -> int | tuple[int, NodeScan] | None:
    """Where the DATA run of stf_bulk.lark that starts at ``pos`` (a TrackNodes table's
    content) ends, if the content is a count and nodes of the shapes of
    grammars/tdb_nodes.lark (each a balanced block at most four deep, holding no quote),
    then white space and the table's ")": the run is then the count and the nodes (the
    regex gives back the white space). Else None, and the lexer's regex decides. Any
    node the bulk reader would not accept as is makes it None: the lexer's own scan of
    such a table (and any error it reports) is left as it was.

    A large table (NUMBERS_COMPILED_MIN_CHARS) is walked by the compiled scanner
    (formats/tdb_scan.py) where it takes every node: the run's end then comes with the
    walk, which the parser gives to the table's block for read_bulk_nodes."""
    m = _patterns().count.match(text, pos)
    if m is None:
        return None
    end = m.end()
    if numbers_compiled(len(text) - end):
        scan = scan_nodes(text, end, int(m.group(1)))
        if scan is not None:
            if _RUN_CLOSE.match(text, scan.end) is None or text.find('"', pos, scan.end) >= 0:
                return None
            return scan.end, scan
    for kind, mn, mt, _a, _b in scan_track_nodes(text, end):
        if kind == BAD_NODE:
            return None
        end = (mt or mn).end()
    if _RUN_CLOSE.match(text, end) is None or text.find('"', pos, end) >= 0:
        return None
    return end


_RUN_CLOSE = re.compile(r"[\x00-\x20]*\)")
TABLE_RUN_ENDS["tdb"] = _table_run_end


# -- the bulk reader of a TrackNodes table the compiled scanner walked -----------------
#
# The same nodes and sections as read_bulk_nodes' walk with the regular expressions, from
# the scan's arrays (formats/tdb_scan.py), with whole-array checks where that walk checks
# node by node. Returns None wherever that walk does (the tree path then reads the table
# and reports), so the model is the same either way (tests/test_tdb_scan.py).


def read_scanned_nodes(
    text: str, scan: NodeScan, count: int, stop: int, *, compiled: bool
) -> tuple[list, VectorSections] | None:
    """The nodes and sections of the table ``text[scan.start:stop]`` as read_bulk_nodes
    gives them (``count``: the table's node count; ``compiled``: its numbers read by the
    compiled number reader). The scan's arrays are turned into objects a slice at a
    time: their Python lists whole would cost ~200 MB for a 200 MB table."""
    kinds = scan.kinds
    if len(kinds) != count or _patterns().tail.match(text, scan.end, stop) is None:
        return None
    nodes: list = [None] * (count + 1)
    if len(scan.slow) and not _slow_floats(text, scan):
        return None
    other_ids = np.flatnonzero(kinds != 0) + 1
    step = 4 * _BULK_SLICE
    for s in range(0, len(other_ids), step):
        if not _others(text, scan, s, other_ids[s : s + step], nodes):
            return None
    scan.release_others()
    vector_ids = (np.flatnonzero(kinds == 0) + 1).tolist()
    columns = _BulkColumns(stop - scan.start)
    counts: list[int] = []
    rows = 0
    for s in range(0, len(vector_ids), _BULK_SLICE):
        e = s + _BULK_SLICE
        got = _sections(text, scan.vspan[s:e], compiled, columns)
        if got is None:
            return None
        ends = scan.vrefs[s:e].tolist()
        base = int(scan.vrefs[s - 1]) if s else 0
        refs = scan.refs[base : ends[-1]].tolist()
        starts = [base, *ends[:-1]]
        p = scan.vpins[s:e]
        ins = _made(TrPin, len(got), link=p[:, 0].tolist(), direction=p[:, 1].tolist())
        outs = _made(TrPin, len(got), link=p[:, 2].tolist(), direction=p[:, 3].tolist())
        firsts = np.cumsum([rows, *got[:-1]]).tolist()
        made = _made(
            VectorNode,
            len(got),
            index=vector_ids[s:e],
            in_pins=1,
            out_pins=1,
            pins=list(zip(ins, outs)),
            first_section=firsts,
            section_count=got,
            item_refs=[tuple(refs[a - base : b - base]) for a, b in zip(starts, ends)],
        )
        for index, node in zip(vector_ids[s:e], made):
            nodes[index] = node
        rows = firsts[-1] + got[-1]
        counts.extend(got)
    if not counts:
        return nodes, VectorSections.empty()
    return nodes, columns.finish(counts, vector_ids)


def _others(text: str, scan: NodeScan, first: int, ids: np.ndarray, nodes: list) -> bool:
    """The junction and end nodes ``ids`` (the scan's ``first``.. others) into
    ``nodes``; False where the walk with the regular expressions gives None (a
    junction's values without a shape number)."""
    last = first + len(ids)
    n = len(ids)
    ints = scan.oints[first:last]
    uid_columns = [*ints[:, :6].T.tolist(), *scan.oflts[first:last].T.tolist()]
    uids = _made(UiD, n, **dict(zip(_UID_FIELDS, uid_columns)))
    pin0 = _made(TrPin, n, link=ints[:, 6].tolist(), direction=ints[:, 7].tolist())
    values = [tuple(text[a:b].split()) for a, b in scan.ospan[first:last].tolist()]
    junction = scan.kinds[ids - 1] == 1
    at = np.flatnonzero(junction).tolist()
    shapes = []
    for k in at:
        if len(values[k]) < 2:
            return False
        try:
            shapes.append(to_uint(values[k][1]))
        except ValueError:
            return False
    j = ints[junction]
    pin1 = _made(TrPin, len(at), link=j[:, 8].tolist(), direction=j[:, 9].tolist())
    pin2 = _made(TrPin, len(at), link=j[:, 10].tolist(), direction=j[:, 11].tolist())
    made = _made(
        JunctionNode,
        len(at),
        index=ids[junction].tolist(),
        in_pins=1,
        out_pins=2,
        pins=[(pin0[k], a, b) for k, a, b in zip(at, pin1, pin2)],
        uid=[uids[k] for k in at],
        shape_index=shapes,
        values=[values[k] for k in at],
    )
    at = np.flatnonzero(~junction).tolist()
    made += _made(
        EndNode,
        len(at),
        index=ids[~junction].tolist(),
        in_pins=1,
        out_pins=0,
        pins=[(pin0[k],) for k in at],
        uid=[uids[k] for k in at],
        values=[values[k] for k in at],
    )
    for node in made:
        nodes[node.index] = node
    return True


_UID_FIELDS = tuple(f.name for f in fields(UiD))


def _made(cls: type, n: int, **columns: Any) -> list:
    """``n`` objects of the frozen slots dataclass ``cls``, field by field: each field's
    column (a list, or one value for all) set through its slot, which is what the
    dataclass's ``__init__`` does one object at a time (object.__setattr__ per field,
    ~1.5x the time for 100,000 UiDs). Every field must be given; ``cls`` must have no
    ``__post_init__`` (nothing here would run it)."""
    names = [f.name for f in fields(cls)]
    if sorted(names) != sorted(columns) or hasattr(cls, "__post_init__"):
        raise TypeError(f"_made: {cls.__name__} needs exactly its fields {names}")
    objs: list[Any] = list(map(object.__new__, repeat(cls, n)))
    for name in names:
        col = columns[name]
        setter = getattr(cls, name).__set__
        deque(map(setter, objs, col if isinstance(col, list) else repeat(col, n)), maxlen=0)
    return objs


def _slow_floats(text: str, scan: NodeScan) -> bool:
    """The UiD floats the kernel left to Python, read as the reference reads them
    (float() of the text); False where it refuses one or one is not finite."""
    for row, k, a, b in scan.slow.tolist():
        try:
            v = float(text[a:b])
        except ValueError:
            return False
        if not math.isfinite(v):
            return False
        scan.oflts[row, k] = v
    return True


def _sections(text: str, spans: np.ndarray, compiled: bool, columns: _BulkColumns) -> list[int] | None:
    """One slice of vector nodes: each one's section count, its rows added to
    ``columns``; None where read_bulk_nodes' flush fails (a count that disagrees with
    the numbers, a number numpy refuses, a value _BulkColumns refuses)."""
    if not len(spans):
        return []
    starts, ends = spans[:, 0], spans[:, 1]
    status = None
    if compiled:
        lo = int(starts[0])
        try:
            buf = np.frombuffer(text[lo : int(ends[-1])].encode("latin-1"), dtype=np.uint8)
        except UnicodeEncodeError:
            buf = None
        if buf is not None:
            values, offsets, nums, status = compiled_number_spans(
                buf, starts - lo, ends - lo, columns.scratch
            )
            columns.scratch = values
    if status is not None and status.any():
        # numpy's reading of the spans handed back, put where the kernel's would be (a
        # span holds at most its room of numbers: one per two characters)
        room = (ends - starts + 1) // 2
        for k in np.flatnonzero(status).tolist():
            got = _fromstring(text[int(starts[k]) : int(ends[k])])
            if got is None:
                return None
            if len(got) > room[k]:  # (cannot happen)
                status = None
                break
            values[offsets[k] : offsets[k] + len(got)] = got
            nums[k] = len(got)
    if status is None:
        # numpy's reader for every span (not compiled) or for those handed back
        arrays: list[np.ndarray] = []
        out: list[int] = []
        for a, b in spans.tolist():
            arr = _fromstring(text[a:b])
            if arr is None:
                return None
            n = int(arr[0]) if len(arr) and np.isfinite(arr[0]) else -1
            if n < 0 or len(arr) != 1 + 16 * n:
                return None
            arrays.append(arr[1:])
            out.append(n)
        return out if columns.add(arrays) else None
    # Every span read compiled: the counts checked, the rows filled in one pass.
    first = values[offsets]
    if not np.isfinite(first).all():
        return None
    n = np.trunc(first).astype(np.int64)  # int() of each, as flush
    if (n < 0).any() or (n >= nums).any() or (nums != 1 + 16 * n).any():
        return None
    if not columns.add_compiled(values, offsets, n):
        return None
    return n.tolist()
