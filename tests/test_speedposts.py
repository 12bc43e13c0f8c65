"""Speed posts on DK24: the direction rule against the posts' placement
(docs/running-time.md §1)."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from helpers import DK24_ROUTE, needs_dk24

from tdbtools.formats import load_route
from tdbtools.track.speedposts import speed_posts
from tdbtools.track.traveller import Traveller


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TDBTOOLS_CACHE_DIR", str(tmp_path / "cache"))


@needs_dk24
def test_dk24_posts_sit_on_the_right_hand_track():
    """Denmark runs on the right: a post governing direction D stands on the right-hand
    track for D, so a neighbouring track (3.8-6 m away) is on its left."""
    route = load_route(DK24_ROUTE)
    sides = Counter()
    deltas = []
    for node, posts in speed_posts(route).items():
        for p in posts:
            t = Traveller(route, node, p.offset, p.governs)  # facing the governed trains
            q = t.pose()
            right = (math.cos(q.heading), -math.sin(q.heading))  # X east, Z north
            found = {}
            for side, sgn in (("right", 1.0), ("left", -1.0)):
                found[side] = False
                for d in (3.8, 4.0, 4.3, 4.5, 4.8, 5.0, 5.5, 6.0):
                    loc = Traveller.locate_many(
                        route,
                        q.tile_x,
                        q.tile_z,
                        q.x + sgn * d * right[0],
                        q.z + sgn * d * right[1],
                        max_lateral=0.4,
                    )
                    if loc.found[0] and int(loc.node[0]) != node:
                        found[side] = True
                        break
            if found["left"] != found["right"]:
                sides["left" if found["left"] else "right"] += 1
            back = Traveller(route, node, p.offset, 0).pose().heading
            it = route.tdb.items[p.item_index]
            deltas.append(abs(math.remainder(back - (math.pi / 2 - it.angle), 2 * math.pi)))
    # every angle is the governed heading's complement (0 or π off, never in between)
    assert all(min(d, math.pi - d) < 0.05 for d in deltas)
    assert sides["left"] >= 30 and sides["right"] <= 4, sides
