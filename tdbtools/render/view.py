"""Cameras, framing, colour limits and label placement for route pictures, in numpy only
(no VTK here, so the maths can be tested without a renderer). See docs/render.md §2–§4.

Scene frame: x east, y north, z up (metres). Pixel coordinates: x from the left,
y from the bottom of the window (VTK's display coordinates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

VIEWS = ("map", "3d")
#: Fraction of the window kept free on each side (left, right, bottom, top): the bottom
#: holds the colour bar and scale bar, the top the title.
MARGINS = (0.05, 0.05, 0.14, 0.09)
VIEW_ANGLE = 30.0  # vertical field of view of the 3-D view (degrees)
ELEVATION = 32.0  # how far above the horizon the 3-D view looks down (degrees)

__all__ = [
    "Camera",
    "VIEWS",
    "MARGINS",
    "frame",
    "project",
    "nice_length",
    "robust_limits",
    "grade_limits",
    "auto_exaggeration",
    "place_labels",
    "exaggerate",
]


@dataclass(frozen=True, slots=True)
class Camera:
    """A VTK-style camera: ``parallel`` cameras show ``2·parallel_scale`` metres of
    height; perspective ones a vertical field of ``view_angle`` degrees."""

    position: tuple[float, float, float]
    focal_point: tuple[float, float, float]
    up: tuple[float, float, float]
    parallel: bool
    parallel_scale: float = 1.0
    view_angle: float = VIEW_ANGLE

    @property
    def distance(self) -> float:
        return float(np.linalg.norm(np.subtract(self.position, self.focal_point)))

    def metres_per_pixel(self, height_px: int) -> float:
        """Size of one pixel at the focal point."""
        half = (
            self.parallel_scale
            if self.parallel
            else self.distance * math.tan(math.radians(self.view_angle) / 2)
        )
        return 2.0 * half / max(height_px, 1)


def _basis(back: np.ndarray, up: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    back = back / np.linalg.norm(back)
    right = np.cross(up, back)
    if np.linalg.norm(right) < 1e-9:  # looking along "up": pick north as up
        right = np.cross(np.array([0.0, 1.0, 0.0]), back)
    right = right / np.linalg.norm(right)
    true_up = np.cross(back, right)
    return right, true_up, back


def project(camera: Camera, points: np.ndarray, window_size: tuple[int, int]) -> np.ndarray:
    """Pixel coordinates (n, 2) of scene points (n, 3) seen by ``camera`` in a window of
    ``window_size`` (width, height). Points behind a perspective camera get NaN."""
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    w, h = window_size
    pos, foc = np.asarray(camera.position), np.asarray(camera.focal_point)
    right, up, back = _basis(pos - foc, np.asarray(camera.up, dtype=np.float64))
    rel = pts - pos
    u, v, depth = rel @ right, rel @ up, -(rel @ back)
    ty = camera.parallel_scale if camera.parallel else math.tan(math.radians(camera.view_angle) / 2)
    tx = ty * w / h
    if camera.parallel:
        nx, ny = u / tx, v / ty
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            nx = np.where(depth > 1e-9, u / (depth * tx), np.nan)
            ny = np.where(depth > 1e-9, v / (depth * ty), np.nan)
    return np.column_stack([(nx + 1.0) * 0.5 * w, (ny + 1.0) * 0.5 * h])


def _view_direction(points: np.ndarray, view: str) -> tuple[np.ndarray, np.ndarray]:
    """(back, up): the direction from the focal point to the camera, and up."""
    if view == "map":
        return np.array([0.0, 0.0, 1.0]), np.array([0.0, 1.0, 0.0])
    xy = points[:, :2] - points[:, :2].mean(axis=0)
    # Look across the route's long axis (seen broadside), from its southern side.
    if len(xy) >= 2 and np.ptp(xy, axis=0).max() > 0:
        _w, vec = np.linalg.eigh(xy.T @ xy)
        axis = vec[:, -1]
    else:
        axis = np.array([1.0, 0.0])
    side = np.array([axis[1], -axis[0]])
    if side[1] > 0 or (abs(side[1]) < 1e-9 and side[0] > 0):
        side = -side
    # Turned 20° off broadside so that the depth of the route shows.
    a = math.radians(20.0)
    side = np.array(
        [side[0] * math.cos(a) - side[1] * math.sin(a), side[0] * math.sin(a) + side[1] * math.cos(a)]
    )
    el = math.radians(ELEVATION)
    back = np.array([side[0] * math.cos(el), side[1] * math.cos(el), math.sin(el)])
    return back, np.array([0.0, 0.0, 1.0])


def frame(
    points: np.ndarray,
    view: str,
    window_size: tuple[int, int],
    *,
    margins: tuple[float, float, float, float] = MARGINS,
    min_extent: float = 50.0,
    direction: tuple[float, float, float] | None = None,
) -> Camera:
    """The camera of ``view`` ("map": top-down, north up, parallel; "3d": perspective from
    above one side) that shows every point of ``points`` (n, 3) inside the window less
    ``margins`` (left, right, bottom, top fractions), filling it in one direction.
    ``min_extent`` metres: a single point or a tiny place is shown at least this wide.
    ``direction``: the 3-D view's direction from the focal point to the camera, instead
    of the one chosen from the points (keeps a moving camera steady)."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, not {view!r}")
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    pts = pts[np.isfinite(pts).all(axis=1)]
    if len(pts) == 0:
        pts = np.zeros((1, 3))
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    centre = 0.5 * (lo + hi)
    if max(hi[0] - lo[0], hi[1] - lo[1]) < min_extent:  # pad with a ring around the centre
        r = 0.5 * min_extent
        ring = centre + np.array([[-r, -r, 0], [r, r, 0], [-r, r, 0], [r, -r, 0]], dtype=np.float64)
        pts = np.vstack([pts, ring])
    w, h = window_size
    aspect = w / h
    ml, mr, mb, mt = margins
    # allowed NDC box
    x0, x1, y0, y1 = -1 + 2 * ml, 1 - 2 * mr, -1 + 2 * mb, 1 - 2 * mt
    back, up = _view_direction(pts, view)
    if direction is not None and view == "3d":
        back = np.asarray(direction, dtype=np.float64)
    right, tup, back = _basis(back, up)
    rel = pts - centre
    u, v, wd = rel @ right, rel @ tup, rel @ back
    if view == "map":
        # parallel: NDC = (u − a)/(aspect·s), (v − b)/s; solve for the tightest s, then centre
        su = (u.max() - u.min()) / (aspect * (x1 - x0))
        sv = (v.max() - v.min()) / (y1 - y0)
        s = max(su, sv, 1e-6)
        a = 0.5 * (u.max() + u.min()) - 0.5 * (x0 + x1) * aspect * s
        b = 0.5 * (v.max() + v.min()) - 0.5 * (y0 + y1) * s
        foc = centre + a * right + b * tup
        dist = max(float(np.ptp(wd)) * 2.0, 10.0 * s, 100.0)
        return Camera(tuple(foc + dist * back), tuple(foc), tuple(tup), True, float(s))
    ty = math.tan(math.radians(VIEW_ANGLE) / 2)
    tx = ty * aspect
    hx, hy = 0.5 * (x1 - x0), 0.5 * (y1 - y0)
    cx, cy = 0.5 * (x0 + x1), 0.5 * (y0 + y1)
    a = b = 0.0
    d = 0.0
    for _ in range(6):
        d = float(np.max(wd + np.maximum(np.abs(u - a) / (tx * hx), np.abs(v - b) / (ty * hy))))
        depth = d - wd
        nx, ny = (u - a) / (depth * tx), (v - b) / (depth * ty)
        # pan so that the projected extent is centred in the allowed box
        a += (0.5 * (nx.max() + nx.min()) - cx) * d * tx
        b += (0.5 * (ny.max() + ny.min()) - cy) * d * ty
    for _ in range(60):  # make sure: every point inside, whatever the iteration left
        depth = d - wd
        nx, ny = (u - a) / (depth * tx), (v - b) / (depth * ty)
        if (depth > 0).all() and nx.min() >= x0 and nx.max() <= x1 and ny.min() >= y0 and ny.max() <= y1:
            break
        d *= 1.05
    foc = centre + a * right + b * tup
    return Camera(tuple(foc + d * back), tuple(foc), tuple(tup), False, 1.0, VIEW_ANGLE)


