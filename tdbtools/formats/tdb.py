"""Track database ``.tdb`` and road database ``.rdb`` (docs/formats.md §6).

``TrackDB ( TrackNodes ( N TrackNode ( i ... ) ×N ) TrItemTable ( M item ×M ) )``.
Track nodes are 1-based (``nodes[0]`` is None); items are 0-based. The sixteen
values of every TrVectorSection of the whole file live in one
:class:`VectorSections` table of numpy columns; a vector node knows its rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import Diagnostics, truncate_value
from ..stf import parse_file
from ..stf.parser import gc_paused
from ..stf.tree import Block, Document
from ._read import Reader, to_float, to_int, to_int32, to_int53, to_uint
from .tdb_bulk_items import (
    read_bulk_items,
)
from .tdb_bulk_nodes import (
    read_bulk_nodes,
)
from .tdb_records import (
    _EXACT_INT,
    _UINT_MAX,
    ITEM_TYPES,
    MAX_GEOMETRY_REPORTS,
    MAX_SECTION_ANGLE,
    MAX_SECTION_OFFSET,
    MAX_TILE,
    SECTION_COLUMNS,
    SECTION_FIELDS,
    CarSpawnerItem,
    CrossoverItem,
    EmptyItem,
    EndNode,
    HazzardItem,
    JunctionNode,
    LevelCrItem,
    PData,
    PickupItem,
    PlatformItem,
    RData,
    SData,
    SidingItem,
    SignalDir,
    SignalItem,
    SoundRegionItem,
    SpeedPostItem,
    TrackDB,
    TrackNode,
    TrItem,
    TrPin,
    UiD,
    VectorNode,
    VectorSections,
)

#: The records (formats/tdb_records.py) are named here too, where the readers of a route
#: have always found them.
__all__ = [
    "CarSpawnerItem",
    "CrossoverItem",
    "EmptyItem",
    "EndNode",
    "HazzardItem",
    "ITEM_TYPES",
    "JunctionNode",
    "LevelCrItem",
    "PData",
    "PickupItem",
    "PlatformItem",
    "RData",
    "SData",
    "SECTION_COLUMNS",
    "SECTION_FIELDS",
    "SidingItem",
    "SignalDir",
    "SignalItem",
    "SoundRegionItem",
    "SpeedPostItem",
    "TrItem",
    "TrPin",
    "TrackDB",
    "TrackNode",
    "UiD",
    "VectorNode",
    "VectorSections",
    "parse_tdb",
    "read_tdb",
    "tdb_from_document",
]


# -- reading ---------------------------------------------------------------------------


class _TdbReader:
    def __init__(self, doc: Document, diags: Diagnostics) -> None:
        self.doc = doc
        self.diags = diags
        self.rd = Reader(diags)
        self.section_texts: list[tuple[Block, str, int]] = []  # (block, raw values, node index)

    def read(self) -> TrackDB:
        rd = self.rd
        root = self.doc.find("TrackDB")
        serial = None
        nodes: list = [None]
        items: list = []
        if root is None:
            rd.problem(self.doc, "no TrackDB block in file")
            return TrackDB(self.doc.path, None, (None,), VectorSections.empty(), ())
        bulk_sections = None
        # The bulk reader stands in for the tree of the only TrackNodes table (with
        # two, the tree path joins their sections; no real file has two).
        one_table = sum(1 for b in root.blocks("TrackNodes")) == 1
        for blk in root.blocks():
            k = blk.key
            if k == "serial":
                serial = rd.value(blk, 0, to_int, None, "serial")
            elif k == "tracknodes":
                bulk = read_bulk_nodes(blk) if one_table else None
                if bulk is not None:
                    nodes, bulk_sections = bulk
                else:
                    nodes = self._nodes(blk)
            elif k == "tritemtable":
                bulk_items = read_bulk_items(blk)
                items = bulk_items if bulk_items is not None else self._items(blk)
        sections = bulk_sections if bulk_sections is not None else self._sections()
        return TrackDB(self.doc.path, serial, tuple(nodes), sections, tuple(items))

    # nodes -------------------------------------------------------------------------
    def _nodes(self, table: Block) -> list:
        rd = self.rd
        count = rd.value(table, 0, to_uint, 0, "node count")
        nodes: list = [None]
        for blk in table.items[1:]:
            if blk.__class__ is not Block:
                rd.problem(table, f"TrackNodes: unexpected value {truncate_value(blk)}")
                continue
            if blk.key != "tracknode":
                continue
            node = self._node(blk, len(nodes))
            nodes.append(node)
        if len(nodes) - 1 != count:
            rd.problem(table, f"TrackNodes: the count says {count} nodes, found {len(nodes) - 1}", 0)
        return nodes

    def _node(self, blk: Block, position: int):
        rd = self.rd
        items = blk.items
        try:
            index = int(items[0])
            if not 0 <= index <= _UINT_MAX:
                raise ValueError
        except (ValueError, TypeError, IndexError):
            index = rd.value(blk, 0, to_uint, position, "node index")
        if index != position:
            rd.problem(blk, f"TrackNode {index} is at position {position} of TrackNodes", 0)
            # Open Rails stores the node at its position (the index is only asserted), and
            # pins link to positions: the model keeps nodes[i].index == i.
            index = position
        body = None
        uid = None
        pins: tuple[TrPin, ...] = ()
        in_pins = out_pins = 0
        for pos, sub in enumerate(items[1:], start=1):
            if sub.__class__ is not Block:
                rd.problem(blk, f"TrackNode {index}: unexpected value {truncate_value(sub)}", pos)
                continue
            k = sub.key
            if k in ("trvectornode", "trjunctionnode", "trendnode"):
                if body is not None:
                    rd.problem(sub, f"TrackNode {index}: more than one node body")
                body = sub
            elif k == "uid":
                uid = self._uid(sub)
            elif k == "trpins":
                in_pins, out_pins, pins = self._pins(sub, index)
        if body is None:
            rd.problem(blk, f"TrackNode {index}: no TrVectorNode, TrJunctionNode or TrEndNode")
            return None
        k = body.key
        if k == "trvectornode":
            first = len(self.section_texts)
            refs: tuple[int, ...] = ()
            count = 0
            view = body.leaf_view()
            if view is not None and all(e.__class__ is tuple and e[0] == "trvectorsections" for e in view):
                # The usual TrVectorNode ( TrVectorSections ( ... ) ): no objects made.
                for _key, text in view:
                    self.section_texts.append((body, text, index))
            else:
                for sub in body.blocks():
                    if sub.key == "trvectorsections":
                        text = sub.values_text
                        if text is None:
                            rd.problem(sub, "TrVectorSections: expected plain values only")
                            continue
                        self.section_texts.append((body, text, index))
                    elif sub.key == "tritemrefs":
                        refs = self._item_refs(sub)
            if len(self.section_texts) == first:
                rd.problem(body, f"TrackNode {index}: TrVectorNode without TrVectorSections")
            # The section count and rows are settled in _sections(); keep the position.
            node = VectorNode(index, in_pins, out_pins, pins, first, count, refs)
            self._check_pins(blk, node, 1, 1)
            return node
        values = tuple(str(v) for v in body.items if v.__class__ is not Block)
        if k == "trjunctionnode":
            shape = rd.value(body, 1, to_uint, 0, "shape index")
            junction = JunctionNode(index, in_pins, out_pins, pins, uid, shape, values)
            self._check_pins(blk, junction, 1, 2)
            return junction
        end = EndNode(index, in_pins, out_pins, pins, uid, values)
        self._check_pins(blk, end, 1, 0)
        return end

    def _check_pins(self, blk: Block, node: TrackNode, ins: int, outs: int) -> None:
        if (node.in_pins, node.out_pins) != (ins, outs):
            self.diags.note(
                f"TrackNode {node.index} ({node.kind}): {node.in_pins} in + "
                f"{node.out_pins} out pins, expected {ins} + {outs}",
                blk.location,
            )

    def _uid(self, blk: Block) -> UiD | None:
        v = blk.items
        try:
            if len(v) != 12:
                raise ValueError
            a = [int(x) for x in v[:6]]
            b = [float(x) for x in v[6:]]
            if not all(map(math.isfinite, b)) or not all(-(1 << 31) <= x <= _UINT_MAX for x in a):
                raise ValueError
            return UiD(*a, *b)
        except (ValueError, TypeError):
            rd = self.rd
            if len(v) != 12:
                rd.problem(blk, f"UiD: expected 12 values, found {len(v)}")
                return None
            a = [rd.value(blk, i, to_int32, 0, "UiD") for i in range(6)]
            b = [rd.value(blk, i, to_float, 0.0, "UiD") for i in range(6, 12)]
            return UiD(*a, *b)

    def _pins(self, blk: Block, index: int) -> tuple[int, int, tuple[TrPin, ...]]:
        view: Any = blk.leaf_view()
        try:
            ins, outs = int(view[0]), int(view[1])
            pins = []
            for key, text in view[2:]:
                if key != "trpin":
                    raise ValueError
                link, direction = map(int, text.split())
                if not (0 <= link <= _UINT_MAX and 0 <= direction <= _UINT_MAX):
                    raise ValueError  # the checked path reports it (as to_uint would)
                pins.append(TrPin(link, direction))
            if ins < 0 or outs < 0 or len(pins) != ins + outs:
                raise ValueError
            return ins, outs, tuple(pins)
        except (ValueError, TypeError, IndexError):
            return self._pins_checked(blk, index)

    def _pins_checked(self, blk: Block, index: int) -> tuple[int, int, tuple[TrPin, ...]]:
        rd = self.rd
        items = blk.items
        ins = rd.value(blk, 0, to_uint, 0, "in-pin count")
        outs = rd.value(blk, 1, to_uint, 0, "out-pin count")
        pins = []
        for pos, p in enumerate(items[2:], start=2):
            if p.__class__ is not Block or p.key != "trpin":
                rd.problem(blk, f"TrPins: expected TrPin blocks, found {truncate_value(p)}", pos)
                continue
            v = p.items
            try:
                link, direction = int(v[0]), int(v[1])
                if len(v) != 2 or not (0 <= link <= _UINT_MAX and 0 <= direction <= _UINT_MAX):
                    raise ValueError
            except (ValueError, TypeError, IndexError):
                if len(v) != 2:
                    rd.problem(p, f"TrPin: expected 2 values (link, direction), found {len(v)}")
                link = rd.value(p, 0, to_uint, 0, "link")
                direction = rd.value(p, 1, to_uint, 0, "direction")
            pins.append(TrPin(link, direction))
        if len(pins) != ins + outs:
            rd.problem(blk, f"TrPins of node {index}: the counts say {ins}+{outs} pins, found {len(pins)}", 0)
        return ins, outs, tuple(pins)

    def _item_refs(self, blk: Block) -> tuple[int, ...]:
        rd = self.rd
        n = rd.value(blk, 0, to_uint, 0, "item count")
        refs = []
        for p in blk.items[1:]:
            if p.__class__ is Block and p.key == "tritemref":
                refs.append(rd.value(p, 0, to_uint, 0, "item index"))
        if len(refs) != n:
            rd.problem(blk, f"TrItemRefs: the count says {n} refs, found {len(refs)}", 0)
        return tuple(refs)

    # sections ----------------------------------------------------------------------
    def _sections(self) -> VectorSections:
        texts = self.section_texts
        if not texts:
            return VectorSections.empty()
        arrays = []
        counts = []
        for blk, text, _node in texts:
            arr = self._numbers(blk, text)
            n = int(arr[0]) if len(arr) else 0
            if len(arr) != 1 + 16 * n or n < 0:
                arr = self._section_values_checked(self._vs_block(blk))
                n = (len(arr) - 1) // 16
            counts.append(n)
            arrays.append(arr[1:])
        flat = np.concatenate(arrays) if arrays else np.zeros(0)
        table = flat.reshape(-1, 16)
        node_ids = np.repeat(np.array([t[2] for t in texts], dtype=np.int64), counts)
        cols: dict[str, np.ndarray] = {}
        for j, (name, dtype) in enumerate(SECTION_COLUMNS):
            col = table[:, j]
            if dtype is object:
                cols[name] = self._flag3(texts, counts, col)
            elif dtype is np.int64:
                # Only values a float64 holds exactly are cast (a bigger one, e.g. 1e30,
                # would be undefined behaviour in the cast): the rest are reported.
                exact = np.abs(col) <= _EXACT_INT
                ints = (col if exact.all() else np.where(exact, col, 0.0)).astype(np.int64)
                if not np.array_equal(ints, col):
                    bad = int(np.flatnonzero(ints != col)[0])
                    self._report_row(
                        texts,
                        counts,
                        bad,
                        j,
                        f"{name}: expected an integer, found {truncate_value(col[bad].item())}",
                    )
                cols[name] = ints
            else:
                cols[name] = np.ascontiguousarray(col)
        self._check_geometry(texts, counts, cols, node_ids)
        for c in cols.values():
            c.flags.writeable = False
        node_ids.flags.writeable = False
        # The nodes were made before their section counts were known.
        self._counts = counts
        return VectorSections(**cols, node=node_ids)

    def _check_geometry(self, texts, counts, cols: dict[str, np.ndarray], node_ids: np.ndarray) -> None:
        """Positions and angles no real route holds (docs/security.md §2): an error in
        strict mode; in lenient mode a finding, and the row's section id is set to -1 so
        that the row has no geometry (as an unknown section)."""
        bad = np.zeros(len(node_ids), dtype=bool)
        checks: list[tuple[str, float]] = [(name, MAX_TILE) for name in ("tile_x", "tile_z")]
        checks += [(name, MAX_SECTION_OFFSET) for name in ("x", "y", "z")]
        checks += [(name, MAX_SECTION_ANGLE) for name in ("ax", "ay", "az")]
        for name, limit in checks:
            col = cols[name]
            out = ~(np.abs(col) <= limit)
            if not out.any():
                continue
            for row in np.flatnonzero(out)[:MAX_GEOMETRY_REPORTS].tolist():
                j = next(i for i, (n, _t) in enumerate(SECTION_COLUMNS) if n == name)
                self._report_row(
                    texts,
                    counts,
                    row,
                    j,
                    f"BAD_SECTION_GEOMETRY: node {int(node_ids[row])} section row {row}: "
                    f"{name} = {truncate_value(col[row].item())} is beyond ±{limit:g}",
                )
            bad |= out
        if bad.any():
            ids = cols["section_index"].copy()
            ids[bad] = -1
            cols["section_index"] = ids

    @staticmethod
    def _vs_block(owner: Block) -> Block:
        return owner.find("TrVectorSections") or owner

    def _numbers(self, blk: Block, text: str) -> np.ndarray:
        # numpy parses the whole run in C; anything unusual (a hex token, a thousands
        # comma, a stray word) fails here and takes the checked path.
        try:
            arr = np.fromstring(text, dtype=np.float64, sep=" ")
        except (ValueError, DeprecationWarning):
            return self._section_values_checked(self._vs_block(blk))
        if not np.isfinite(arr).all():
            return self._section_values_checked(self._vs_block(blk))
        return arr

    def _section_values_checked(self, blk: Block) -> np.ndarray:
        rd = self.rd
        items = blk.items
        n = rd.value(blk, 0, to_uint, 0, "section count")
        have = max(len(items) - 1, 0)  # (an empty block has no count either)
        if have != 16 * n:
            rd.problem(
                blk,
                f"TrVectorSections: the count says {n} sections ({16 * n} values), found {have} values",
                0,
            )
            n = min(n, have // 16)
        out = np.zeros(1 + 16 * n)
        out[0] = n
        for i in range(16 * n):
            col = i % 16
            if col == 7:
                continue  # the 2-character text field
            conv: Callable[[str], float] = to_float if col >= 10 else to_int53
            out[1 + i] = rd.value(blk, 1 + i, conv, 0.0, SECTION_FIELDS[col])
        return out

    def _flag3(self, texts, counts, col: np.ndarray) -> np.ndarray:
        # The 8th value is a 2-character token, "00" in all real content: read as a
        # number it is 0. Where any is not 0, every token is taken from the text.
        out = np.empty(len(col), dtype=object)
        out[:] = "00"
        if len(col) and (col != 0).any():
            row = 0
            for (blk, _t, _n), n in zip(texts, counts):
                items = self._vs_block(blk).items
                for s in range(n):
                    out[row + s] = str(items[1 + 16 * s + 7])
                row += n
        return out

    def _report_row(self, texts, counts, row: int, col: int, message: str) -> None:
        start = 0
        for (blk, _t, _n), n in zip(texts, counts):
            if row < start + n:
                self.rd.problem(
                    self._vs_block(blk), f"TrVectorSections {message}", 1 + 16 * (row - start) + col
                )
                return
            start += n

    # items -------------------------------------------------------------------------
    def _items(self, table: Block) -> list[TrItem]:
        rd = self.rd
        count = rd.value(table, 0, to_uint, 0, "item count")
        out: list[TrItem] = []
        for blk in table.items[1:]:
            if blk.__class__ is not Block:
                rd.problem(table, f"TrItemTable: unexpected value {truncate_value(blk)}")
                continue
            cls = ITEM_TYPES.get(blk.key)
            if cls is None:
                rd.problem(blk, f"TrItemTable: unknown item type {truncate_value(blk.name)}")
                continue
            item = self._item(cls, blk, len(out))
            out.append(item)
        if len(out) != count:
            rd.problem(table, f"TrItemTable: the count says {count} items, found {len(out)}", 0)
        return out

    def _item(self, cls: type[TrItem], blk: Block, index: int) -> TrItem:
        rd = self.rd
        common: dict = {"index": index}
        extra: dict = {}
        for pos, sub in enumerate(blk.items):
            if sub.__class__ is not Block:
                rd.problem(blk, f"{blk.name}: unexpected value {truncate_value(sub)}", pos)
                continue
            k = sub.key
            if k == "tritemid":
                common["item_id"] = rd.value(sub, 0, to_uint, index, "item id")
            elif k == "tritemsdata":
                common["s_data"] = SData(
                    rd.value(sub, 0, to_float, 0.0, "distance"), rd.string(sub, 1, "00000000")
                )
            elif k == "tritemrdata":
                common["r_data"] = RData(
                    rd.value(sub, 0, to_float, 0.0, "x"),
                    rd.value(sub, 1, to_float, 0.0, "y"),
                    rd.value(sub, 2, to_float, 0.0, "z"),
                    rd.value(sub, 3, to_int32, 0, "tile x"),
                    rd.value(sub, 4, to_int32, 0, "tile z"),
                )
            elif k == "tritempdata":
                common["p_data"] = PData(
                    rd.value(sub, 0, to_float, 0.0, "x"),
                    rd.value(sub, 1, to_float, 0.0, "z"),
                    rd.value(sub, 2, to_int32, 0, "tile x"),
                    rd.value(sub, 3, to_int32, 0, "tile z"),
                )
            elif k == "crossovertritemdata" and cls is CrossoverItem:
                extra["track_node"] = rd.value(sub, 0, to_uint, 0, "track node")
                extra["shape_index"] = rd.value(sub, 1, to_uint, 0, "shape index")
            elif k == "trsignaltype" and cls is SignalItem:
                extra["flags"] = rd.string(sub, 0, "00000000")
                extra["direction"] = rd.value(sub, 1, to_uint, 0, "direction")
                extra["sig_data1"] = rd.value(sub, 2, to_float, 0.0, "signal data")
                extra["signal_type"] = rd.string(sub, 3, "").lower()
            elif k == "trsignaldirs" and cls is SignalItem:
                dirs = []
                for d in sub.blocks("TrSignalDir"):
                    dirs.append(SignalDir(*(rd.value(d, i, to_uint, 0, "signal dir") for i in range(4))))
                n = rd.value(sub, 0, to_uint, 0, "count")
                if n != len(dirs):
                    rd.problem(sub, f"TrSignalDirs: the count says {n}, found {len(dirs)}", 0)
                extra["signal_dirs"] = tuple(dirs)
            elif k == "speedposttritemdata" and cls is SpeedPostItem:
                extra.update(self._speedpost(sub))
            elif cls is PlatformItem and k in (
                "platformname",
                "station",
                "platformminwaitingtime",
                "platformnumpassengerswaiting",
                "platformtritemdata",
            ):
                if k == "platformname":
                    extra["platform_name"] = rd.string(sub)
                elif k == "station":
                    extra["station"] = rd.string(sub)
                elif k == "platformminwaitingtime":
                    extra["min_waiting_time"] = rd.value(sub, 0, to_uint, 0, "seconds")
                elif k == "platformnumpassengerswaiting":
                    extra["passengers_waiting"] = rd.value(sub, 0, to_uint, 0, "passengers")
                else:
                    extra["flags"] = rd.string(sub, 0, "00000000")
                    extra["linked_item"] = rd.value(sub, 1, to_uint, 0, "linked item")
            elif cls is SidingItem and k in ("sidingname", "sidingtritemdata"):
                if k == "sidingname":
                    extra["siding_name"] = rd.string(sub)
                else:
                    extra["flags"] = rd.string(sub, 0, "00000000")
                    extra["linked_item"] = rd.value(sub, 1, to_uint, 0, "linked item")
            elif k == "tritemsrdata" and cls is SoundRegionItem:
                extra["sr_data"] = (
                    rd.value(sub, 0, to_uint, 0, ""),
                    rd.value(sub, 1, to_uint, 0, ""),
                    rd.value(sub, 2, to_float, 0.0, ""),
                )
            else:
                self.diags.note(f"{blk.name}: block {sub.name!r} ignored", sub.location)
        return cls(**common, **extra)

    def _speedpost(self, sub: Block) -> dict:
        rd = self.rd
        flags = rd.value(sub, 0, to_uint, 0, "flags")
        out: dict = {"flags": flags}
        i = 1
        if flags & 3 != 3:  # every sign but "resume" carries a value
            v = rd.value(sub, i, to_float, 0.0, "speed or milepost")
            if flags & 3 == 0 and not flags & (1 << 9):
                v = float(int(v))  # a milepost without a decimal point is whole
            out["value"] = v
            i += 1
        if flags & (1 << 4):
            out["display_number"] = rd.value(sub, i, to_int, 0, "display number")
            i += 1
        angle = rd.value(sub, i, to_float, 0.0, "angle")
        out["angle"] = math.remainder(angle, 2 * math.pi)
        if len(sub.items) != i + 1:
            rd.problem(
                sub, f"SpeedpostTrItemData: flags {flags} call for {i + 1} values, found {len(sub.items)}"
            )
        return out


def parse_tdb(path: str | Path, diagnostics: Diagnostics, root: str | Path | None = None) -> Document:
    """The STF tree of a ``.tdb``/``.rdb``, its TrackNodes table kept as raw text for the
    bulk reader where the lexer allows it (same tree either way)."""
    return parse_file(path, diagnostics=diagnostics, root=root, bulk=True)


def read_tdb(path: str | Path, *, strict: bool = True, diagnostics: Diagnostics | None = None) -> TrackDB:
    """Read a ``.tdb`` (or ``.rdb``) file into a :class:`TrackDB`."""
    diags = diagnostics if diagnostics is not None else Diagnostics(strict=strict)
    return tdb_from_document(parse_tdb(path, diags), diags)


def tdb_from_document(doc: Document, diags: Diagnostics) -> TrackDB:
    with gc_paused():
        return _tdb_from_document(doc, diags)


def _tdb_from_document(doc: Document, diags: Diagnostics) -> TrackDB:
    r = _TdbReader(doc, diags)
    db = r.read()
    counts = getattr(r, "_counts", [])
    if not counts:
        return db
    # Fill in every vector node's section count, now that the rows are known.
    nodes = list(db.nodes)
    it = iter(counts)
    first = 0
    starts: dict[int, tuple[int, int]] = {}
    for (_blk, _text, node), n in zip(r.section_texts, it):
        a, b = starts.get(node, (first, 0))
        starts[node] = (a, b + n)
        first += n
    for i, n in enumerate(nodes):
        if isinstance(n, VectorNode) and n.index in starts:
            a, c = starts[n.index]
            nodes[i] = VectorNode(n.index, n.in_pins, n.out_pins, n.pins, a, c, n.item_refs)
    return TrackDB(db.path, db.serial, tuple(nodes), db.sections, db.items)
