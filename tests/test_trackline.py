"""Track lines (physics/trackline.py): the pieces and nodes a line walks, its lookups,
its posts and limits, synthetic lines and the errors of building one."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import J1, SAMPLE_PATHS, SAMPLE_ROUTE, V_A, V_MAIN, V_SID, sample_line, sample_route

from tdbtools.physics.trackline import TrackLine, TrackLineError
from tdbtools.track import Traveller


def test_path_line_lists_its_posts_where_they_are_met():
    """MainWE meets the 80 km/h warning (V_a at 400 m) and then the 80 km/h limit (V_main
    at 10 m) eastbound (sample_routes/README.md); ``post_s`` are line distances."""
    from tdbtools.formats import load_route
    from tdbtools.physics.trackline import TrackLine

    route = load_route(SAMPLE_ROUTE, cache=False)
    pat = SAMPLE_ROUTE / "PATHS" / "MainWE.pat"
    line = TrackLine.from_path(route, pat)
    assert line.post_kind == ("warning", "limit")
    limit_at = line.limit_s[1]
    assert line.post_s[1] == limit_at == pytest.approx(line.junctions[0].s + 10.0, abs=1e-5)
    assert 0.0 < line.post_s[0] < limit_at
    assert line.source == str(pat)


KMH = 1 / 3.6


def test_main_line_pieces_are_the_sections_walked():
    """MainWE (sample_routes/README.md): V_a walked backward from offset 420 (its three
    sections, rising 4 ‰ eastbound on the last two), then V_main forward section by
    section, to the east buffer 23.6 m past the path's end."""
    line = sample_line()
    j = 420.0
    sec = [80.0, 60.0, 60.0, 250.0, 43.633232, 120.0, 40.0, 250.0, 250.0]
    bounds = [0.0, 420.0 - 337.266463, 420.0 - 250.0, j] + list(j + np.cumsum(sec))
    assert line.pieces.s1[-1] == line.length == pytest.approx(j + 1153.633232, abs=1e-5)
    assert np.array_equal(line.pieces.s0[1:], line.pieces.s1[:-1])
    assert line.pieces.s0[0] == 0.0
    edges = np.concatenate([line.pieces.s0, line.pieces.s1[-1:]])
    # the last 250 m section of V_main crosses a tile boundary: walked as two pieces
    assert np.allclose(np.delete(edges, -2), bounds, atol=1e-5)
    assert line.pieces.row.tolist() == list(range(2, -1, -1)) + list(range(3, 12)) + [11]
    assert line.pieces.dir.tolist() == [0, 0, 0] + [1] * 10
    assert line.pieces.soff0[:4] == pytest.approx([420.0 - 337.266463, 87.266463, 250.0, 0.0], abs=1e-5)
    assert line.pieces.soff0[-1] == pytest.approx(line.pieces.s0[-1] - line.pieces.s0[-2], abs=1e-9)
    tan4, tan5 = math.tan(0.004), math.tan(0.005)
    assert line.pieces.grade == pytest.approx([tan4, tan4, 0, 0, 0, 0, tan5, tan5, 0, 0, 0, 0, 0], abs=1e-6)
    # R500 +10° walked backward turns left; V_main: R1200 left, R500 left, R1500 right
    assert line.pieces.curvature == pytest.approx(
        [0, -1 / 500, 0, 0, 0, -1 / 1200, 0, -1 / 500, 1 / 1500, 0, 0, 0, 0], abs=1e-6
    )
    assert (line.seg_node.tolist(), line.seg_dir.tolist()) == ([V_A, V_MAIN], [0, 1])
    assert line.seg_s0 == pytest.approx([0.0, j], abs=1e-5)
    assert line.seg_s1 == pytest.approx([j, line.length], abs=1e-5)
    assert line.seg_off0 == pytest.approx([420.0, 0.0], abs=1e-5)
    assert (line.junction_node.tolist(), line.junction_route.tolist(), line.junction_facing.tolist()) == (
        [J1],
        [0],
        [True],
    )
    assert (line.route_name, line.step, line.part, line.parts) == ("tdbtools sample route", 2.0, 0, 1)
    assert line.path_length == pytest.approx(j + 1130.0, abs=1e-5)
    # samples every 2 m and at every piece boundary
    assert len(line) == len(line.s) == 800
    assert set(np.round(edges, 6)) <= set(np.round(line.s, 6))
    assert np.diff(line.s).max() <= 2.0 + 1e-9 and np.diff(line.s).min() > 1e-7
    assert (
        repr(line)
        == f"TrackLine({str(SAMPLE_PATHS / 'MainWE.pat')!r}, 1573.6 m, 800 samples, 2 node(s), track end)"
    )


