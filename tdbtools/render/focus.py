"""Framing part of a scene: ``--focus`` specs (a node, an item, an audit finding, a point,
a station name) resolved to the scene points to frame, and the 3-D view's automatic
height exaggeration for the framed track (docs/render.md)."""

from __future__ import annotations

import numpy as np

from ..errors import TdbToolsError
from ..formats.route import Route
from ..formats.tdb import EndNode, JunctionNode
from . import view as V
from .scene import TILE, Scene, to_scene

__all__ = ["FOCUS_RADIUS", "auto_exaggeration", "resolve_focus"]

FOCUS_RADIUS = 150.0  # metres shown around a focused point, at least


def _base_height(scene: Scene, tp: np.ndarray) -> float:
    """The height exaggeration stretches about: the lowest track point inside the
    focus's horizontal box, else of the whole route."""
    if not len(tp):
        return 0.0
    if scene.focus is not None and len(scene.focus):
        b = np.asarray(scene.focus, dtype=np.float64).reshape(-1, 3)
        lo, hi = b[:, :2].min(axis=0), b[:, :2].max(axis=0)
        sel = ((tp[:, :2] >= lo) & (tp[:, :2] <= hi)).all(axis=1)
        if sel.any():
            return float(tp[sel, 2].min())
    return float(tp[:, 2].min())


def auto_exaggeration(scene: Scene, around: np.ndarray | None = None) -> float:
    """The 3-D view's automatic exaggeration (:func:`view.auto_exaggeration`) for the
    track inside the horizontal box of ``around`` (default: the focus, else the whole
    route), from those points' heights and grades."""
    tp = np.asarray(scene.track.points) if scene.track.n_points else np.zeros((0, 3))
    box = scene.focus if around is None else around
    if box is None or not len(tp):
        sel = np.ones(len(tp), dtype=bool)
    else:
        b = np.asarray(box, dtype=np.float64).reshape(-1, 3)
        lo, hi = b[:, :2].min(axis=0), b[:, :2].max(axis=0)
        sel = ((tp[:, :2] >= lo) & (tp[:, :2] <= hi)).all(axis=1)
        if sel.sum() < 2:
            return V.auto_exaggeration(b)
    grades = np.asarray(scene.track.point_data["grade"])[sel] if len(tp) else None
    return V.auto_exaggeration(tp[sel], grades=grades)


