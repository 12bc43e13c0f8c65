"""Resolving a ``.pat`` path into the track nodes, directions and switch settings it
needs (docs/formats.md §8).

Each main-chain path node is a world point (its PDP). The first one is where the
rear of the train starts. Between consecutive points the resolver searches the track
network (Dijkstra over (node, direction) states, junctions by their branches) for the
shortest way that follows the track, records every switch the way needs, and turns
around at reversal points. Junction PDPs (flag 2) are snapped, as Open Rails does, to
the nearest junction node on the same tile. Every failure carries a reason a route
builder can act on: a PDP off the track, no way between two points, a link out of
range, conflicting switch settings.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import Diagnostics, TdbToolsError
from ..formats.pat import PathFile, TrackPDP, read_pat
from ..formats.route import Route
from ..formats.tdb import EndNode, JunctionNode, VectorNode
from .spatial import cached

#: A junction PDP further than this from every junction node on its tile is an error.
JUNCTION_SNAP_M = 30.0
#: How far a leg may run, as a multiple of the straight-line distance, before the
#: search gives up (plus a fixed allowance for loops and reversing sidings).
SEARCH_FACTOR = 8.0
SEARCH_EXTRA_M = 20_000.0


class PathError(TdbToolsError, ValueError):
    """A path that cannot be resolved on its route."""


@dataclass(frozen=True, slots=True)
class Place:
    """Where a path point is on the network: a vector node and metres from its start,
    or a junction (``offset`` 0)."""

    node: int
    offset: float
    junction: bool = False
    lateral: float = 0.0  # metres from the centre line (vector nodes)


@dataclass(frozen=True, slots=True)
class Traversal:
    """A run along one vector node: from ``start`` to ``end`` metres (node offsets), in
    ``direction`` (1 = the node's forward direction)."""

    node: int
    direction: int
    start: float
    end: float

    @property
    def length(self) -> float:
        return abs(self.end - self.start)


@dataclass(frozen=True, slots=True)
class Leg:
    """The way from one path point to the next."""

    from_point: int  # index in the path's main chain
    to_point: int
    traversals: tuple[Traversal, ...]
    switches: tuple[tuple[int, int], ...]  # (junction node, selected route) in the order met
    length: float


@dataclass(frozen=True, slots=True)
class ResolvedPath:
    path: str
    name: str
    points: tuple[Place | None, ...]  # one per main-chain node
    legs: tuple[Leg, ...]
    reversals: tuple[int, ...]  # main-chain positions where the train turns
    start_direction: int | None  # direction of the rear traveller at the start
    #: Switch settings in the order the path meets them; a junction may appear twice
    #: with different routes (e.g. around a reversal): the switch is thrown between.
    switches: tuple[tuple[int, int], ...] = ()
    problems: tuple[str, ...] = ()
    #: The path node (index in the file) the first problem is about, None if none is.
    problem_node: int | None = None

    @property
    def ok(self) -> bool:
        return not self.problems and len(self.legs) == max(len(self.points) - 1, 0)

    def _facts(self) -> list[tuple[str, object]]:
        return [
            ("path", self.path),
            ("name", self.name),
            ("ok", self.ok),
            ("length_m", round(self.length, 3)),
            ("legs", len(self.legs)),
            ("reversals", len(self.reversals)),
            ("switches", len(self.switches)),
            ("problems", list(self.problems)[:3]),
        ]

    def __repr__(self) -> str:
        from .._display import short_repr

        return short_repr("ResolvedPath", self._facts())

    def _repr_html_(self) -> str:
        from .._display import html_summary

        return html_summary(f"Path {self.name}", self._facts())

    @property
    def length(self) -> float:
        return sum(leg.length for leg in self.legs)

    def node_sequence(self) -> list[tuple[int, int]]:
        """(vector node, direction) in the order driven, consecutive repeats merged."""
        out: list[tuple[int, int]] = []
        for leg in self.legs:
            for t in leg.traversals:
                if not out or out[-1] != (t.node, t.direction):
                    out.append((t.node, t.direction))
        return out

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "name": self.name,
            "ok": self.ok,
            "length_m": round(self.length, 3),
            "start_direction": self.start_direction,
            "reversals": list(self.reversals),
            "switches": [list(x) for x in self.switches],
            "nodes": [list(x) for x in self.node_sequence()],
            "problems": list(self.problems),
        }


# -- locating points ----------------------------------------------------------------------


def _abs(tile_x: float, tile_z: float, x: float, z: float) -> tuple[float, float]:
    return tile_x * 2048.0 + x, tile_z * 2048.0 + z