def exaggerate(points: np.ndarray, factor: float, base: float) -> np.ndarray:
    """Heights stretched by ``factor`` about ``base`` (a copy)."""
    out = np.array(points, dtype=np.float64, copy=True).reshape(-1, 3)
    out[:, 2] = base + (out[:, 2] - base) * factor
    return out


#: The steepest slope an exaggerated grade may be drawn at (rise over run): the 98th
#: percentile of |grade| times the exaggeration stays under it (docs/render.md §3).
MAX_DRAWN_SLOPE = 0.35


def auto_exaggeration(
    points: np.ndarray,
    *,
    target: float = 0.12,
    limit: float = 200.0,
    grades=None,
    max_slope: float = MAX_DRAWN_SLOPE,
) -> float:
    """A vertical exaggeration that makes the height range (2nd–98th percentile) of
    ``points`` ``target`` of their horizontal extent, between 1 and ``limit``; with
    ``grades`` (‰), also no more than makes the 98th percentile of |grade| look
    ``max_slope`` steep, so that a flat route's bridges and dips do not turn into
    spikes (and a 600 m window of a follow view keeps its cars on the track)."""
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    if len(pts) < 2:
        return 1.0
    rise = float(np.subtract(*np.percentile(pts[:, 2], [98, 2])))
    span = float(np.ptp(pts[:, :2], axis=0).max())
    if rise <= 0.01 or span <= 0:
        return 1.0
    e = min(target * span / rise, limit)
    if grades is not None:
        g = np.abs(np.asarray(grades, dtype=np.float64).ravel())
        g = g[np.isfinite(g)]
        if len(g):
            g98 = float(np.percentile(g, 98)) / 1000.0
            if g98 > 1e-6:
                e = min(e, max_slope / g98)
    return float(max(e, 1.0))


