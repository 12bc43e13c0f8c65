"""Track database ``.tdb`` and road database ``.rdb`` (docs/formats.md §6).

``TrackDB ( TrackNodes ( N TrackNode ( i ... ) ×N ) TrItemTable ( M item ×M ) )``.
Track nodes are 1-based (``nodes[0]`` is None); items are 0-based. The sixteen
values of every TrVectorSection of the whole file live in one
:class:`VectorSections` table of numpy columns; a vector node knows its rows.
"""

from __future__ import annotations

import functools
import math
import operator
import re
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from itertools import repeat
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .._compiled import numba_usable, pure_python_requested
from .._display import short_repr
from ..errors import Diagnostics, truncate_value
from ..stf import parse_file
from ..stf.parser import ITEM_TABLE_RUN_ENDS, TABLE_RUN_ENDS, gc_paused
from ..stf.tree import Block, Document
from ._read import Reader, to_float, to_int, to_int32, to_int53, to_uint
from ._records import fast_pickle
from .tdb_scan import NodeScan, scan_nodes

# -- records ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UiD:
    """Where a junction or end node is, and which world-file object made it (12 values)."""

    world_tile_x: int
    world_tile_z: int
    world_id: int
    unused: int
    tile_x: int
    tile_z: int
    x: float
    y: float
    z: float
    ax: float
    ay: float
    az: float


@dataclass(frozen=True, slots=True)
class TrPin:
    """A link to a neighbour node, and the direction the traveller will have in it
    (1: walk it forward / enter a junction from its trunk; 0: the other way)."""

    link: int
    direction: int


@dataclass(frozen=True, slots=True)
class TrackNode:
    index: int
    in_pins: int
    out_pins: int
    pins: tuple[TrPin, ...]

    kind: ClassVar[str] = ""


@dataclass(frozen=True, slots=True)
class VectorNode(TrackNode):
    """A run of track: sections ``first_section : first_section + section_count`` of
    :attr:`TrackDB.sections`, listed from the node's start to its end."""

    first_section: int = 0
    section_count: int = 0
    item_refs: tuple[int, ...] = ()

    kind: ClassVar[str] = "vector"

    @property
    def section_slice(self) -> slice:
        return slice(self.first_section, self.first_section + self.section_count)


@dataclass(frozen=True, slots=True)
class JunctionNode(TrackNode):
    """A switch: pin 0 is the trunk, pins 1 and 2 the routes 0 and 1 of the shape."""

    uid: UiD | None = None
    shape_index: int = 0
    values: tuple[str, ...] = ()  # the raw TrJunctionNode values (the 1st and 3rd are unused)

    kind: ClassVar[str] = "junction"


@dataclass(frozen=True, slots=True)
class EndNode(TrackNode):
    uid: UiD | None = None
    values: tuple[str, ...] = ()  # the raw TrEndNode values (usually "0")

    kind: ClassVar[str] = "end"


AnyNode = VectorNode | JunctionNode | EndNode

#: Limits of a plausible vector section row (docs/security.md §2): tile numbers (real
#: ones are within ±20,000), the offset in its tile (±1024 m in real files, y is the
#: altitude) and the angles in radians (a full turn, with rounding slack).
MAX_TILE = 1 << 20
MAX_SECTION_OFFSET = 1e5
MAX_SECTION_ANGLE = 2 * math.pi + 1e-3
#: A lenient read reports at most this many bad rows per column.
MAX_GEOMETRY_REPORTS = 20

#: Node indices and pin links are unsigned 32-bit (to_uint); section integers are read
#: through float64 and must be exact there.
_UINT_MAX = 0xFFFFFFFF
_EXACT_INT = float(1 << 53)