def resolve_focus(route: Route, scene: Scene, spec: str, *, audit=None) -> tuple[np.ndarray, str]:
    """Scene points to frame for ``spec``: ``node:N`` or a bare number (a track node),
    ``item:N`` (a track item), an audit finding code (``GAP_IN_NODE``, ``GAP_IN_NODE:2``
    for the 2nd), ``X,Z`` absolute world metres or ``TX,TZ,x,z`` tile coordinates, or a
    station/platform/siding/signal name (case-insensitive, the first match). Returns the
    points (a node's track, or a place and a ring of ``FOCUS_RADIUS`` metres) and a label."""
    spec = spec.strip()
    tr = scene.track
    pts = np.asarray(tr.points) if tr.n_points else np.zeros((0, 3))

    def around(p, label: str, extra: np.ndarray | None = None):
        p = np.asarray(p, dtype=np.float64).reshape(3)
        r = FOCUS_RADIUS
        ring = p + np.array([[-r, -r, 0], [r, r, 0], [-r, r, 0], [r, -r, 0]], dtype=np.float64)
        near = pts[np.hypot(pts[:, 0] - p[0], pts[:, 1] - p[1]) < r] if len(pts) else pts
        parts = [ring, p[None, :], near[:, :] * [1, 1, 1]]
        if extra is not None:
            parts.append(extra)
        return np.vstack(parts), label

    def node_focus(n: int):
        nodes = route.tdb.nodes
        if not (0 < n < len(nodes)) or nodes[n] is None:
            raise TdbToolsError(f"--focus: no track node {n} (nodes 1…{len(nodes) - 1})")
        nd = nodes[n]
        if isinstance(nd, (JunctionNode, EndNode)):
            u = nd.uid
            if u is None:
                raise TdbToolsError(f"--focus: node {n} has no position")
            return around(
                to_scene(u.tile_x * TILE + u.x, u.y, u.tile_z * TILE + u.z, scene.origin)[0], f"node {n}"
            )
        sel = pts[np.asarray(tr.point_data["node"]) == n] if len(pts) else pts
        if len(sel) == 0:
            raise TdbToolsError(f"--focus: node {n} has no drawable track")
        return around(sel.mean(axis=0), f"node {n}", sel)

    low = spec.lower()
    if low.startswith("node:") or spec.isdigit():
        try:
            return node_focus(int(spec.split(":", 1)[-1]))
        except ValueError:
            raise TdbToolsError(f"--focus {spec!r}: node:N needs a number") from None
    if low.startswith("item:"):
        try:
            i = int(spec.split(":", 1)[1])
        except ValueError:
            raise TdbToolsError(f"--focus {spec!r}: item:N needs a number") from None
        for m in scene.markers.values():
            if m.kind != "finding" and m.kind not in ("junction", "end") and i in m.ids:
                return around(m.points[list(m.ids).index(i)], f"item {i}")
        raise TdbToolsError(f"--focus: no drawable track item {i}")
    parts = [p.strip() for p in spec.split(",")]
    if len(parts) in (2, 4):
        try:
            nums = [float(p) for p in parts]
        except ValueError:
            nums = []
        if nums:
            X, Z = (
                (nums[0], nums[1]) if len(nums) == 2 else (nums[0] * TILE + nums[2], nums[1] * TILE + nums[3])
            )
            q = to_scene(X, 0.0, Z, scene.origin)[0]
            if len(pts):
                q[2] = pts[np.argmin(np.hypot(pts[:, 0] - q[0], pts[:, 1] - q[1])), 2]
            return around(q, f"point {spec}")
    code, _, nth = spec.partition(":")
    if code.isupper() and "_" in code:
        if audit is None or audit is False:
            from ..track.audit import audit_route

            audit = audit_route(route)
        elif audit is True:
            from ..track.audit import audit_route

            audit = audit_route(route)
        hits = audit.by_code(code)
        k = int(nth) if nth.isdigit() else 1
        if not hits:
            raise TdbToolsError(
                f"--focus {spec}: the audit finds no {code} in this route "
                f"(it finds: {', '.join(audit.counts) or 'nothing'})"
            )
        if not 1 <= k <= len(hits):
            raise TdbToolsError(f"--focus {spec}: there are {len(hits)} {code} findings")
        f = hits[k - 1]
        if f.location is not None:
            lo = f.location
            p = to_scene(lo.tile_x * TILE + lo.x, lo.y, lo.tile_z * TILE + lo.z, scene.origin)[0]
            return around(p, f"{code} #{k}")
        if f.nodes:
            pts_f, _ = node_focus(int(f.nodes[0]))
            return pts_f, f"{code} #{k}"
        raise TdbToolsError(f"--focus {spec}: that finding has no place in the route")
    for kind in ("platform", "siding", "signal"):
        m = scene.markers[kind]
        for j, i in enumerate(m.ids):
            it = scene.items.get(int(i))
            names = [getattr(it, a, "") for a in ("station", "platform_name", "siding_name", "signal_type")]
            if any(n and n.lower() == low for n in names):
                sel = [
                    m.points[q]
                    for q, i2 in enumerate(m.ids)
                    if any(
                        getattr(scene.items.get(int(i2)), a, "").lower() == low
                        for a in ("station", "platform_name", "siding_name")
                    )
                ]
                return around(np.mean(sel or [m.points[j]], axis=0), spec, np.array(sel).reshape(-1, 3))
    raise TdbToolsError(
        f"--focus {spec!r}: not a node (node:N), an item (item:N), an audit code, "
        "a point (X,Z or TX,TZ,x,z) or a station/platform/siding name of this route"
    )
