"""The records of a track database ``.tdb`` / road database ``.rdb`` (docs/formats.md §6):
track nodes and their pins, the one table of every vector section's sixteen values
(:class:`VectorSections`), the track items, and :class:`TrackDB` that holds them. Reading
them: :mod:`.tdb`."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, fields
from typing import ClassVar

import numpy as np

from .._display import short_repr
from ._records import fast_pickle

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