def nice_length(x: float) -> float:
    """The largest 1, 2 or 5 × 10ⁿ not above ``x`` (scale bars, colour limits)."""
    if not (x > 0 and math.isfinite(x)):
        return 0.0
    e = 10.0 ** math.floor(math.log10(x))
    for m in (5.0, 2.0, 1.0):
        if m * e <= x * (1 + 1e-9):
            return m * e
    return e


def _nice_up(x: float) -> float:
    e = 10.0 ** math.floor(math.log10(x))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        if m * e >= x * (1 - 1e-9):
            return m * e
    return 10.0 * e


def robust_limits(
    values, *, symmetric: bool = False, floor: float = 1.0, percentiles: tuple[float, float] = (2.0, 98.0)
) -> tuple[float, float]:
    """Colour limits from the data: the given percentiles, rounded outwards to a round
    number; ``symmetric`` gives ±the larger magnitude (diverging maps, e.g. grade),
    at least ±``floor``."""
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return (-floor, floor) if symmetric else (0.0, floor)
    lo, hi = (float(p) for p in np.percentile(v, percentiles))
    if symmetric:
        m = _nice_up(max(abs(lo), abs(hi), floor))
        return (-m, m)
    if hi - lo < floor:
        hi = lo + floor
    step = _nice_up((hi - lo) / 5.0)
    return (math.floor(lo / step) * step, math.ceil(hi / step) * step)


def grade_limits(grades, *, floor: float = 1.0) -> tuple[float, float]:
    """Symmetric colour limits of a grade map: ± the 98th percentile of |grade| rounded
    up to a round number (at least ± ``floor``), so level track stays grey and one odd
    section does not pale the rest."""
    v = np.abs(np.asarray(grades, dtype=np.float64).ravel())
    v = v[np.isfinite(v)]
    # to 0.01 ‰: a pitch stored as a float32 angle reads 5.00004 ‰, which is 5, not 10
    m = round(float(np.percentile(v, 98)), 2) if len(v) else 0.0
    m = _nice_up(max(m, floor))
    return (-m, m)


def place_labels(
    anchors: np.ndarray,
    texts,
    priorities,
    window_size: tuple[int, int],
    *,
    font_px: float = 12.0,
    max_labels: int = 60,
    pad: float = 2.0,
    reserved: list[tuple[float, float, float, float]] | None = None,
) -> list[tuple[int, float, float]]:
    """Greedy label placement: in order of priority (higher first, then as given), each
    label tries four spots beside its anchor pixel and takes the first one that overlaps
    no placed label, no ``reserved`` box (x0, y0, x1, y1) and stays in the window; a
    label with no free spot is dropped. Returns (index, x, y) of the lower-left corner of
    each label placed. Labels never overlap, so zooming out shows fewer."""
    anchors = np.asarray(anchors, dtype=np.float64).reshape(-1, 2)
    w, h = window_size
    order = sorted(range(len(texts)), key=lambda i: (-priorities[i], i))
    cell = 4.0
    occ = np.zeros((int(h // cell) + 2, int(w // cell) + 2), dtype=bool)

    def box_cells(x0, y0, x1, y1):
        return (
            slice(max(int(y0 // cell), 0), int(y1 // cell) + 1),
            slice(max(int(x0 // cell), 0), int(x1 // cell) + 1),
        )

    for r in reserved or ():
        occ[box_cells(*r)] = True
    out: list[tuple[int, float, float]] = []
    lh = font_px * 1.25
    for i in order:
        if len(out) >= max_labels:
            break
        x, y = anchors[i]
        t = texts[i]
        if not t or not (math.isfinite(x) and math.isfinite(y)) or not (0 <= x < w and 0 <= y < h):
            continue
        lw = 0.62 * font_px * len(t)
        for dx, dy in ((6, 4), (-6 - lw, 4), (6, -4 - lh), (-6 - lw, -4 - lh)):
            x0, y0 = x + dx, y + dy
            x1, y1 = x0 + lw, y0 + lh
            if x0 < 0 or y0 < 0 or x1 > w or y1 > h:
                continue
            sl = box_cells(x0 - pad, y0 - pad, x1 + pad, y1 + pad)
            if occ[sl].any():
                continue
            occ[box_cells(x0, y0, x1, y1)] = True
            out.append((i, x0, y0))
            break
    return out
