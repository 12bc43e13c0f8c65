"""Building ``.pat`` paths: the shortest way over the track network between places.

A place is a world point (tile x, tile z, x, z), a track node (a vector node: its
middle; an end node: just inside the track end; a junction) or a platform or station
name from the track database. The search is the one :func:`~tdbtools.track.paths.resolve_path`
uses (Dijkstra over (node, direction) states; a junction is passed trunk to branch or
branch to trunk only), so the written file resolves back to the same route. The file
lists the start, every junction passed (as junction PDPs, as the MSTS path editor
does), the via points and the end (docs/activities.md §2).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import TdbToolsError
from ..formats.route import Route
from ..formats.tdb import EndNode, JunctionNode, PlatformItem, VectorNode
from ..stf.tree import Block, Item, QStr
from .paths import Place, Traversal, _net, _search
from .traveller import Traveller, TravellerError, item_positions

#: How far in from a track end a path that starts or ends there is put (m).
END_MARGIN_M = 5.0
#: A leg may be at most this long (m): bounds the search on big routes.
MAX_LEG_M = 500_000.0
#: Bound on the number of via points.
MAX_VIA = 64


class PathBuildError(TdbToolsError, ValueError):
    """No path can be built between the places asked for."""


@dataclass(frozen=True, slots=True)
class Spot:
    """A resolved place: where on the network, and how it was named."""

    label: str
    candidates: tuple[Place, ...]  # a station may have several platforms


@dataclass(frozen=True, slots=True)
class BuiltPath:
    """A built path: its points (start, via..., end), the traversals driven and where
    it turns."""

    name: str
    places: tuple[Place, ...]
    labels: tuple[str, ...]
    traversals: tuple[Traversal, ...]
    junctions: tuple[int, ...]  # junction nodes passed, in order
    junction_at: tuple[int, ...]  # for each junction, the index of the leg passing it
    reversals: tuple[int, ...]  # indices into ``places`` where the train turns
    length: float

    def _facts(self) -> list[tuple[str, object]]:
        return [
            ("name", self.name),
            ("places", list(self.labels)),
            ("length_m", round(self.length, 3)),
            ("junctions", len(self.junctions)),
            ("reversals", list(self.reversals)),
        ]

    def __repr__(self) -> str:
        from .._display import short_repr

        return short_repr("BuiltPath", self._facts())

    def _repr_html_(self) -> str:
        from .._display import html_summary

        return html_summary(f"Path {self.name}", self._facts())

    def node_sequence(self) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for t in self.traversals:
            if not out or out[-1] != (t.node, t.direction):
                out.append((t.node, t.direction))
        return out


def check_pat_target(out: str | Path, overwrite: bool = False) -> Path:
    """The checks :func:`write_path` makes before writing, to be made before any work:
    a ``.pat`` name, an existing folder, no file in the way unless ``overwrite``."""
    from .._fs import check_target

    target = Path(out)
    if target.suffix.lower() != ".pat":
        raise PathBuildError(f"the output must be a .pat file, got {str(target)!r}")
    if not target.parent.is_dir():
        raise PathBuildError(f"folder {str(target.parent)!r} does not exist")
    check_target(target, overwrite)
    return target


# -- places -------------------------------------------------------------------------------

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_POINT = re.compile(rf"^\s*({_NUM})[\s,]+({_NUM})[\s,]+({_NUM})[\s,]+({_NUM})\s*$")
_NODE = re.compile(r"^\s*(?:node\s*[:=]?\s*)?(\d+)(?:\s*[@:]\s*(" + _NUM + r"))?\s*$", re.I)


def _mid(route: Route, node: int) -> Place:
    return Place(node, route.node_length(node) / 2.0)


def platforms(route: Route) -> dict[int, tuple[int, float, float, PlatformItem, PlatformItem]]:
    """Every platform whose two items lie on one vector node: first item index →
    (node, offset of the near end, offset of the far end, item, linked item)."""
    by_item: dict[int, tuple[int, float, PlatformItem]] = {}
    for node, positions in item_positions(route).items():
        for p in positions:
            if isinstance(p.item, PlatformItem):
                by_item[p.item.index] = (node, p.offset, p.item)
    out = {}
    for idx, (node, off, item) in by_item.items():
        other = by_item.get(item.linked_item)
        if other is None or other[0] != node or idx > item.linked_item:
            continue
        a, b = sorted((off, other[1]))
        out[idx] = (node, a, b, item, other[2])
    return out


def _end_place(route: Route, end: EndNode) -> Place:
    if not end.pins:
        raise PathBuildError(f"end node {end.index} is connected to nothing")
    vec = route.tdb.nodes[end.pins[0].link]
    if not isinstance(vec, VectorNode):
        raise PathBuildError(f"end node {end.index} does not lead to a vector node")
    length = route.node_length(vec.index)
    margin = min(END_MARGIN_M, length / 2.0)
    at_start = vec.pins and vec.pins[0].link == end.index
    return Place(vec.index, margin if at_start else length - margin)


def locate(route: Route, spec: str) -> Spot:
    """Resolve a place given as text (see the module docstring)."""
    text = spec.strip()
    if not text:
        raise PathBuildError("an empty place was given")
    m = _POINT.match(text)
    if m:
        tx, tz, x, z = (float(g) for g in m.groups())
        if not all(math.isfinite(v) and abs(v) < 1e9 for v in (tx, tz, x, z)):
            raise PathBuildError(f"place {spec!r}: coordinates out of range")
        try:
            t = Traveller.at(route, int(tx), int(tz), x, z)
        except TravellerError as exc:
            raise PathBuildError(f"place {spec!r} is not on the track: {exc}") from None
        return Spot(text, (Place(t.node_index, float(t.offset)),))
    m = _NODE.match(text)
    if m:
        i = int(m.group(1))
        nodes = route.tdb.nodes
        if not 0 < i < len(nodes) or nodes[i] is None:
            raise PathBuildError(f"place {spec!r}: no track node {i} (the route has 1..{len(nodes) - 1})")
        n = nodes[i]
        if isinstance(n, VectorNode):
            length = route.node_length(i)
            off = float(m.group(2)) if m.group(2) else length / 2.0
            if not 0.0 <= off <= length:
                raise PathBuildError(f"place {spec!r}: offset {off:g} is outside node {i} ({length:.1f} m)")
            return Spot(f"node {i}", (Place(i, off),))
        if isinstance(n, EndNode):
            return Spot(f"end node {i}", (_end_place(route, n),))
        if isinstance(n, JunctionNode):
            # A path cannot start or end on a junction: use the trunk side's vector node.
            vec = [p.link for p in n.pins if isinstance(nodes[p.link], VectorNode)]
            if not vec:
                raise PathBuildError(f"junction {i} joins no vector node")
            return Spot(f"junction {i}", tuple(_mid(route, v) for v in vec))
    key = text.casefold()
    plats = platforms(route)
    found = [
        (p[0], (p[1] + p[2]) / 2.0, p[3].platform_name)
        for p in plats.values()
        if p[3].platform_name.casefold() == key
    ]
    if not found:
        found = [
            (p[0], (p[1] + p[2]) / 2.0, p[3].platform_name)
            for p in plats.values()
            if p[3].station.casefold() == key
        ]
    if found:
        return Spot(text, tuple(Place(n, off) for n, off, _ in found))
    names = sorted({p[3].station for p in plats.values()} | {p[3].platform_name for p in plats.values()})
    raise PathBuildError(
        f"place {spec!r} is not a point (TX TZ X Z), a track node or a platform/station "
        f"name; the route's platforms and stations: {'; '.join(repr(n) for n in names[:20]) or 'none'}"
    )


# -- searching ----------------------------------------------------------------------------


def _leg(net, a: Place, direction: int | None, b: Place, reversals: bool):  # noqa: ANN001
    """The shortest way from ``a`` to ``b``: (length, traversals, switches, direction
    at the start, reversed?)."""
    tries = []
    dirs = (1, 0) if direction is None else ((direction, 1 - direction) if reversals else (direction,))
    for d in dirs:
        r = _search(net, a, d, b, MAX_LEG_M)
        if r is not None:
            tries.append((r[0], d, r))
    if not tries:
        return None
    length, d, (_, trav, sw) = min(tries, key=lambda t: t[0])
    if direction is not None and d != direction and not trav:
        return None
    return length, trav, sw, d, direction is not None and d != direction


def build_path(
    route: Route,
    start: str | Spot,
    end: str | Spot,
    via: list[str | Spot] | tuple = (),
    *,
    reversals: bool = False,
    name: str = "",
) -> BuiltPath:
    """The shortest path from ``start`` over ``via`` to ``end``. Without ``reversals``
    the train keeps its direction all the way; with it, it may turn at a via point.
    A station with several platforms picks the one giving the shortest path."""
    if len(via) > MAX_VIA:
        raise PathBuildError(f"at most {MAX_VIA} via points, got {len(via)}")
    spots = [s if isinstance(s, Spot) else locate(route, s) for s in (start, *via, end)]
    net = _net(route)
    best: BuiltPath | None = None
    # Stations: try each combination of candidates (bounded; stations have a few platforms).
    combos: list[list[Place]] = [[]]
    for s in spots:
        combos = [c + [p] for c in combos for p in s.candidates][:256]
    why = ""
    for places in combos:
        got = _build(net, places, reversals)
        if isinstance(got, str):
            why = why or got
            continue
        trav, junctions, at, revs, length = got
        if best is None or length < best.length:
            best = BuiltPath(
                name,
                tuple(places),
                tuple(s.label for s in spots),
                tuple(trav),
                tuple(junctions),
                tuple(at),
                tuple(revs),
                length,
            )
    if best is None:
        raise PathBuildError(
            why
            + (
                ""
                if reversals
                else " (reversals were not allowed: with --reversals the train may turn at a --via point)"
            )
        )
    return best


def _build(net, places: list[Place], reversals: bool):  # noqa: ANN001
    direction: int | None = None
    trav: list[Traversal] = []
    junctions: list[int] = []
    at: list[int] = []
    revs: list[int] = []
    total = 0.0
    for k in range(len(places) - 1):
        a, b = places[k], places[k + 1]
        if a.node == b.node and abs(a.offset - b.offset) < 1e-3:
            return f"points {k} and {k + 1} are the same place"
        found = _leg(net, a, direction, b, reversals and k > 0)
        if found is None:
            return f"no way along the track from point {k} to point {k + 1}"
        length, legtrav, sw, d, turned = found
        if turned:
            revs.append(k)
        total += length
        trav.extend(legtrav)
        for j, _r in sw:
            junctions.append(j)
            at.append(k)
        direction = legtrav[-1].direction if legtrav else d
    return trav, junctions, at, revs, total


# -- writing ------------------------------------------------------------------------------

NONE = "4294967295"
PAT_SIGNATURE = "SIMISA@@@@@@@@@@JINX0P0t______"


def _point(route: Route, p: Place) -> tuple[int, int, float, float, float]:
    loc = Traveller(route, p.node, p.offset).location
    return loc.tile_x, loc.tile_z, loc.x, loc.y, loc.z


def _fmt(v: float) -> str:
    s = f"{v:.6f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def path_document(route: Route, built: BuiltPath, path_id: str) -> Block:
    """The STF tree (root block) of a ``.pat`` file for ``built``."""
    pdps: list[Item] = []
    nodes: list[tuple[int, int]] = []  # (flags, pdp index)

    def add(point: tuple[int, int, float, float, float], junction: bool, flags: int) -> None:
        tx, tz, x, y, z = point
        fl = ["2", "0"] if junction else ["1", "1"]
        pdps.append(Block("TrackPDP", [str(tx), str(tz), _fmt(x), _fmt(y), _fmt(z), *fl]))
        nodes.append((flags, len(pdps) - 1))

    jnodes = route.tdb.nodes
    jk = 0
    for k, place in enumerate(built.places):
        flags = 1 if k in built.reversals else 0
        add(_point(route, place), False, flags)
        # the junctions of leg k, between point k and point k + 1
        while jk < len(built.junctions) and built.junction_at[jk] == k:
            j = jnodes[built.junctions[jk]]
            assert isinstance(j, JunctionNode) and j.uid is not None
            u = j.uid
            add((u.tile_x, u.tile_z, u.x, u.y, u.z), True, 0)
            jk += 1
    items: list = []
    for i, (flags, pdp) in enumerate(nodes):
        nxt = str(i + 1) if i + 1 < len(nodes) else NONE
        items.append(Block("TrPathNode", [f"{flags:08x}", nxt, NONE, str(pdp)]))
    track_path = Block(
        "TrackPath",
        [
            Block("TrPathName", [path_id]),
            Block("Name", [QStr(built.name or path_id)]),
            Block("TrPathStart", [QStr(built.labels[0])]),
            Block("TrPathEnd", [QStr(built.labels[-1])]),
            Block("TrPathNodes", [str(len(nodes)), *items]),
        ],
    )
    return Block("", [Block("Serial", ["1"]), Block("TrackPDPs", pdps), track_path])


def write_path(route: Route, built: BuiltPath, out: str | Path, *, overwrite: bool = False) -> Path:
    """Write ``built`` as a ``.pat`` file (UTF-16LE with BOM, as MSTS writes them),
    atomically; an existing file only with ``overwrite`` (the rule of every writer)."""
    from ..stf.writer import format_stf, write_text_atomic

    target = check_pat_target(out, overwrite)
    doc = path_document(route, built, target.stem)
    write_text_atomic(target, format_stf(doc, signature=PAT_SIGNATURE))
    return target


__all__ = [
    "BuiltPath",
    "PathBuildError",
    "Spot",
    "build_path",
    "check_pat_target",
    "locate",
    "path_document",
    "platforms",
    "write_path",
]