def test_lines_the_other_way_and_into_the_siding():
    """Westbound the junction is met trailing from route 0 and the grades fall; into the
    siding it is met facing, set to route 1; the 80 km/h post governs eastbound only."""
    ew = sample_line("MainEW.pat")
    (jn,) = ew.junctions
    assert (jn.node, jn.route, jn.facing) == (J1, 0, False)
    assert jn.s == pytest.approx(1130.0, abs=1e-5)
    assert ew.pieces.dir.tolist() == [0] * 9 + [1] * 5
    assert ew.pieces.grade[ew.pieces.grade != 0] == pytest.approx(
        [-math.tan(0.005)] * 2 + [-math.tan(0.004)] * 3, abs=1e-6
    )
    assert ew.limit_s.tolist() == [0.0] and ew.post_s.size == 0 and ew.post_kind == ()
    assert ew.ends_at_track_end and not ew.starts_at_track_end
    sid = sample_line("Siding.pat")
    (jn,) = sid.junctions
    assert (jn.node, jn.route, jn.facing) == (J1, 1, True)
    assert sid.seg_node.tolist() == [V_A, V_SID]
    assert sid.limit_v.tolist() == sid.limit_v_freight.tolist() == [pytest.approx(120 * KMH)]
    assert sid.post_kind == ("warning",) and sid.post_s == pytest.approx([20.0])
    assert repr(sid).endswith(", 454 samples, 2 node(s), track end)")
    short = sample_line("Siding.pat", extend=5.0)
    assert not short.ends_at_track_end and repr(short).endswith(" 2 node(s))")
    assert short.length == pytest.approx(short.path_length + 5.0, abs=1e-6)


def test_line_lookups_at_exact_places():
    """node/offset/direction at and around the junction, clipping, and the columns of
    ``at`` (interpolated and exact) against the route's geometry."""
    line = sample_line()
    node, off, d = line.node_offset([-5.0, 0.0, 100.0, 420.0, 420.5, 5000.0])
    assert node.tolist() == [V_A, V_A, V_A, V_A, V_MAIN, V_MAIN]
    assert d.tolist() == [0, 0, 0, 0, 1, 1]
    assert off == pytest.approx([420.0, 420.0, 320.0, 0.0, 0.5, 1153.633232], abs=1e-5)
    a = line.at([-5.0, 100.0, 420.5, 1e4])
    assert a["s"].tolist() == [0.0, 100.0, 420.5, line.length]
    assert set(a) == {
        "s", "node", "offset", "direction", "tile_x", "tile_z", "x", "y", "z", "X", "Z", "heading",
        "grade", "curvature", "speed_limit",
    }  # fmt: skip
    assert a["tile_x"].tolist() == [-5631, -5631, -5631, -5630] and a["tile_z"].tolist() == [15116] * 4
    assert a["y"][2] == pytest.approx(42.0, abs=1e-6) and a["y"][3] == pytest.approx(43.467883, abs=1e-5)
    assert a["x"][3] == pytest.approx(-737.632466, abs=1e-3) and a["z"][3] == pytest.approx(
        1.366876, abs=1e-3
    )
    assert a["X"][2] == pytest.approx(-5631 * 2048 + a["x"][2]) and a["Z"][2] == pytest.approx(
        15116 * 2048 + a["z"][2]
    )
    assert a["grade"] == pytest.approx([math.tan(0.004), math.tan(0.004), 0.0, 0.0], abs=1e-6)
    assert a["curvature"] == pytest.approx([0.0, -0.002, 0.0, 0.0], abs=1e-9)
    assert a["speed_limit"] == pytest.approx([120 * KMH] * 3 + [80 * KMH])
    assert a["heading"][2] == pytest.approx(1.35, abs=1e-6)  # AY of V_main at J1
    ex = line.at([-5.0, 100.3, 421.1, 1e4], exact=True)
    assert set(ex) == set(a) and ex["s"].tolist() == [0.0, 100.3, 421.1, line.length]
    assert ex["node"].tolist() == [V_A, V_A, V_MAIN, V_MAIN] and ex["direction"].tolist() == [0, 0, 1, 1]
    assert ex["offset"] == pytest.approx([420.0, 319.7, 1.1, 1153.633232], abs=1e-5)
    assert ex["tile_x"].tolist() == [-5631, -5631, -5631, -5630]
    assert ex["x"][2] == pytest.approx(200.0 + 1.1 * math.sin(1.35), abs=1e-5)
    assert ex["z"][2] == pytest.approx(-310.0 + 1.1 * math.cos(1.35), abs=1e-5)
    assert ex["X"][2] == pytest.approx(-5631 * 2048 + 200.0 + 1.1 * math.sin(1.35), abs=1e-5)
    assert ex["Z"][2] == pytest.approx(15116 * 2048 - 310.0 + 1.1 * math.cos(1.35), abs=1e-5)
    assert ex["y"][2] == pytest.approx(42.0, abs=1e-9) and ex["y"][3] == pytest.approx(43.467883, abs=1e-5)
    assert ex["heading"][2] == pytest.approx(1.35, abs=1e-9)
    # walked backward, V_a's heading is its own AY + π, wrapped
    assert -math.pi < ex["heading"][1] <= math.pi
    assert ex["heading"][1] == pytest.approx(a["heading"][1] + 0.0003 * 0, abs=2e-3)
    assert ex["grade"] == pytest.approx(a["grade"], abs=0) and ex["curvature"][1] == -0.002
    assert ex["speed_limit"] == pytest.approx([120 * KMH] * 3 + [80 * KMH])
    loc = line.location(420.0)
    assert loc.as_tuple() == pytest.approx((-5631, 15116, 200.0, 42.0, -310.0), abs=1e-5)
    assert type(loc.tile_x) is int and type(loc.y) is float
    assert line.heading_at([420.0]) == pytest.approx([1.35], abs=1e-6)
    assert line.limit([429.0, 431.0], "freight") == pytest.approx([120 * KMH, 80 * KMH])
    with pytest.raises(ValueError, match=r"category must be one of \('passenger', 'freight'\), not 'goods'"):
        line.limit(0.0, "goods")