def _junction_table(route: Route) -> tuple[np.ndarray, np.ndarray]:
    """(junction node ids, their world x/y/z), built once per route (a scenario of many
    trains resolves many paths on one route)."""
    return cached(route, "paths-junctions", lambda: _build_junction_table(route))


def _build_junction_table(route: Route) -> tuple[np.ndarray, np.ndarray]:
    ids, xyz = [], []
    for n in route.tdb.nodes[1:]:
        if isinstance(n, JunctionNode) and n.uid is not None:
            u = n.uid
            X, Z = _abs(u.tile_x, u.tile_z, u.x, u.z)
            ids.append(n.index)
            xyz.append((X, u.y, Z))
    ids_a = np.array(ids, dtype=np.int64)
    xyz_a = np.array(xyz, dtype=np.float64).reshape(-1, 3)
    ids_a.flags.writeable = False
    xyz_a.flags.writeable = False
    return ids_a, xyz_a


def locate_pdp(route: Route, pdp: TrackPDP, junctions=None) -> tuple[Place | None, str]:
    """The network place of a PDP, or None with the reason."""
    if not all(math.isfinite(v) and abs(v) < 1e12 for v in (pdp.x, pdp.y, pdp.z)):
        return None, f"PDP coordinates out of range (x {pdp.x:g}, y {pdp.y:g}, z {pdp.z:g})"
    if pdp.is_junction:
        ids, xyz = junctions if junctions is not None else _junction_table(route)
        if len(ids) == 0:
            return None, "junction PDP, but the route has no junction nodes"
        X, Z = _abs(pdp.tile_x, pdp.tile_z, pdp.x, pdp.z)
        d = np.sqrt((xyz[:, 0] - X) ** 2 + (xyz[:, 1] - pdp.y) ** 2 + (xyz[:, 2] - Z) ** 2)
        i = int(np.argmin(d))
        if d[i] > JUNCTION_SNAP_M:
            return None, f"junction PDP is {d[i]:.1f} m from the nearest junction node ({int(ids[i])})"
        return Place(int(ids[i]), 0.0, junction=True), ""
    from .traveller import Traveller, TravellerError

    try:
        t = Traveller.at(route, pdp.tile_x, pdp.tile_z, pdp.x, pdp.z)
    except TravellerError as exc:
        return None, f"PDP is not on the track: {exc}"
    return Place(t.node_index, float(t.offset), lateral=float(getattr(t, "lateral", 0.0))), ""


# -- searching the network ----------------------------------------------------------------


@dataclass(slots=True)
class _Net:
    route: Route
    lengths: np.ndarray

    def node(self, i: int):
        nodes = self.route.tdb.nodes
        return nodes[i] if 0 < i < len(nodes) else None


def _net(route: Route) -> _Net:
    """The search network of ``route`` (its node-length table is built once per route)."""
    return _Net(route, cached(route, "paths-node-lengths", lambda: _node_lengths(route)))


def _node_lengths(route: Route) -> np.ndarray:
    n = len(route.tdb.nodes)
    lengths = np.zeros(n)
    for node in route.tdb.nodes[1:]:
        if isinstance(node, VectorNode):
            lengths[node.index] = route.node_length(node.index)
    lengths.flags.writeable = False
    return lengths


def _exits(net: _Net, node: int, direction: int):
    """Where a traveller leaving vector ``node`` in ``direction`` can go next:
    (vector node, direction, [(junction, route), ...], junctions passed) per choice.
    Junctions are zero length; the choice of branch is recorded as a switch."""
    here = net.node(node)
    if not isinstance(here, VectorNode):
        return
    pin_i = 1 if direction == 1 else 0
    if pin_i >= len(here.pins):
        return
    pin = here.pins[pin_i]
    nxt = net.node(pin.link)
    if nxt is None:
        return
    if isinstance(nxt, VectorNode):
        yield pin.link, 1 if pin.direction > 0 else 0, (), ()
    elif isinstance(nxt, JunctionNode):
        j = nxt.index
        if pin.direction > 0:  # entering from the trunk: either branch
            for route_k in (0, 1):
                if 1 + route_k < len(nxt.pins):
                    p = nxt.pins[1 + route_k]
                    dest = net.node(p.link)
                    if isinstance(dest, VectorNode):
                        yield p.link, 1 if p.direction > 0 else 0, ((j, route_k),), (j,)
        else:  # entering from a branch: out through the trunk, the switch set to that branch
            entry = None
            for k, p in enumerate(nxt.pins):
                if k > 0 and p.link == node:
                    entry = k
            if entry is None or not nxt.pins:
                return
            p = nxt.pins[0]
            dest = net.node(p.link)
            if isinstance(dest, VectorNode):
                yield p.link, 1 if p.direction > 0 else 0, ((j, entry - 1),), (j,)
    elif isinstance(nxt, EndNode):
        return


