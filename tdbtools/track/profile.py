"""Track profiles: elevation, grade, curvature and the speed limit along a way.

A profile samples a traveller every ``step`` metres along a resolved ``.pat`` path
(switches set as the path needs, turning at reversal points) or from a world point
for a distance. The speed limit starts at the route's limit and follows the
speed-limit posts passed for the train ``category`` ("passenger" or "freight"); a "resume" post restores the
route limit). A post applies only to the direction of travel it governs, by Open
Rails' rule on its angle (:mod:`tdbtools.track.speedposts`, docs/running-time.md §1);
posts met from behind and warning posts are listed as events but change nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import TdbToolsError
from ..formats.route import Route
from ..formats.tdb import SpeedPostItem
from .paths import ResolvedPath, resolve_path
from .speedposts import CATEGORIES, limit_after, speed_posts
from .traveller import Switches, Traveller

COLUMNS = (
    "distance_m",
    "node",
    "offset_m",
    "direction",
    "tile_x",
    "tile_z",
    "x",
    "y",
    "z",
    "elevation_m",
    "grade_permille",
    "curvature_per_m",
    "radius_m",
    "speed_limit_kmh",
)


@dataclass(frozen=True, slots=True, eq=False)
class Profile:
    """Samples along a way, one row per ``step`` metres (numpy columns)."""

    route: str
    source: str
    columns: dict[str, np.ndarray]
    events: tuple[tuple[float, str], ...] = ()  # (distance, text): posts, reversals, ends

    def __len__(self) -> int:
        return len(self.columns["distance_m"])

    def _facts(self) -> list[tuple[str, object]]:
        return [
            ("route", self.route),
            ("source", self.source),
            ("length_m", round(self.length, 1)),
            ("samples", len(self)),
            ("events", len(self.events)),
        ]

    def __repr__(self) -> str:
        # The columns (one row per step) are in .columns and .to_csv().
        from .._display import short_repr

        return short_repr("Profile", self._facts())

    def _repr_html_(self) -> str:
        from .._display import html_summary

        return html_summary(f"Profile {self.source}", self._facts())

    @property
    def length(self) -> float:
        d = self.columns["distance_m"]
        return float(d[-1]) if len(d) else 0.0

    def to_csv(self) -> str:
        cols = [self.columns[c] for c in COLUMNS]
        lines = [",".join(COLUMNS)]
        for row in zip(*cols):
            lines.append(",".join(_fmt(v) for v in row))
        return "\n".join(lines) + "\n"


def _fmt(v) -> str:  # noqa: ANN001
    if isinstance(v, (float, np.floating)):
        return "" if math.isnan(v) else f"{float(v):.6g}" if abs(v) >= 1e6 else f"{float(v):.4f}"
    return str(v)


#: At most this many samples per profile (DK24's longest path at 10 m: a few thousand).
MAX_PROFILE_SAMPLES = 5_000_000


class _Sampler:
    def __init__(self, route: Route, step: float, category: str = "passenger") -> None:
        if not 0 < step < math.inf:
            raise TdbToolsError(f"the profile step must be positive and finite, got {step}")
        if category not in CATEGORIES:
            raise TdbToolsError(
                f"the train category must be one of {', '.join(CATEGORIES)}, got {category!r}"
            )
        self.category = category
        self.posts = {p.item_index: p for ps in speed_posts(route).values() for p in ps}
        self.route = route
        self.budget = MAX_PROFILE_SAMPLES
        self.step = float(step)
        self.rows: list[tuple] = []
        self.events: list[tuple[float, str]] = []
        self.limit = route.trk.speed_limit * 3.6
        self.distance = 0.0

    def sample(self, t: Traveller) -> None:
        p = t.pose()
        r = 1.0 / abs(p.curvature) if p.curvature else math.nan
        self.rows.append(
            (
                self.distance,
                t.node_index,
                t.offset,
                t.direction,
                p.tile_x,
                p.tile_z,
                p.x,
                p.y,
                p.z,
                p.y,
                p.grade * 1000.0,
                p.curvature,
                r,
                self.limit,
            )
        )

    def run(self, t: Traveller, length: float) -> float:
        """Walk ``length`` metres sampling every step; returns the distance not travelled."""
        left = float(length)
        # Counted before walking (docs/security.md §2): a tiny step or a huge distance
        # would otherwise sample for ever.
        planned = left / self.step if left > 0 else 0.0
        if not planned <= self.budget:
            raise TdbToolsError(
                f"a profile of {left:.6g} m every {self.step:.6g} m is {planned:.3g} samples, "
                f"over the limit of {MAX_PROFILE_SAMPLES:,}: use a larger step"
            )
        self.budget -= int(planned) + 1
        while left > 1e-9:
            d = min(self.step, left)
            rest, passed = t.move_collect(d)
            for pi in passed:
                self._item(pi.item, self.distance + pi.distance, pi.direction)
            moved = d - rest
            self.distance += moved
            left -= moved
            self.sample(t)
            if rest > 1e-6:
                self.events.append((self.distance, "end of track"))
                return left
        return 0.0

    def _item(self, item, at: float, direction: int) -> None:  # noqa: ANN001
        post = self.posts.get(item.index) if isinstance(item, SpeedPostItem) else None
        if post is None:
            return
        if not post.applies_to(direction):
            self.events.append((at, f"{post.kind} post for the other direction"))
            return
        line_max = self.route.trk.speed_limit
        before = self.limit
        self.limit = min(limit_after(post, self.category, self.limit / 3.6, line_max), line_max) * 3.6
        if post.kind == "resume":
            self.events.append((at, "speed limit resumes"))
        elif post.kind == "warning":
            self.events.append((at, f"warning {(post.value(self.category) or 0.0) * 3.6:.0f} km/h"))
        elif self.limit != before or post.value(self.category) is not None:
            self.events.append((at, f"speed limit {self.limit:.0f} km/h"))

    def result(self, source: str) -> Profile:
        cols = list(zip(*self.rows)) if self.rows else [()] * len(COLUMNS)
        kinds = {"node": np.int64, "direction": np.int64, "tile_x": np.int64, "tile_z": np.int64}
        data = {c: np.array(v, dtype=kinds.get(c, np.float64)) for c, v in zip(COLUMNS, cols)}
        return Profile(self.route.name, source, data, tuple(self.events))


def profile_path(
    route: Route,
    path,
    *,
    step: float = 10.0,  # noqa: ANN001
    category: str = "passenger",
) -> Profile:
    """The profile along a ``.pat`` path (a file, a name in the route's PATHS folder
    such as ``"10.pat"``, a PathFile or a ResolvedPath), with the limits a train of
    ``category`` meets in its direction of travel."""
    res = path if isinstance(path, ResolvedPath) else resolve_path(route, path)
    if not res.ok:
        raise TdbToolsError(f"path {res.path} does not resolve: {'; '.join(res.problems)}")
    switches = Switches(route)
    first = res.legs[0].traversals[0]
    t = Traveller(route, first.node, first.start, first.direction, switches=switches)
    s = _Sampler(route, step, category)
    s.sample(t)
    for k, leg in enumerate(res.legs):
        if k > 0 and k in res.reversals:
            t.reverse()
            s.events.append((s.distance, "reversal"))
        for j, route_k in leg.switches:  # set as the path needs them, leg by leg
            switches.set(j, route_k)
        if s.run(t, leg.length) > 1e-3:
            break
    return s.result(res.path)


def profile_from(
    route: Route,
    tile_x: int,
    tile_z: int,
    x: float,
    z: float,
    distance: float,
    *,
    step: float = 10.0,
    backward: bool = False,
    category: str = "passenger",
) -> Profile:
    """The profile from a world point, ``distance`` metres along the track (switches in
    their default positions)."""
    if not (math.isfinite(x) and math.isfinite(z)):
        raise TdbToolsError(f"the start position must be finite, got x={x} z={z}")
    t = Traveller.at(route, tile_x, tile_z, x, z)
    if backward:
        t.reverse()
    s = _Sampler(route, step, category)
    s.sample(t)
    s.run(t, distance)
    return s.result(f"tile ({tile_x}, {tile_z}) x {x} z {z}")
