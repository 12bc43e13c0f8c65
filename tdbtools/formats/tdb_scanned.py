"""The bulk reader of a TrackNodes table that the compiled scanner walked
(formats/tdb_scan.py): the same nodes and sections as read_bulk_nodes' walk with the
regular expressions, from the scan's arrays, with whole-array checks where that walk
checks node by node. Returns None wherever that walk does (the tree path then reads the
table and reports), so the model is the same either way (tests/test_tdb_scan.py).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import fields
from itertools import repeat
from typing import Any

import numpy as np

from . import tdb
from ._read import to_uint
from .tdb import EndNode, JunctionNode, TrPin, UiD, VectorNode, VectorSections, _BulkColumns, _patterns
from .tdb_scan import NodeScan

__all__ = ["read_scanned_nodes"]


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
    step = 4 * tdb._BULK_SLICE
    for s in range(0, len(other_ids), step):
        if not _others(text, scan, s, other_ids[s : s + step], nodes):
            return None
    scan.release_others()
    vector_ids = (np.flatnonzero(kinds == 0) + 1).tolist()
    columns = _BulkColumns(stop - scan.start)
    counts: list[int] = []
    rows = 0
    for s in range(0, len(vector_ids), tdb._BULK_SLICE):
        e = s + tdb._BULK_SLICE
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
            values, offsets, nums, status = tdb.compiled_number_spans(buf, starts - lo, ends - lo)
    if status is not None and status.any():
        # numpy's reading of the spans handed back, put where the kernel's would be (a
        # span holds at most its room of numbers: one per two characters)
        room = (ends - starts + 1) // 2
        for k in np.flatnonzero(status).tolist():
            got = tdb._fromstring(text[int(starts[k]) : int(ends[k])])  # (as tdb's: the tests watch it)
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
            arr = tdb._fromstring(text[a:b])  # (as tdb's: the tests watch it)
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
