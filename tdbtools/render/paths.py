"""Paths over the map, as Open Rails' TrackViewer draws them (docs/render.md §10): the
track a ``.pat`` path runs over, in the path's own colour, with the way it is driven
(arrowheads), its start, end, reversal and wait points, and, for an activity's
services, the stations each service is booked at. numpy only; the drawing is in
scene.py, sceneview.py and html.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import TdbToolsError
from ..formats.route import Route
from ..formats.tdb import EndNode, JunctionNode
from ..stf import resolve_case_insensitive

#: One colour per path, repeated with a dash pattern past the last (the legend names each).
PATH_COLORS = (
    "#e6194b",
    "#3cb44b",
    "#4363d8",
    "#f58231",
    "#911eb4",
    "#008080",
    "#9a6324",
    "#800000",
    "#000075",
    "#808000",
)
#: Kinds of path point, in drawing order, with their legend text.
POINT_KINDS = {
    "start": "path start",
    "end": "path end",
    "reversal": "reversal point",
    "wait": "wait point",
    "station": "booked stop",
}
TILE = 2048.0


@dataclass(eq=False)
class PathOverlay:
    """A path in scene coordinates: ``line`` (n, 3) with NaN rows between pieces, the
    way it is driven as ``arrows`` (m, 2, 3): (position, unit direction), and
    ``points``: (kind, scene point, label) of its start, end, reversals, waits and
    booked stops. ``problems``: what could not be resolved (the path is drawn as far
    as it resolved)."""

    name: str
    color: str
    line: np.ndarray
    arrows: np.ndarray
    points: list[tuple[str, np.ndarray, str]] = field(default_factory=list)
    length: float = 0.0
    problems: tuple[str, ...] = ()


def find_path_file(route: Route, spec: str | Path) -> Path:
    """``spec`` as a file, else ``PATHS/spec`` (any case, ``.pat`` added) of the route.
    Only a plain file name is looked up in the route."""
    p = Path(spec)
    if p.is_file():
        return p
    name = p.name if p.suffix.lower() == ".pat" else p.name + ".pat"
    if str(p) != p.name or name in (".pat", "..pat"):
        raise TdbToolsError(f"--path {spec}: no such file")
    q = resolve_case_insensitive(Path(route.folder) / "PATHS" / name)
    if not q.is_file():
        raise TdbToolsError(f"--path {spec}: no such file, nor {name} in the route's PATHS folder")
    return q


class _NodeTrack:
    """The scene's sampled track of each vector node: offsets and points."""

    def __init__(self, scene) -> None:  # noqa: ANN001
        tr = scene.track
        if not tr.n_points:
            self.slices: dict[int, slice] = {}
            return
        node = np.asarray(tr.point_data["node"])
        self.off = np.asarray(tr.point_data["offset_m"], dtype=np.float64)
        self.pts = np.asarray(tr.points, dtype=np.float64)
        cut = np.flatnonzero(node[1:] != node[:-1]) + 1
        starts = np.concatenate([[0], cut])
        ends = np.concatenate([cut, [len(node)]])
        self.slices = {int(node[a]): slice(int(a), int(b)) for a, b in zip(starts, ends)}

    def piece(self, node: int, a: float, b: float) -> np.ndarray:
        """Points of ``node`` from offset ``a`` to ``b`` (either way), ends interpolated."""
        sl = self.slices.get(int(node))
        if sl is None:
            return np.zeros((0, 3))
        off, pts = self.off[sl], self.pts[sl]
        lo, hi = min(a, b), max(a, b)
        inner = (off > lo) & (off < hi)

        def at(s: float) -> np.ndarray:
            return np.array([np.interp(s, off, pts[:, i]) for i in range(3)])

        out = np.vstack([at(lo)[None, :], pts[inner], at(hi)[None, :]])
        return out if a <= b else out[::-1]

    def at(self, node: int, s: float) -> np.ndarray | None:
        p = self.piece(node, s, s)
        return p[0] if len(p) else None


def _arrows(line: np.ndarray, every: float) -> np.ndarray:
    """(position, unit direction) every ``every`` metres along each piece of ``line``."""
    out = []
    for piece in np.split(line, np.flatnonzero(np.isnan(line[:, 0]))):
        piece = piece[np.isfinite(piece[:, 0])]
        if len(piece) < 2:
            continue
        d = np.diff(piece[:, :2], axis=0)
        seg = np.hypot(d[:, 0], d[:, 1])
        cum = np.concatenate([[0.0], np.cumsum(seg)])
        total = float(cum[-1])
        if total < 1.0:
            continue
        marks = np.arange(0.5 * min(every, total), total, every)
        for s in marks:
            j = min(int(np.searchsorted(cum, s, side="right")) - 1, len(seg) - 1)
            while j > 0 and seg[j] < 1e-6:
                j -= 1
            if seg[j] < 1e-6:
                continue
            t = (s - cum[j]) / seg[j]
            p = piece[j] + t * (piece[j + 1] - piece[j])
            u = np.array([d[j, 0] / seg[j], d[j, 1] / seg[j], 0.0])
            out.append((p, u))
    return np.array(out, dtype=np.float64).reshape(-1, 2, 3)


