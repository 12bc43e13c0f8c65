"""The track network the travellers of one route share: node kinds, pin links and
section tables as plain Python lists for fast scalar stepping (built once per route
and cached), the directions and placing tolerances, and :class:`Pose`.

The rules the traveller follows are in :mod:`tdbtools.track.traveller`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ..errors import TdbToolsError
from ..formats.route import Route
from ..formats.tdb import EndNode, JunctionNode, VectorNode
from .geometry import TILE_SIZE, WorldPoint
from .spatial import cached, track_geometry

__all__ = [
    "BACKWARD",
    "FORWARD",
    "INIT_ERROR_MARGIN",
    "MAX_CENTERLINE_OFFSET",
    "MIN_MOVE",
    "Pose",
    "TravellerError",
]

#: Directions (docs/formats.md §12.1): walk a vector node first → last (1) or last → first (0).
FORWARD = 1
BACKWARD = 0
#: Open Rails' placing tolerances (modern Traveller.cs): lateral, and along the section.
MAX_CENTERLINE_OFFSET = 2.5
INIT_ERROR_MARGIN = 0.5
#: A move stops when less than this (metres) is left to travel.
MIN_MOVE = 0.001

_NONE, _VECTOR, _JUNCTION, _END = 0, 1, 2, 3
_TWO_PI = 2.0 * math.pi
_EPS = 1e-9


class TravellerError(TdbToolsError, ValueError):
    """A traveller cannot be placed or set up (no track near a point, a bad node,
    offset or switch)."""


class Pose(NamedTuple):
    """Everything about where a traveller is and which way it faces (one call).

    ``heading`` (rad, wrapped into (−π, π]), ``pitch`` (AX: + = descending),
    ``grade`` (rise per horizontal metre, −tan pitch) and ``curvature`` (signed 1/R,
    + = turning right) are all in the direction of travel.
    """

    tile_x: int
    tile_z: int
    x: float
    y: float
    z: float
    heading: float
    pitch: float
    grade: float
    curvature: float

    @property
    def location(self) -> WorldPoint:
        return WorldPoint(self.tile_x, self.tile_z, self.x, self.y, self.z)

    @property
    def xyz(self) -> tuple[float, float, float]:
        """Absolute (X, Y, Z) in metres."""
        return (self.tile_x * TILE_SIZE + self.x, self.y, self.tile_z * TILE_SIZE + self.z)


def _wrap(a: float) -> float:
    """Wrap an angle into (−π, π] (unchanged if it is already there)."""
    if -math.pi < a <= math.pi:
        return a
    w = math.fmod(a + math.pi, _TWO_PI)
    if w < 0:
        w += _TWO_PI
    w -= math.pi
    return math.pi if w == -math.pi else w


def _normalise(tile_x: int, tile_z: int, x: float, z: float) -> tuple[int, int, float, float]:
    kx = math.floor((x + 1024.0) / TILE_SIZE)
    kz = math.floor((z + 1024.0) / TILE_SIZE)
    return tile_x + kx, tile_z + kz, x - kx * TILE_SIZE, z - kz * TILE_SIZE


# -- the network the travellers of one route share ---------------------------------------


class _Net:
    """Plain-Python tables of one route for fast scalar stepping (cached per route)."""

    def __init__(self, route: Route) -> None:
        self.route = route
        nodes: tuple[Any, ...] = route.tdb.nodes  # kinds are tested where it matters
        self.nodes = nodes
        n = len(nodes)
        self.n_nodes = n
        geom = track_geometry(route)
        self.geom = geom
        kind = [_NONE] * n
        pins: list[tuple[tuple[int, int], ...]] = [()] * n
        first = [0] * n
        count = [0] * n
        for node in nodes[1:]:
            if node is None:
                continue
            i = node.index
            if not 0 < i < n:
                continue
            pins[i] = tuple((p.link, p.direction) for p in node.pins)
            if isinstance(node, VectorNode):
                kind[i] = _VECTOR
                first[i] = node.first_section
                count[i] = node.section_count
            elif isinstance(node, JunctionNode):
                kind[i] = _JUNCTION
            elif isinstance(node, EndNode):
                kind[i] = _END
        self.kind, self.pins, self.first, self.count = kind, pins, first, count
        self.first_a = np.array(first, dtype=np.int64)

        known = geom.known & np.isfinite(geom.length)
        length = np.where(known, geom.length, 0.0)
        curved = known & ~np.isnan(geom.radius)
        self.length_a = length
        self.known_a = known
        self.curved_a = curved
        sign = np.sign(np.where(curved, geom.angle, 0.0))
        self.curv_a = np.where(curved, np.divide(sign, np.where(curved, geom.radius, 1.0)), 0.0)
        # The per-row columns as Python lists (length, x, sax, ...: _ROW_LISTS) are made on
        # first use, by a traveller stepping along the track: a route that is only located
        # or exported never holds them (~32 bytes a value, 1.4 GB on a 140 MB .tdb).

        # Offsets of every section start from its node start (metres), per row and node.
        nrows = len(length)
        row_start = np.zeros(nrows)
        node_len = [0.0] * n
        cum: list[list[float]] = [[0.0]] * n
        for i in range(1, n):
            if kind[i] == _VECTOR and count[i]:
                a, c = first[i], count[i]
                cs = np.concatenate([[0.0], np.cumsum(length[a : a + c])])
                row_start[a : a + c] = cs[:-1]
                cum[i] = cs.tolist()
                node_len[i] = float(cs[-1])
        self.row_start_a = row_start
        self.cum = cum
        self.node_len = node_len

        # Default switch positions: the shape's MainRoute (0 if the shape is unknown).
        main = [0] * n
        for i in range(1, n):
            if kind[i] == _JUNCTION:
                shape = route.tsection.shape(nodes[i].shape_index)
                main[i] = int(shape.main_route) if shape is not None else 0
        self.main_route = main
        # A walk that makes no progress for this many steps is in a loop of zero-length
        # nodes and sections: it stops there.
        self.stall_limit = 2 * (n + nrows) + 16

    def valid_link(self, link: int) -> bool:
        return 0 < link < self.n_nodes and self.kind[link] != _NONE

    def __getattr__(self, name: str):  # noqa: ANN204 - only for the lazy row lists
        make = _ROW_LISTS.get(name)
        if make is None:
            raise AttributeError(name)
        value = make(self)
        self.__dict__[name] = value
        return value


def _sign(net: _Net) -> list[float]:
    sign = np.sign(np.where(net.curved_a, net.geom.angle, 0.0))
    return np.where(sign == 0, 1.0, sign).tolist()


def _column_list(column: str, fn: Callable[[np.ndarray], np.ndarray] | None = None) -> Callable[[_Net], list]:
    def make(net: _Net) -> list:
        a = getattr(net.geom, column)
        return (fn(a) if fn is not None else a).tolist()

    return make


_ROW_LISTS: dict[str, Callable[[_Net], list]] = {
    "length": lambda net: net.length_a.tolist(),
    "curved": lambda net: net.curved_a.tolist(),
    "radius": lambda net: np.where(net.curved_a, net.geom.radius, 0.0).tolist(),
    "sign": _sign,
    "curv": lambda net: net.curv_a.tolist(),
    "known": lambda net: net.known_a.tolist(),
    "row_start": lambda net: net.row_start_a.tolist(),
    "tan_ax": _column_list("ax", np.tan),
}
for _c in ("tile_x", "tile_z", "x", "y", "z", "ax", "ay", "az"):
    _ROW_LISTS[_c] = _column_list(_c)
for _c in ("ax", "ay", "az"):
    _ROW_LISTS["s" + _c] = _column_list(_c, np.sin)
    _ROW_LISTS["c" + _c] = _column_list(_c, np.cos)


def _net(route: Route) -> _Net:
    return cached(route, "traveller-net", lambda: _Net(route))