#: The columns of :class:`VectorSections` (name, numpy dtype), in file order.
SECTION_COLUMNS = (
    # name, dtype, meaning
    ("section_index", np.int64),  # TrackSection id (tsection.dat)
    ("shape_index", np.int64),  # TrackShape id, or dynamic-track TrackPath id
    ("wf_tile_x", np.int64),  # world file tile of the track object
    ("wf_tile_z", np.int64),
    ("world_uid", np.int64),  # the object's UiD in that world file
    ("flag1", np.int64),  # shape end-point numbers, per real content
    ("flag2", np.int64),
    ("flag3", object),  # a 2-character token, kept as text ("00")
    ("tile_x", np.int64),  # tile of the section start
    ("tile_z", np.int64),
    ("x", np.float64),  # start, tile-relative; y absolute height
    ("y", np.float64),
    ("z", np.float64),
    ("ax", np.float64),  # pitch (+ = descending forward), radians
    ("ay", np.float64),  # heading from +Z towards +X, radians
    ("az", np.float64),  # roll, radians
)
SECTION_FIELDS = tuple(n for n, _ in SECTION_COLUMNS)


@dataclass(frozen=True, slots=True, eq=False)
class VectorSections:
    """The TrVectorSections of a whole file: one numpy column per field, plus the
    owning node of every row."""

    section_index: np.ndarray
    shape_index: np.ndarray
    wf_tile_x: np.ndarray
    wf_tile_z: np.ndarray
    world_uid: np.ndarray
    flag1: np.ndarray
    flag2: np.ndarray
    flag3: np.ndarray
    tile_x: np.ndarray
    tile_z: np.ndarray
    x: np.ndarray
    y: np.ndarray
    z: np.ndarray
    ax: np.ndarray
    ay: np.ndarray
    az: np.ndarray
    node: np.ndarray

    def __len__(self) -> int:
        return len(self.node)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VectorSections):
            return NotImplemented
        return all(np.array_equal(getattr(self, f.name), getattr(other, f.name)) for f in fields(self))

    @classmethod
    def empty(cls) -> VectorSections:
        cols = {n: np.zeros(0, dtype=t) for n, t in SECTION_COLUMNS}
        return cls(**cols, node=np.zeros(0, dtype=np.int64))


# -- track items -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SData:
    distance: float  # MSTS's distance of the item along its track
    flags: str  # hex flags, kept as written


@dataclass(frozen=True, slots=True)
class RData:
    x: float
    y: float
    z: float
    tile_x: int
    tile_z: int


@dataclass(frozen=True, slots=True)
class PData:
    x: float
    z: float
    tile_x: int
    tile_z: int


@dataclass(frozen=True, slots=True)
class TrItem:
    index: int  # position in the TrItemTable
    item_id: int | None = None
    s_data: SData | None = None
    r_data: RData | None = None
    p_data: PData | None = None

    kind: ClassVar[str] = "item"
    token: ClassVar[str] = ""


@dataclass(frozen=True, slots=True)
class EmptyItem(TrItem):
    kind: ClassVar[str] = "empty"
    token: ClassVar[str] = "EmptyItem"


@dataclass(frozen=True, slots=True)
class CrossoverItem(TrItem):
    track_node: int = 0
    shape_index: int = 0
    kind: ClassVar[str] = "crossover"
    token: ClassVar[str] = "CrossoverItem"


@dataclass(frozen=True, slots=True)
class SignalDir:
    track_node: int
    sd1: int
    link_lr_path: int
    sd3: int


@dataclass(frozen=True, slots=True)
class SignalItem(TrItem):
    flags: str = "00000000"
    direction: int = 0  # which way the signal faces relative to its node
    sig_data1: float = 0.0
    signal_type: str = ""
    signal_dirs: tuple[SignalDir, ...] = ()
    kind: ClassVar[str] = "signal"
    token: ClassVar[str] = "SignalItem"


@dataclass(frozen=True, slots=True)
class SpeedPostItem(TrItem):
    flags: int = 0
    value: float | None = None  # the speed, or the milepost distance
    display_number: int | None = None
    angle: float = 0.0
    kind: ClassVar[str] = "speedpost"
    token: ClassVar[str] = "SpeedPostItem"

    @property
    def is_warning(self) -> bool:
        return bool(self.flags & 1) and not self.flags & 2

    @property
    def is_limit(self) -> bool:
        return bool(self.flags & 2) and not self.flags & 1

    @property
    def is_resume(self) -> bool:
        return self.flags & 3 == 3

    @property
    def is_milepost(self) -> bool:
        return self.flags & 3 == 0

    @property
    def in_mph(self) -> bool:
        return bool(self.flags & (1 << 8))

    @property
    def speed_ms(self) -> float | None:
        """The speed in m/s for a limit or warning sign, else None."""
        if self.value is None or self.is_milepost or self.is_resume:
            return None
        return self.value * (0.44704 if self.in_mph else 1 / 3.6)


