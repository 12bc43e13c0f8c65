"""Speed posts with the direction of travel they govern (docs/running-time.md §1).

Open Rails gives every limit, warning and resume post one direction from its angle:
a traveller is put on the post facing Backward along its node; with ``delta`` the
angle between that traveller's heading and ``π/2 − angle``, wrapped into (−π, π], a
post with ``|delta| < π/2`` governs trains moving Backward along the node, any other
post trains moving Forward. Mileposts govern nothing.

Values per train category: a post carries a passenger value, a freight value or both
(flags bit 5, bit 6, bit 7 = both); a category without a value on a limit post is
not limited by it. A resume post restores the line maximum (the route's SpeedLimit).
Trains ignore warning posts for the limit (they are kept, as events for the profile).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..formats.route import Route
from ..formats.tdb import SpeedPostItem
from .spatial import cached
from .traveller import BACKWARD, FORWARD, Traveller, item_positions

__all__ = ["CATEGORIES", "SpeedPost", "post_direction", "speed_posts"]

#: The train categories a post can carry a value for.
CATEGORIES = ("passenger", "freight")

_PASSENGER_BIT = 1 << 5
_FREIGHT_BIT = 1 << 6
_BOTH_BIT = 1 << 7


@dataclass(frozen=True, slots=True)
class SpeedPost:
    """One limit, warning or resume post on a vector node.

    ``offset`` metres from the node start; ``governs`` the direction of the trains it
    applies to (1 = Forward along the node, 0 = Backward); ``kind`` "limit", "warning"
    or "resume"; ``passenger``/``freight`` the value in m/s, or None where the post
    carries none for that category (always None on a resume post).
    """

    node: int
    offset: float
    governs: int
    kind: str
    passenger: float | None
    freight: float | None
    item_index: int

    def value(self, category: str) -> float | None:
        """The post's value (m/s) for ``category``, or None."""
        return self.passenger if category == "passenger" else self.freight

    def applies_to(self, direction: int) -> bool:
        """Does the post govern a train moving in ``direction`` along its node?"""
        return self.governs == direction


def post_direction(route: Route, node: int, offset: float, angle: float) -> int:
    """The direction (FORWARD/BACKWARD along ``node``) of the trains a post at
    ``offset`` with ``angle`` (rad) governs, by Open Rails' rule (module docstring)."""
    heading = Traveller(route, node, offset, BACKWARD).pose().heading
    delta = math.remainder(heading - (math.pi / 2.0 - angle), 2.0 * math.pi)
    return BACKWARD if abs(delta) < math.pi / 2.0 else FORWARD


def _values(it: SpeedPostItem) -> tuple[float | None, float | None]:
    v = it.speed_ms
    if v is None:
        return None, None
    both = bool(it.flags & _BOTH_BIT)
    return (v if both or it.flags & _PASSENGER_BIT else None, v if both or it.flags & _FREIGHT_BIT else None)


def speed_posts(route: Route) -> dict[int, tuple[SpeedPost, ...]]:
    """Every limit, warning and resume post of the route: node index → posts sorted by
    offset (cached per route)."""

    def build() -> dict[int, tuple[SpeedPost, ...]]:
        out: dict[int, tuple[SpeedPost, ...]] = {}
        for node, positions in item_positions(route).items():
            posts = []
            for ip in positions:
                it = ip.item
                if not isinstance(it, SpeedPostItem) or it.is_milepost:
                    continue
                kind = "resume" if it.is_resume else "warning" if it.is_warning else "limit"
                p, f = _values(it)
                posts.append(
                    SpeedPost(
                        int(node),
                        float(ip.offset),
                        post_direction(route, int(node), ip.offset, it.angle),
                        kind,
                        p,
                        f,
                        it.index,
                    )
                )
            if posts:
                out[int(node)] = tuple(sorted(posts, key=lambda q: q.offset))
        return out

    return cached(route, "speed-posts", build)


def limit_after(post: SpeedPost, category: str, current: float, line_max: float) -> float:
    """The limit (m/s) in force once a train of ``category`` governed by ``post`` has
    passed it, ``current`` being the limit before it."""
    if post.kind == "resume":
        return line_max
    if post.kind == "limit":
        v = post.value(category)
        if v is not None:
            return v
    return current


__all__ += ["limit_after", "FORWARD", "BACKWARD"]