def test_occupancy_and_locate_at_the_edges():
    line = sample_line()
    j = 420.0
    occ = line.occupancy(j + 10.0, j - 20.0)  # either order
    assert [o[0] for o in occ] == [V_A, V_MAIN]
    assert occ[0][1:] == pytest.approx((20.0, 0.0), abs=1e-5) and occ[1][1:] == pytest.approx(
        (0.0, 10.0), abs=1e-5
    )
    assert line.occupancy(-10.0, 5.0) == [(V_A, pytest.approx(420.0), pytest.approx(415.0))]
    assert line.occupancy(line.length - 3.0, line.length + 50.0) == [
        (V_MAIN, pytest.approx(1150.633232, abs=1e-5), pytest.approx(1153.633232, abs=1e-5))
    ]
    assert line.occupancy(line.length + 1.0, line.length + 50.0) == []
    assert line.occupancy(-20.0, -10.0) == []
    assert line.occupancy(100.0, 100.0) == [(V_A, pytest.approx(320.0), pytest.approx(320.0))]
    assert line.occupancy(j, j) == [(V_A, pytest.approx(0.0, abs=1e-5), pytest.approx(0.0, abs=1e-5))]
    assert line.occupancy(j + 5.0, j + 5.0 + 1e-10)[0][0] == V_MAIN
    assert line.locate(V_A, 320.0) == pytest.approx([100.0], abs=1e-5)
    assert line.locate(V_A, 420.0 + 5e-7) == pytest.approx([0.0], abs=1e-6)  # within the tolerance: clamped
    assert line.locate(V_A, 420.01).size == 0 and line.locate(V_A, -0.01).size == 0
    assert line.locate(V_A, 420.01, tol=0.1) == pytest.approx([0.0], abs=1e-6)
    assert line.locate(V_MAIN, 1153.633232) == pytest.approx([line.length], abs=1e-5)
    assert line.locate(V_MAIN, 1153.64).size == 0 and line.locate(V_SID, 1.0).size == 0