@dataclass(frozen=True, slots=True)
class PlatformItem(TrItem):
    platform_name: str = ""
    station: str = ""
    min_waiting_time: int = 0  # seconds
    passengers_waiting: int = 0
    flags: str = "00000000"
    linked_item: int = 0  # the other end of the platform
    kind: ClassVar[str] = "platform"
    token: ClassVar[str] = "PlatformItem"


@dataclass(frozen=True, slots=True)
class SidingItem(TrItem):
    siding_name: str = ""
    flags: str = "00000000"
    linked_item: int = 0
    kind: ClassVar[str] = "siding"
    token: ClassVar[str] = "SidingItem"


@dataclass(frozen=True, slots=True)
class SoundRegionItem(TrItem):
    sr_data: tuple[int, int, float] = (0, 0, 0.0)
    kind: ClassVar[str] = "soundregion"
    token: ClassVar[str] = "SoundRegionItem"


@dataclass(frozen=True, slots=True)
class LevelCrItem(TrItem):
    kind: ClassVar[str] = "levelcr"
    token: ClassVar[str] = "LevelCrItem"


@dataclass(frozen=True, slots=True)
class HazzardItem(TrItem):
    kind: ClassVar[str] = "hazzard"
    token: ClassVar[str] = "HazzardItem"


@dataclass(frozen=True, slots=True)
class PickupItem(TrItem):
    kind: ClassVar[str] = "pickup"
    token: ClassVar[str] = "PickupItem"


@dataclass(frozen=True, slots=True)
class CarSpawnerItem(TrItem):
    kind: ClassVar[str] = "carspawner"
    token: ClassVar[str] = "CarSpawnerItem"


fast_pickle(
    UiD,
    TrPin,
    VectorNode,
    JunctionNode,
    EndNode,
    SData,
    RData,
    PData,
    SignalDir,
    EmptyItem,
    CrossoverItem,
    SignalItem,
    SpeedPostItem,
    PlatformItem,
    SidingItem,
    SoundRegionItem,
    LevelCrItem,
    HazzardItem,
    PickupItem,
    CarSpawnerItem,
)

ITEM_TYPES: dict[str, type[TrItem]] = {
    cls.token.lower(): cls
    for cls in (
        EmptyItem,
        CrossoverItem,
        SignalItem,
        SpeedPostItem,
        PlatformItem,
        SidingItem,
        SoundRegionItem,
        LevelCrItem,
        HazzardItem,
        PickupItem,
        CarSpawnerItem,
    )
}


