"""The bulk reader of a TrackNodes table that the compiled scanner walked
(formats/tdb_scan.py): the same nodes and sections as read_bulk_nodes' walk with the
regular expressions, from the scan's arrays, with whole-array checks where that walk
checks node by node. Returns None wherever that walk does (the tree path then reads the
table and reports), so the model is the same either way (tests/test_tdb_scan.py).
"""

from __future__ import annotations

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
    compiled number reader)."""
    kinds = scan.kinds
    if len(kinds) != count or _patterns().tail.match(text, scan.end, stop) is None:
        return None
    nodes: list = [None] * (count + 1)
    vector_ids = np.flatnonzero(kinds == 0) + 1
    other_ids = np.flatnonzero(kinds != 0) + 1
    if not _others(text, scan, other_ids.tolist(), nodes):
        return None
    columns = _BulkColumns(stop - scan.start)
    counts: list[int] = []
    pins = scan.vpins.tolist()
    ref_ends = scan.vrefs.tolist()
    refs = scan.refs.tolist()
    ids = vector_ids.tolist()
    rows = 0
    r0 = 0
    for s in range(0, len(ids), tdb._BULK_SLICE):
        got = _sections(text, scan.vspan[s : s + tdb._BULK_SLICE], compiled, columns)
        if got is None:
            return None
        for k, n in enumerate(got, s):
            r1 = ref_ends[k]
            p = pins[k]
            index = ids[k]
            nodes[index] = VectorNode(
                index, 1, 1, (TrPin(p[0], p[1]), TrPin(p[2], p[3])), rows, n, tuple(refs[r0:r1])
            )
            rows += n
            r0 = r1
        counts.extend(got)
    if not counts:
        return nodes, VectorSections.empty()
    return nodes, columns.finish(counts, ids)


def _others(text: str, scan: NodeScan, ids: list[int], nodes: list) -> bool:
    """The junction and end nodes into ``nodes``; False where the walk with the regular
    expressions gives None (a junction's values without a shape number)."""
    if not ids:
        return True
    ints = scan.oints.tolist()
    flts = scan.oflts
    uids = list(map(UiD, *scan.oints[:, :6].T.tolist(), *flts.T.tolist()))
    kinds = scan.kinds
    for k, ((a, b), index) in enumerate(zip(scan.ospan.tolist(), ids)):
        values = tuple(text[a:b].split())
        p = ints[k]
        if kinds[index - 1] == 1:
            if len(values) < 2:
                return False
            try:
                shape = to_uint(values[1])
            except ValueError:
                return False
            pins = (TrPin(p[6], p[7]), TrPin(p[8], p[9]), TrPin(p[10], p[11]))
            nodes[index] = JunctionNode(index, 1, 2, pins, uids[k], shape, values)
        else:
            nodes[index] = EndNode(index, 1, 0, (TrPin(p[6], p[7]),), uids[k], values)
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
    if status is None or status.any():
        # numpy's reader for every span (not compiled) or for those handed back
        arrays: list[np.ndarray] = []
        out: list[int] = []
        for k, (a, b) in enumerate(spans.tolist()):
            if status is not None and not status[k]:
                arr = values[offsets[k] : offsets[k] + nums[k]]
            else:
                got = tdb._fromstring(text[a:b])  # (as tdb's: the tests watch it)
                if got is None:
                    return None
                arr = got
            n = int(arr[0]) if len(arr) and np.isfinite(arr[0]) else -1
            if n < 0 or len(arr) != 1 + 16 * n:
                return None
            arrays.append(arr[1:])
            out.append(n)
        return out if columns.add(arrays) else None
    # Every span read compiled: the counts checked and the rows gathered for them all.
    first = values[offsets]
    if not np.isfinite(first).all():
        return None
    n = np.trunc(first).astype(np.int64)  # int() of each, as flush
    if (n < 0).any() or (n >= nums).any() or (nums != 1 + 16 * n).any():
        return None
    lens = 16 * n
    total = int(lens.sum())
    if total:
        # index of every row value: its span's first value after the count, then on
        begin = np.repeat(offsets + 1 - (np.cumsum(lens) - lens), lens)
        flat = values[begin + np.arange(total)]
        if not columns.add([flat]):
            return None
    return n.tolist()