def test_synthetic_line_columns():
    """A 1 % grade, curved synthetic line with posts given out of order and their own
    freight values."""
    g = 0.01
    line = TrackLine.synthetic(
        95.0,
        grade=g,
        curvature=0.002,
        route_limit=30.0,
        limits=((50.0, 20.0), (20.0, 40.0)),
        freight_limits=((20.0, 25.0), (50.0, 10.0)),
        step=10.0,
        node=7,
        source="syn",
    )
    assert line.s == pytest.approx(np.linspace(0.0, 95.0, 11))
    assert (line.route_name, line.source, line.step, line.length, line.path_length) == (
        "synthetic",
        "syn",
        10.0,
        95.0,
        95.0,
    )
    assert line.ends_at_track_end and line.starts_at_track_end
    c = 1 / math.sqrt(1 + g * g)
    assert line.y == pytest.approx(line.s * g * c) and line.z == pytest.approx(line.s * c)
    assert (
        line.Z == pytest.approx(line.z) and not line.X.any() and not line.x.any() and not line.heading.any()
    )
    assert line.offset == pytest.approx(line.s) and line.offset is not line.s
    assert set(line.node.tolist()) == {7} and set(line.direction.tolist()) == {1}
    assert not line.tile_x.any() and not line.tile_z.any()
    assert line.grade == pytest.approx([g] * 11) and line.curvature == pytest.approx([0.002] * 11)
    assert line.limit_s.tolist() == [0.0, 20.0, 50.0]
    assert line.limit_v.tolist() == [30.0, 30.0, 20.0]  # 40 capped at the route limit
    assert line.limit_v_freight.tolist() == [30.0, 25.0, 10.0]
    assert line.speed_limit.tolist() == [30.0] * 6 + [20.0] * 5  # 50 m lies between 47.5 and 57
    assert line.limit(50.0, "freight") == 10.0 and line.limit(49.9, "freight") == 25.0
    assert line.post_s.tolist() == [20.0, 50.0] and line.post_kind == ("limit", "limit")
    assert (line.seg_node.tolist(), line.seg_dir.tolist(), line.seg_s0.tolist(), line.seg_s1.tolist()) == (
        [7],
        [1],
        [0.0],
        [95.0],
    )
    assert line.seg_off0.tolist() == [0.0] and line.pieces.soff0.tolist() == [0.0]
    assert (line.pieces.s0.tolist(), line.pieces.s1.tolist(), line.pieces.dir.tolist()) == (
        [0.0],
        [95.0],
        [1],
    )
    assert line.pieces.grade.tolist() == [g] and line.pieces.curvature.tolist() == [0.002]
    assert line.junctions == [] and line.junction_s.size == 0
    assert line.heading_at([30.0]).tolist() == [0.0]
    assert line.node_offset([30.0])[1].tolist() == [30.0]
    assert line.grade_at(50.0) == g and line.curvature_at(50.0) == 0.002
    assert line.occupancy(10.0, 30.0) == [(7, 10.0, 30.0)]
    assert line.locate(7, 30.0).tolist() == [30.0]
    assert repr(line) == "TrackLine('syn', 95.0 m, 11 samples, 1 node(s), track end)"
    one = TrackLine.synthetic(0.5)
    assert one.s.tolist() == [0.0, 0.5] and one.limit_v.tolist() == [500.0] and one.post_kind == ()
    assert one.limit_v_freight.tolist() == [500.0] and one.step == 10.0 and one.node.tolist() == [1, 1]
    same = TrackLine.synthetic(100.0, limits=((40.0, 10.0),))
    assert same.limit_v_freight.tolist() == [500.0, 10.0]  # freight as passenger by default
    with pytest.raises(TrackLineError, match="^freight limits must be given at the same posts$"):
        TrackLine.synthetic(100.0, limits=((40.0, 10.0),), freight_limits=())
    with pytest.raises(TrackLineError, match="^freight limits must be given at the same posts$"):
        TrackLine.synthetic(100.0, limits=((40.0, 10.0),), freight_limits=((30.0, 10.0),))