@dataclass(frozen=True, slots=True, eq=False)
class TrackDB:
    """A parsed ``.tdb`` or ``.rdb``."""

    path: str
    serial: int | None
    nodes: tuple[AnyNode | None, ...]  # nodes[0] is None: track nodes are 1-based
    sections: VectorSections
    items: tuple[TrItem, ...]

    def __repr__(self) -> str:
        return short_repr(
            "TrackDB",
            [
                ("path", self.path),
                ("nodes", self.node_count),
                ("sections", len(self.sections)),
                ("items", len(self.items)),
            ],
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TrackDB):
            return NotImplemented
        return (
            self.serial == other.serial
            and self.nodes == other.nodes
            and self.sections == other.sections
            and self.items == other.items
        )

    @property
    def node_count(self) -> int:
        return len(self.nodes) - 1

    def node_sections(self, node: VectorNode | int) -> dict[str, np.ndarray]:
        """The section columns of one vector node (views, no copy)."""
        n = self.nodes[node] if isinstance(node, int) else node
        if not isinstance(n, VectorNode):
            raise TypeError(f"node {getattr(n, 'index', node)} is not a vector node")
        sl = n.section_slice
        return {f: getattr(self.sections, f)[sl] for f in SECTION_FIELDS}

    def counts(self) -> dict[str, int]:
        c = Counter(n.kind for n in self.nodes[1:] if n is not None)
        return {"vector": c["vector"], "junction": c["junction"], "end": c["end"], "total": self.node_count}

    def item_counts(self) -> dict[str, int]:
        return dict(sorted(Counter(i.kind for i in self.items).items()))


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
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The compiled reader (formats/_numbers_kernel.py) over the spans ``buf[starts[k]:
    ends[k]]`` of bytes: ``(values, offsets, counts, status)``, span k's numbers being
    ``values[offsets[k]:][:counts[k]]`` where ``status[k]`` is 0 (else numpy decides)."""
    from ._numbers_kernel import parse_spans

    room = (ends - starts + 1) // 2  # (at most one number per two characters)
    offsets = np.zeros(len(starts), dtype=np.int64)
    np.cumsum(room[:-1], out=offsets[1:])
    values = np.empty(int(room.sum()))
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
        self.cols: list[np.ndarray | None] = [
            None if dtype is object else np.empty(self.capacity, dtype=dtype) for _n, dtype in SECTION_COLUMNS
        ]

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
            values, offsets, nums, status = compiled_number_spans(buf, starts - lo, ends - lo)
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


# -- the bulk reader of the TrItemTable --------------------------------------------------
#
# As for TrackNodes: when the lexer gave the table's content as one run of raw text
# (stf_bulk.lark, and _item_table_run_end for a table holding quoted names), the items
# are matched one after the other with the regular expressions of the terminals of
# grammars/tdb_items.lark. Only content that the tree path (_TdbReader._items) reads
# without a single finding is accepted; anything else returns None and the tree path
# reads the table and reports what it finds. Same records either way (tests check).


class _ItemPatterns:
    def __init__(self) -> None:
        terms = _terminal_regexps("tdb_items.lark")
        self.count = re.compile(r"[\x00-\x20]*(" + terms["COUNT"] + ")")
        ws = r"[\x00-\x20]+"
        #: item type as written -> (its shape, what makes the record of its groups, what
        #: puts its groups in order or None)
        self.shapes: dict[str, tuple[Any, Callable[[int, tuple], TrItem | None], Any]] = {}
        for cls, term, maker in (
            (EmptyItem, "EMPTY", _plain_item(EmptyItem)),
            (CrossoverItem, "CROSSOVER", _crossover),
            (SignalItem, "SIGNAL", _signal),
            (SpeedPostItem, "SPEEDPOST", _speedpost),
            (PlatformItem, "PLATFORM", _platform),
            (SidingItem, "SIDING", _siding),
            (SoundRegionItem, "SOUNDREGION", _soundregion),
            (LevelCrItem, "LEVELCR", _plain_item(LevelCrItem)),
            (HazzardItem, "HAZZARD", _plain_item(HazzardItem)),
            (PickupItem, "PICKUP", _plain_item(PickupItem)),
            (CarSpawnerItem, "CARSPAWNER", _plain_item(CarSpawnerItem)),
        ):
            rx = re.compile(ws + terms[term])
            self.shapes[cls.token] = (rx.match, maker, _head_order(rx, terms[term]))
        self.name = re.compile(r"[\x00-\x20]+([A-Za-z]{1,20})[\x00-\x20]*\(").match
        self.number = re.compile(terms["NUMBER"]).fullmatch
        self.signal_dir = re.compile(
            r"\([\x00-\x20]*([0-9]+)[\x00-\x20]+([0-9]+)[\x00-\x20]+([0-9]+)[\x00-\x20]+([0-9]+)"
        )
        self.tail = re.compile(r"[\x00-\x20]*\Z")


#: The head blocks of an item (tdb_items.lark _HEAD) and their groups, in group order.
_HEAD_BLOCKS = (("TrItemId", 1), ("TrItemSData", 2), ("TrItemPData", 4), ("TrItemRData", 5))


def _head_order(rx: re.Pattern, text: str) -> Callable[[tuple], tuple] | None:
    """What puts a shape's groups in the order of tdb_items.lark's comment (0 TrItemId,
    1-2 SData, 3-6 PData, 7-11 RData, then the type's), or None if they are: the head's
    blocks may come in any order, and Lark writes their alternatives longest first, which
    numbers the groups so."""
    where = sorted((text.find(name + "["), name, n) for name, n in _HEAD_BLOCKS)
    if any(pos < 0 for pos, _name, _n in where):
        raise ValueError("tdb_items.lark: a head block is missing from a shape")
    first: dict[str, int] = {}
    at = 0
    for _pos, name, n in where:
        first[name] = at
        at += n
    perm = [first[name] + k for name, n in _HEAD_BLOCKS for k in range(n)] + list(range(at, rx.groups))
    return None if perm == list(range(rx.groups)) else operator.itemgetter(*perm)


@functools.cache
def _item_patterns() -> _ItemPatterns:
    return _ItemPatterns()


def _common(index: int, g: tuple) -> tuple[int, int | None, SData | None, RData | None, PData | None]:
    """The five fields of TrItem from groups 0-11 (see tdb_items.lark): the numbers
    there are ones that to_uint, to_int32 and to_float read as int() and float() do."""
    return (
        index,
        None if g[0] is None else int(g[0]),
        None if g[1] is None else SData(float(g[1]), g[2]),
        None if g[7] is None else RData(float(g[7]), float(g[8]), float(g[9]), int(g[10]), int(g[11])),
        None if g[3] is None else PData(float(g[3]), float(g[4]), int(g[5]), int(g[6])),
    )


def _plain_item(cls: type[TrItem]) -> Callable[[int, tuple], TrItem | None]:
    def make(index: int, g: tuple) -> TrItem | None:
        return cls(*_common(index, g))

    return make


def _crossover(index: int, g: tuple) -> TrItem | None:
    if g[12] is None:
        return CrossoverItem(*_common(index, g))
    return CrossoverItem(*_common(index, g), int(g[12]), int(g[13]))


def _signal(index: int, g: tuple) -> TrItem | None:
    extra: dict = {}
    if g[12] is not None:
        extra = {
            "flags": g[12],
            "direction": int(g[13]),
            "sig_data1": float(g[14]),
            "signal_type": g[15].lower(),
        }
    if g[16] is not None:
        dirs = tuple(SignalDir(*map(int, d)) for d in _item_patterns().signal_dir.findall(g[17]))
        if len(dirs) != int(g[16]):
            return None  # "TrSignalDirs: the count says ..."
        extra["signal_dirs"] = dirs
    return SignalItem(*_common(index, g), **extra)


def _speedpost(index: int, g: tuple) -> TrItem | None:
    if g[12] is None:
        return SpeedPostItem(*_common(index, g))
    # As _TdbReader._speedpost, for values it reads without a finding.
    values = g[12].split()
    number = _item_patterns().number
    if not 2 <= len(values) <= 4 or not all(map(number, values)) or not values[0].isdigit():
        return None
    flags = int(values[0])
    if flags > _UINT_MAX:
        return None
    extra: dict = {"flags": flags}
    i = 1
    if flags & 3 != 3:
        v = float(values[i])
        if flags & 3 == 0 and not flags & (1 << 9):
            v = float(int(v))
        extra["value"] = v
        i += 1
    if flags & (1 << 4):
        if i >= len(values) or not _SIGNED.fullmatch(values[i]):
            return None
        extra["display_number"] = int(values[i])
        i += 1
    if len(values) != i + 1:
        return None
    extra["angle"] = math.remainder(float(values[i]), 2 * math.pi)
    return SpeedPostItem(*_common(index, g), **extra)


_SIGNED = re.compile(r"-?[0-9]{1,18}")


def _name(quoted: str | None, plain: str | None) -> str | None:
    return quoted if quoted is not None else plain


def _linked_named(g: tuple, name_field: str) -> dict:
    """The flags, linked item and name (into ``name_field``) that platforms and sidings
    share, as keyword arguments: only those the item gives."""
    extra: dict = {}
    if g[12] is not None:
        extra["flags"] = g[12]
        extra["linked_item"] = int(g[13])
    name = _name(g[14], g[15])
    if name is not None:
        extra[name_field] = name
    return extra


def _platform(index: int, g: tuple) -> TrItem | None:
    extra = _linked_named(g, "platform_name")
    station = _name(g[16], g[17])
    if station is not None:
        extra["station"] = station
    if g[18] is not None:
        extra["min_waiting_time"] = int(g[18])
    if g[19] is not None:
        extra["passengers_waiting"] = int(g[19])
    return PlatformItem(*_common(index, g), **extra)


def _siding(index: int, g: tuple) -> TrItem | None:
    return SidingItem(*_common(index, g), **_linked_named(g, "siding_name"))


def _soundregion(index: int, g: tuple) -> TrItem | None:
    if g[12] is None:
        return SoundRegionItem(*_common(index, g))
    return SoundRegionItem(*_common(index, g), (int(g[12]), int(g[13]), float(g[14])))


def read_bulk_items(table: Block) -> list[TrItem] | None:
    """The items of a TrItemTable block held as raw text, or None if the block is not
    raw or the tree path is needed (see above)."""
    span = table.raw_span()
    if span is None or (table.source is not None and table.source.exact_split):
        return None
    text, pos, end = span
    walk = _WALKS.take(text, pos, end) or _walk_items(text, pos, end)
    if walk is None:
        return None
    count, last, items = walk
    if items is None or len(items) != count or _item_patterns().tail.match(text, last, end) is None:
        return None
    return items


def _walk_items(text: str, pos: int, end: int) -> tuple[int, int, list[TrItem] | None] | None:
    """Walks the items of the shapes of tdb_items.lark from ``pos`` (the content of a
    TrItemTable) within ``end``: (the count, where the last item ends, the items, or
    None where a value is one the tree path reports), or None at the first text of
    another shape."""
    pat = _item_patterns()
    m = pat.count.match(text, pos, end)
    if m is None:
        return None
    count = int(m.group(1))
    pos = m.end()
    name, shapes = pat.name, pat.shapes
    out: list[TrItem] | None = []
    while True:
        mn = name(text, pos, end)
        if mn is None:
            break
        shape = shapes.get(mn.group(1))
        if shape is None:
            return None
        mi = shape[0](text, pos, end)
        if mi is None:
            return None
        if out is not None:
            g = mi.groups()
            item = shape[1](len(out), g if shape[2] is None else shape[2](g))
            if item is None:
                out = None  # the tree path reads the table; the walk goes on for its end
            else:
                out.append(item)
        pos = mi.end()
    return count, pos, out


class _Walks(threading.local):
    """The last walk of _item_table_run_end in this thread, for read_bulk_items: the
    lexer's pre-pass and the reader then walk the table once (~0.15 s at 30,000 items).
    Taken only for the same offsets and the same text (the lexer's copy of the file
    differs on line 1 only; a lenient re-parse walks its own text again)."""

    def __init__(self) -> None:
        self.last: tuple[int, int, str, tuple] | None = None

    def keep(self, text: str, pos: int, end: int, walk: tuple) -> None:
        self.last = (pos, end, text[pos:end], walk)

    def take(self, text: str, pos: int, end: int) -> tuple | None:
        last, self.last = self.last, None
        if last is None or last[0] != pos or last[1] != end or not text.startswith(last[2], pos):
            return None
        return last[3]


_WALKS = _Walks()


def _item_table_run_end(text: str, pos: int) -> int | None:
    """Where the content of a TrItemTable that starts at ``pos`` ends, if it is a count
    and items of the shapes of grammars/tdb_items.lark, then white space and the
    table's ")"; else None (the lexer then reads the table as it did). Unlike the
    TrackNodes run, the content may hold quoted names, which the DATA regex stops at:
    the lexer's single token for it is then kept raw only (stf_bulk.lark's note),
    and its items are made by the STF grammar if ever asked for (same tree)."""
    walk = _walk_items(text, pos, len(text))
    if walk is None:
        return None
    end = walk[1]
    if _RUN_CLOSE.match(text, end) is None or text.find("\\", pos, end) >= 0:
        return None
    _WALKS.keep(text, pos, end, walk)
    return end


ITEM_TABLE_RUN_ENDS["tdb"] = _item_table_run_end


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