def _search(net: _Net, start: Place, direction: int, target: Place, limit: float):
    """Shortest way from ``start`` (moving in ``direction``) to ``target``. Returns
    (length, traversals, switches) or None."""
    L = net.lengths
    # Same node, target ahead: no search needed.
    if not start.junction and not target.junction and start.node == target.node:
        ahead = target.offset - start.offset if direction == 1 else start.offset - target.offset
        if ahead >= -1e-6:
            return ahead, [Traversal(start.node, direction, start.offset, target.offset)], []
    if start.junction:
        return None
    first_len = (L[start.node] - start.offset) if direction == 1 else start.offset
    # States: (vector node, direction entered with), cost = metres from the start point
    # to the end of that node. Arrivals at the target are queued too, so the first one
    # popped is the shortest.
    heap: list[tuple] = [(first_len, 0, start.node, direction, None)]
    prev: dict[tuple[int, int], tuple] = {(start.node, direction): (None, (), ())}
    best = {(start.node, direction): first_len}
    counter = 1
    while heap:
        cost, _, node, d, arrival = heapq.heappop(heap)
        if cost > limit:
            break
        if arrival is not None:
            final, sw = arrival
            return _unwind(net, prev, start, direction, (node, d), cost, final, sw, target)
        if cost > best.get((node, d), math.inf) + 1e-9:
            continue
        base = cost
        for nxt, nd, sw, passed in _exits(net, node, d):
            if target.junction and target.node in passed:
                # Arriving at the junction sets nothing yet: the next leg, which goes
                # through it, decides the branch.
                heapq.heappush(heap, (base, counter, node, d, (None, ())))
                counter += 1
                continue
            if not target.junction and nxt == target.node:
                extra = target.offset if nd == 1 else L[nxt] - target.offset
                heapq.heappush(heap, (base + max(extra, 0.0), counter, node, d, ((nxt, nd), sw)))
                counter += 1
            key = (nxt, nd)
            ncost = base + L[nxt]
            if ncost < best.get(key, math.inf):
                best[key] = ncost
                prev[key] = ((node, d), sw, passed)
                heapq.heappush(heap, (ncost, counter, nxt, nd, None))
                counter += 1
    return None


def _unwind(net: _Net, prev, start: Place, direction: int, last, total, final, final_sw, target):
    L = net.lengths
    chain = []
    switches: list[tuple[int, int]] = list(final_sw)
    key = last
    while key is not None:
        parent, sw, _passed = prev[key]
        chain.append(key)
        switches = list(sw) + switches
        key = parent
    chain.reverse()
    trav = []
    for i, (node, d) in enumerate(chain):
        a = start.offset if i == 0 else (0.0 if d == 1 else float(L[node]))
        b = float(L[node]) if d == 1 else 0.0
        trav.append(Traversal(node, d, a, b))
    if final is not None:
        node, d = final
        a = 0.0 if d == 1 else float(L[node])
        trav.append(Traversal(node, d, a, target.offset))
    return float(total), trav, switches


def find_path_file(route: Route, name: str | Path) -> Path:
    """A ``.pat`` given as a file, or by name in the route's PATHS folder (``"10.pat"``,
    ``"10"``; any case), as every command that takes ``--path`` finds it."""
    from .._fs import is_file
    from ..stf import resolve_case_insensitive

    p = Path(name)
    paths = Path(route.folder) / "PATHS"
    cands = [p] if p.is_absolute() else [p, paths / p]
    if not p.suffix:
        cands.append(paths / (p.name + ".pat"))
    for c in cands:
        r = resolve_case_insensitive(c)
        if is_file(r):
            return r
    raise PathError(f"{str(name)!r} is neither a file nor a path in {str(paths)!r}")