def path_overlay(route: Route, scene, path, *, name: str = "", index: int = 0, stops=()):  # noqa: ANN001
    """A :class:`PathOverlay` of ``path`` (a resolved path, a :class:`PathFile` or a .pat
    file) on ``scene``, in the ``index``-th path colour. ``stops``: booked stops as
    (platform item id, label) pairs."""
    from ..track.paths import ResolvedPath, resolve_path

    res = path if isinstance(path, ResolvedPath) else resolve_path(route, path)
    tracks = _NodeTrack(scene)
    pieces: list[np.ndarray] = []
    for leg in res.legs:
        leg_pts = [tracks.piece(t.node, t.start, t.end) for t in leg.traversals]
        leg_pts = [p for p in leg_pts if len(p)]
        if leg_pts:
            pieces.append(np.vstack(leg_pts))
    line = (
        np.vstack([np.vstack([p, np.full((1, 3), np.nan)]) for p in pieces])[:-1]
        if pieces
        else np.zeros((0, 3))
    )
    every = max(50.0, res.length / 25.0) if res.length > 0 else 50.0
    ov = PathOverlay(
        name or res.name or Path(res.path).stem,
        PATH_COLORS[index % len(PATH_COLORS)],
        line,
        _arrows(line, every) if len(line) else np.zeros((0, 2, 3)),
        length=float(res.length),
        problems=tuple(res.problems),
    )
    pf = None
    if not isinstance(path, ResolvedPath):
        from ..errors import Diagnostics
        from ..formats.pat import PathFile, read_pat

        pf = path if isinstance(path, PathFile) else read_pat(path, diagnostics=Diagnostics(strict=False))
    chain = list(pf.main_chain()) if pf is not None else []
    n = len(res.points)
    for j, place in enumerate(res.points):
        if place is None:
            continue
        if place.junction:
            nd = route.tdb.nodes[place.node]
            u = nd.uid if isinstance(nd, (JunctionNode, EndNode)) else None
            if u is None:
                continue
            X, Z = u.tile_x * TILE + u.x, u.tile_z * TILE + u.z
            p = np.array([X - scene.origin[0], Z - scene.origin[1], u.y])
        else:
            q = tracks.at(place.node, place.offset)
            if q is None:
                continue
            p = q
        pn = pf.nodes[chain[j]] if pf is not None and j < len(chain) else None
        if j == 0:
            ov.points.append(("start", p, f"{ov.name}: start"))
        elif j == n - 1:
            ov.points.append(("end", p, f"{ov.name}: end"))
        elif j in res.reversals:
            ov.points.append(("reversal", p, "reverse"))
        elif pn is not None and pn.is_waiting:
            w = pn.wait_seconds
            ov.points.append(("wait", p, f"wait {w} s" if w is not None and w < 30000 else "wait"))
    if stops:
        from ..physics.activity import route_platforms

        plats = route_platforms(route)
        for pid, label in stops:
            pl = plats.get(int(pid))
            if pl is None:
                continue
            q = tracks.at(pl.node, 0.5 * (pl.near + pl.far))
            if q is not None:
                ov.points.append(("station", q, label or pl.station))
    return ov


def activity_overlays(route: Route, scene, act_path: str | Path, *, first: int = 0) -> list[PathOverlay]:  # noqa: ANN001
    """One overlay per service of an activity (the player's first), each with the
    stations it is booked at (arrival time when the file gives one); colours from the
    ``first``-th on."""
    from ..physics.activity import clock, plan_activity, route_platforms

    plan = plan_activity(act_path, route_folder=route.folder)
    plats = route_platforms(route)
    out: list[PathOverlay] = []
    for pt in plan.trains:
        f = resolve_case_insensitive(Path(plan.route_folder) / "PATHS" / f"{pt.service.path_id}.pat")
        if not f.is_file():
            raise TdbToolsError(f"service {pt.name!r}: path {pt.service.path_id}.pat not found")
        stops = []
        for s in pt.stops:
            pl = plats.get(int(s.platform_id))
            at = f" {clock(s.arrival)}" if s.arrival is not None else ""
            stops.append((s.platform_id, f"{pl.station if pl else s.platform_id}{at}"))
        out.append(path_overlay(route, scene, f, name=pt.name, index=first + len(out), stops=stops))
    return out


def overlays(route: Route, scene, specs) -> tuple[PathOverlay, ...]:  # noqa: ANN001
    """Overlays of ``specs``: .pat files (or names in the route's PATHS folder) and .act
    activities (every service's path), each path in its own colour."""
    out: list[PathOverlay] = []
    for spec in specs:
        if str(spec).lower().endswith(".act"):
            out += activity_overlays(route, scene, spec, first=len(out))
        else:
            out.append(path_overlay(route, scene, find_path_file(route, spec), index=len(out)))
    return tuple(out)


__all__ = [
    "PATH_COLORS",
    "POINT_KINDS",
    "PathOverlay",
    "activity_overlays",
    "find_path_file",
    "overlays",
    "path_overlay",
]