def test_line_construction_errors_say_why(tmp_path):
    route = sample_route()
    with pytest.raises(TrackLineError) as ei:
        sample_line(part=1)
    assert str(ei.value) == f"path {SAMPLE_PATHS / 'MainWE.pat'} has 1 part(s): no part 1"
    with pytest.raises(TrackLineError, match="no part -1$"):
        sample_line(part=-1)
    for bad in (0, -2.0, float("nan"), "2", True * 0):
        with pytest.raises(TrackLineError) as ei:
            TrackLine.from_path(route, SAMPLE_PATHS / "MainWE.pat", step=bad)  # type: ignore[arg-type]
        assert str(ei.value) == f"the sampling step must be a positive number of metres, got {bad!r}"
    t = Traveller(route, V_A, 100.0, 1)
    with pytest.raises(
        TrackLineError, match="^the sampling step must be a positive number of metres, got 0$"
    ):
        TrackLine.from_traveller(t, step=0)
    tl = TrackLine.from_traveller(t, length=50.0, step=5.0)
    assert (tl.source, tl.length, tl.path_length, tl.step) == ("traveller", 50.0, 50.0, 5.0)
    assert t.offset == 100.0  # the traveller is not moved
    assert tl.node_offset([50.0])[1] == pytest.approx([150.0])
    assert not tl.ends_at_track_end and not tl.starts_at_track_end
    end = TrackLine.from_traveller(Traveller(route, V_A, 430.0, 1), length=50.0, source="w")
    assert end.source == "w" and end.ends_at_track_end and end.length == pytest.approx(7.266463, abs=1e-5)
    at_buffer = TrackLine.from_traveller(Traveller(route, V_A, 437.266463 - 1e-4, 0), length=5.0)
    assert at_buffer.starts_at_track_end  # the buffer is 0.1 mm behind: within 1 mm
    near = TrackLine.from_traveller(Traveller(route, V_A, 437.266463 - 0.01, 0), length=5.0)
    assert not near.starts_at_track_end and not near.ends_at_track_end


@pytest.fixture
def line_we_point():
    from helpers import sample_line, sample_route

    return sample_route(), sample_line().location(700.0)


def test_a_line_from_a_point_names_where_it_starts(line_we_point):
    route, loc = line_we_point
    line = TrackLine.from_point(route, loc.tile_x, loc.tile_z, loc.x, loc.z, length=100.0)
    assert line.source == f"tile ({loc.tile_x}, {loc.tile_z}) x {loc.x} z {loc.z}"


def test_exact_positions_in_the_last_section_of_a_line():
    """A line that ends halfway into a curve: at its end the exact curvature, heading and
    position are the curve's, as on the longer line through the same track."""
    from helpers import sample_line, sample_route

    main = sample_line()
    k = int(np.nonzero(main.pieces.curvature)[0][0])  # the first curve, after a straight
    s0 = float(main.pieces.s0[k]) - 50.0
    loc = main.location(s0)
    half = 0.5 * float(main.pieces.s1[k] - main.pieces.s0[k])
    sub = TrackLine.from_point(
        sample_route(), loc.tile_x, loc.tile_z, loc.x, loc.z, backward=True, length=50.0 + half
    )
    assert len(sub.pieces.s1) == 2 and sub.pieces.curvature[0] == 0.0
    assert sub.curvature_at(sub.length - 1.0) == main.pieces.curvature[k] != 0.0
    ex, want = sub.at([sub.length], exact=True), main.at([s0 + sub.length], exact=True)
    for col in ("X", "Z", "heading"):
        assert ex[col] == pytest.approx(want[col], abs=1e-6)


def test_a_line_ahead_of_a_traveller_is_one_part():
    from helpers import V_A, sample_route

    from tdbtools.track import Traveller

    tl = TrackLine.from_traveller(Traveller(sample_route(), V_A, 100.0, 1), length=50.0, step=5.0)
    assert (tl.part, tl.parts) == (0, 1)


def test_exact_columns_from_single_precision_distances_are_double():
    """Distances given as float32: the exact columns are worked out in double precision,
    and a distance past the line's end is clipped to the end exactly."""
    from helpers import sample_line

    line = sample_line()
    ex = line.at(np.array([700.0, 1e6], dtype=np.float32), exact=True)
    assert ex["s"].dtype == np.float64 and ex["s"].tolist() == [700.0, line.length]
    assert ex["X"][1] == pytest.approx(line.at([line.length], exact=True)["X"][0], abs=1e-9)


def test_a_synthetic_line_has_integer_tiles():
    line = TrackLine.synthetic(100.0)
    assert line.tile_x.dtype == np.int64 and line.tile_z.dtype == np.int64


def test_a_route_line_samples_its_speed_limits():
    """The sampled ``speed_limit`` column of a line along a path is the limit there."""
    from helpers import sample_line

    line = sample_line()
    assert len(line.speed_limit) == len(line.s) > 10
    assert line.speed_limit == pytest.approx(line.limit(line.s))