def resolve_path(route: Route, path: PathFile | str | Path) -> ResolvedPath:
    """Resolve a path (a :class:`PathFile`, a .pat file, or the name of one in the
    route's PATHS folder) on ``route``."""
    if not isinstance(path, PathFile):
        path = read_pat(find_path_file(route, path), diagnostics=Diagnostics(strict=False))
    chain = path.main_chain()
    problems: list[str] = []
    bad: list[int] = []  # the path node of each problem that is about one
    if not chain.ok:
        problems.append(f"main chain: {chain.problem}")
        if chain.at is not None:
            bad.append(chain.at)
    nodes = [path.nodes[i] for i in chain]
    junctions = _junction_table(route)
    places: list[Place | None] = []
    for k, pn in enumerate(nodes):
        pdp = path.pdp(pn)
        if pdp is None:
            places.append(None)
            problems.append(f"path node {list(chain)[k]}: PDP index {pn.pdp_index} does not exist")
            bad.append(list(chain)[k])
            continue
        place, why = locate_pdp(route, pdp, junctions)
        places.append(place)
        if place is None:
            problems.append(f"path node {list(chain)[k]} (PDP {pn.pdp_index}): {why}")
            bad.append(list(chain)[k])
    reversals = tuple(k for k, pn in enumerate(nodes) if pn.is_reversal and 0 < k < len(nodes) - 1)
    legs: list[Leg] = []
    switches: list[tuple[int, int]] = []
    start_dir: int | None = None
    if problems or len(places) < 2:
        if len(places) < 2 and not problems:
            problems.append("the path has fewer than two points")
        return ResolvedPath(
            path.path,
            path.name,
            tuple(places),
            (),
            reversals,
            None,
            (),
            tuple(problems),
            bad[0] if bad else None,
        )
    net = _net(route)
    direction: int | None = None
    carried: Place | None = None  # where the last leg ended, when it ended at a junction
    for k in range(len(places) - 1):
        a, b = places[k], places[k + 1]
        assert a is not None and b is not None
        if carried is not None:
            a = carried
        elif a.junction:
            a = _leave_junction(net, a)
        pa, pb = _point_xz(path, nodes[k]), _point_xz(path, nodes[k + 1])
        limit = SEARCH_FACTOR * math.dist(pa, pb) + SEARCH_EXTRA_M
        if direction is None:
            # The first point is the rear of the train: face the next point, trying both
            # ways and keeping the shorter one that exists (Open Rails does the same).
            tries = [(d, _search(net, a, d, b, limit)) for d in (1, 0)]
            tries = [(d, r) for d, r in tries if r is not None]
            if not tries:
                problems.append(f"no way along the track from point {k} to point {k + 1}")
                bad.append(list(chain)[k + 1])
                break
            direction, found = min(tries, key=lambda t: t[1][0])
            start_dir = direction
        else:
            found = _search(net, a, direction, b, limit)
            if found is None:
                problems.append(
                    f"no way along the track from point {k} to point {k + 1} "
                    f"(moving {'forward' if direction else 'backward'} on node {a.node})"
                )
                bad.append(list(chain)[k + 1])
                break
        length, trav, sw = found
        switches.extend(sw)
        legs.append(Leg(k, k + 1, tuple(trav), tuple(sw), float(length)))
        if trav:
            direction = trav[-1].direction
            # A leg to a junction ends at the end of the node before it; the next leg
            # goes on from there, through the junction.
            carried = Place(trav[-1].node, trav[-1].end) if b.junction else None
        if (k + 1) in reversals:
            direction = 1 - direction
    return ResolvedPath(
        path.path,
        path.name,
        tuple(places),
        tuple(legs),
        reversals,
        start_dir,
        tuple(switches),
        tuple(problems),
        bad[0] if bad else None,
    )


def _point_xz(path: PathFile, pn) -> tuple[float, float]:  # noqa: ANN001
    p = path.pdp(pn)
    return _abs(p.tile_x, p.tile_z, p.x, p.z) if p is not None else (0.0, 0.0)


def _leave_junction(net: _Net, at: Place) -> Place:
    """A point on the vector node beside a junction, from which to search onwards:
    the trunk node's junction end."""
    j = net.node(at.node)
    if isinstance(j, JunctionNode) and j.pins:
        p = j.pins[0]
        n = net.node(p.link)
        if isinstance(n, VectorNode):
            # pin.direction 1 means that node is entered at its start: the junction is there.
            return Place(p.link, 0.0 if p.direction > 0 else float(net.lengths[p.link]))
    return at


def resolve_route_paths(
    route: Route, folder: str | Path | None = None, *, progress: Callable[[int, int], None] | None = None
) -> list[tuple[str, ResolvedPath | None, str]]:
    """Resolve every .pat in the route's PATHS folder: (file name, result or None, error).
    ``progress(done, total)`` is called before the first and after each file."""
    base = Path(folder) if folder is not None else Path(route.folder) / "PATHS"
    from ..stf import resolve_case_insensitive

    base = resolve_case_insensitive(base)
    out: list[tuple[str, ResolvedPath | None, str]] = []
    files = sorted(p for p in base.iterdir() if p.suffix.lower() == ".pat") if base.is_dir() else []
    for k, f in enumerate(files):
        if progress is not None:
            progress(k, len(files))
        try:
            out.append((f.name, resolve_path(route, f), ""))
        except TdbToolsError as exc:
            out.append((f.name, None, str(exc).splitlines()[0]))
    if progress is not None:
        progress(len(files), len(files))
    return out
