"""Section geometry (docs/formats.md §11): the worked example, the exact inverse, polylines and
closure on the sample route and on DK24."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest

from tdbtools.formats import load_route
from tdbtools.track import geometry as geometry_mod
from tdbtools.track.closure import closure
from tdbtools.track.geometry import (
    SectionGeometry,
    absolute_xz,
    locate_in_section,
    normalize_tile,
    point_at,
    section_end,
    section_end_xyz,
    section_geometry,
    to_tile,
    wrap_angle,
)
from tdbtools.track.graph import adjacency, connected_components, node_lengths
from tdbtools.track.polylines import sample_node, sample_route

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_routes" / "sample" / "ROUTES" / "SAMPLE"

TOL = 1e-4
D = math.radians


@pytest.fixture(scope="module")
def sample():
    return load_route(SAMPLE, cache=False)


# -- the §11 worked example -----------------------------------------------------------------


def worked(angle_deg: float, ax: float = 0.0) -> SectionGeometry:
    return SectionGeometry.from_arrays(
        x=-512.25, y=104.0, z=731.5, ax=ax, ay=D(30), az=0.0, radius=300.0, angle=D(angle_deg)
    )


@pytest.mark.parametrize(
    "angle, ax, theta, X, Z, heading, y",
    [
        (20, 0.0, 20, -445.2787, 811.3133, 50, 104.0),  # right, end
        (20, 0.0, 10, -482.2557, 774.3363, 40, 104.0),  # right, halfway
        (-20, 0.0, 20, -476.6153, 829.4055, 10, 104.0),  # left, end
        (20, -0.02, 20, -445.2889, 811.2956, 50, 106.0520),  # right, uphill
    ],
)
def test_worked_example(angle, ax, theta, X, Z, heading, y):
    g = worked(angle, ax)
    assert g.length[0] == pytest.approx(104.7198, abs=TOL)
    p = point_at(g, 0, 300.0 * D(theta))
    assert float(p.x) == pytest.approx(X, abs=TOL)
    assert float(p.z) == pytest.approx(Z, abs=TOL)
    assert float(p.y) == pytest.approx(y, abs=TOL)
    assert float(p.heading) == pytest.approx(D(heading), abs=1e-9)
    assert float(p.pitch) == ax
    assert float(p.curvature) == pytest.approx(math.copysign(1 / 300.0, angle))


def test_worked_example_vectorised_and_end():
    g = SectionGeometry.from_arrays(
        x=-512.25, y=104.0, z=731.5, ay=D(30), radius=300.0, angle=np.radians([20.0, -20.0])
    )
    p = point_at(g, [0, 0, 1], [g.length[0], g.length[0] / 2, g.length[1]])
    np.testing.assert_allclose(p.x, [-445.2787, -482.2557, -476.6153], atol=TOL)
    np.testing.assert_allclose(p.z, [811.3133, 774.3363, 829.4055], atol=TOL)
    np.testing.assert_allclose(p.heading, np.radians([50, 40, 10]), atol=1e-12)
    e = section_end(g)
    np.testing.assert_allclose(e.x, [-445.2787, -476.6153], atol=TOL)
    np.testing.assert_allclose(e.heading, np.radians([50, 10]), atol=1e-12)
    # By hand (spec): ΔX = 66.971, ΔZ = 79.813.
    assert e.x[0] - (-512.25) == pytest.approx(66.971, abs=1e-3)
    assert e.z[0] - 731.5 == pytest.approx(79.813, abs=1e-3)


def test_straight_check():
    g = SectionGeometry.from_arrays(x=10.0, y=20.0, z=30.0, ax=0.01, ay=D(90), length=100.0)
    p = point_at(g, 0, 100.0)
    assert float(p.x) == pytest.approx(109.9950, abs=TOL)
    assert float(p.y) == pytest.approx(19.00002, abs=TOL)
    assert float(p.z) == pytest.approx(30.0, abs=TOL)
    assert float(p.heading) == pytest.approx(D(90))
    assert float(p.curvature) == 0.0


def test_curve_with_roll_is_a_rigid_rotation():
    # With AX and AZ the section is the flat circle rotated in 3-D: every point stays
    # R from the start-plane centre, and the arc between samples has the right chord.
    g = SectionGeometry.from_arrays(
        x=3.0, y=50.0, z=-7.0, ax=0.03, ay=1.1, az=0.05, radius=250.0, angle=D(-35)
    )
    th = np.linspace(0, D(35), 50)
    p = point_at(g, 0, 250.0 * th).xyz
    chord = np.linalg.norm(p[1:] - p[:-1], axis=1)
    np.testing.assert_allclose(chord, 2 * 250.0 * np.sin(np.diff(th) / 2), rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(p - p[0], axis=1), 2 * 250.0 * np.sin(th / 2), atol=1e-9)


# -- the inverse ------------------------------------------------------------------------------


def test_locate_exact_off_curve_midpoint():
    g = worked(20)
    R, mid = 300.0, D(10)
    ay = D(30)
    # The circle centre is R to the right of the start; 1 m outside the curve at its
    # midpoint is 301 m from it (built here by hand, not with point_at).
    cx = -512.25 + R * math.cos(ay)
    cz = 731.5 - R * math.sin(ay)
    h = ay + mid  # heading at the midpoint; the centre is on its right
    px = cx - 301.0 * math.cos(h)
    pz = cz + 301.0 * math.sin(h)
    lat, lon = locate_in_section(g, 0, 0, 0, px, pz)
    assert lon[()] == pytest.approx(R * mid, abs=1e-9)
    assert lon[()] == pytest.approx(52.360, abs=5e-4)
    assert lat[()] == pytest.approx(-1.0, abs=1e-9)  # outside a right curve = left
    # OR's asin(z'/R) gives the spec's 52.536 m for the same point.
    zp = 301.0 * math.sin(mid)
    assert R * math.asin(zp / R) == pytest.approx(52.536, abs=5e-4)


@pytest.mark.parametrize(
    "angle, ax, az",
    [
        (20, 0.0, 0.0),
        (-20, 0.0, 0.0),
        (35, -0.02, 0.0),
        (-12, 0.01, 0.04),
        (None, 0.0, 0.0),
        (None, 0.03, 0.0),
    ],
)
def test_locate_round_trip(angle, ax, az):
    rng = np.random.default_rng(7)
    # Start near a tile corner so the points fall into neighbouring tiles.
    kw = dict(tile_x=-5631, tile_z=15116, x=1010.5, y=40.0, z=-1015.25, ax=ax, ay=2.4, az=az)
    if angle is None:
        g = SectionGeometry.from_arrays(**kw, length=180.0)
    else:
        g = SectionGeometry.from_arrays(**kw, radius=420.0, angle=D(angle))
    n = 500
    lon = rng.uniform(-0.5, g.length[0] + 0.5, n)
    lat = rng.uniform(-2.5, 2.5, n)
    lat[:3] = [0.0, 1.0, -1.0]
    p = point_at(g, np.zeros(n, dtype=int), lon, lat).normalized()
    assert (np.abs(p.x) <= 1024).all() and (np.abs(p.z) <= 1024).all()
    assert len(set(zip(p.tile_x.tolist(), p.tile_z.tolist()))) > 1
    lat2, lon2 = locate_in_section(g, 0, p.tile_x, p.tile_z, p.x, p.z)
    np.testing.assert_allclose(lon2, lon, atol=1e-9)
    np.testing.assert_allclose(lat2, lat, atol=1e-9)


def test_locate_straight_is_the_spec_survey():
    g = SectionGeometry.from_arrays(x=5.0, z=-3.0, ay=0.7, length=50.0)
    dx, dz = 12.0, 31.0
    lat, lon = locate_in_section(g, 0, 0, 0, 5.0 + dx, -3.0 + dz)
    assert lat[()] == pytest.approx(dx * math.cos(0.7) - dz * math.sin(0.7), abs=1e-12)
    assert lon[()] == pytest.approx(dx * math.sin(0.7) + dz * math.cos(0.7), abs=1e-12)


# -- tiles and angles -----------------------------------------------------------------------


def test_tiles_and_angles():
    X, Z = absolute_xz(-5631, 15116, 200.0, -310.0)
    assert X == -5631 * 2048 + 200.0 and Z == 15116 * 2048 - 310.0
    tx, tz, x, z = normalize_tile([0, 0, 0], [0, 0, 0], [1024.0, -1024.0, 3000.0], [-1500.0, 0.0, 5.0])
    assert tx.tolist() == [1, 0, 1] and tz.tolist() == [-1, 0, 0]
    np.testing.assert_allclose(x, [-1024.0, -1024.0, 952.0])
    np.testing.assert_allclose(z, [548.0, 0.0, 5.0])
    x2, z2 = to_tile(tx, tz, x, z, 0, 0)
    np.testing.assert_allclose(x2, [1024.0, -1024.0, 3000.0])
    np.testing.assert_allclose(
        wrap_angle([math.pi, -math.pi, 3 * math.pi, 0.5]), [math.pi, math.pi, math.pi, 0.5]
    )


def test_unknown_section_is_nan(sample):
    g = section_geometry(sample)
    assert g.known.all() and len(g) == len(sample.tdb.sections)
    bad = SectionGeometry.from_arrays(x=1.0, z=2.0, ay=0.3)  # no length: unknown
    assert not bad.known[0]
    p = point_at(bad, [0, 0], [0.0, 5.0])
    assert p.x[0] == 1.0 and math.isnan(p.x[1])
    assert np.isnan(locate_in_section(bad, 0, 0, 0, 1.0, 2.0)[1])


# -- polylines --------------------------------------------------------------------------------


def _dist_to_polyline(points: np.ndarray, poly: np.ndarray) -> np.ndarray:
    a, b = poly[:-1], poly[1:]
    ab = b - a
    ap = points[:, None, :] - a[None]
    t = np.clip(np.einsum("mkj,kj->mk", ap, ab) / np.maximum(np.einsum("kj,kj->k", ab, ab), 1e-300), 0, 1)
    d = np.linalg.norm(ap - t[..., None] * ab[None], axis=2)
    return d.min(axis=1)


def _dense_truth(g: SectionGeometry, rows: np.ndarray, per_section: int = 400) -> np.ndarray:
    rr = np.repeat(rows, per_section)
    f = np.tile(np.linspace(0, 1, per_section), len(rows))
    return point_at(g, rr, g.length[rr] * f).xyz


@pytest.mark.parametrize("bound", [0.05, 0.005, 0.3])
def test_sample_node_chord_error(sample, bound):
    g = section_geometry(sample)
    worst = 0.0
    for node in (2, 4, 6):
        poly = sample_node(sample, node, max_chord_error=bound)
        rows = np.flatnonzero(g.node == node)
        np.testing.assert_allclose(poly[0], point_at(g, rows[0], 0.0).xyz, atol=1e-9)
        np.testing.assert_allclose(poly[-1], section_end(g.take(rows[-1:])).xyz[0], atol=1e-9)
        d = _dist_to_polyline(_dense_truth(g, rows), poly)
        # the joins of the sample route close to ~0.1 mm; the arcs are within the bound
        assert d.max() <= bound + 2e-4
        worst = max(worst, d.max())
    assert worst > bound / 4  # and the bound is not wildly conservative


def test_sample_chord_error_synthetic():
    g = SectionGeometry.from_arrays(
        x=[0.0, 0.0, 0.0],
        y=10.0,
        z=[0.0, 100.0, 300.0],
        ax=0.02,
        ay=[0.3, -2.0, 1.0],
        az=[0.0, 0.05, -0.03],
        radius=[40.0, 700.0, 5.0],
        angle=np.radians([-170.0, 23.0, 300.0]),
        node=[1, 2, 3],
    )
    for bound in (0.01, 0.05, 0.5):
        for node in (1, 2, 3):
            poly = sample_node(g, node, max_chord_error=bound)
            rows = np.array([node - 1])
            d = _dist_to_polyline(_dense_truth(g, rows, 3000), poly)
            assert d.max() <= bound * (1 + 1e-9)
            assert d.max() > bound * 0.5


def test_sample_route_matches_sample_node(sample):
    pl = sample_route(sample, max_chord_error=0.02)
    assert pl.nodes.tolist() == [2, 4, 6]
    for k, node in enumerate(pl.nodes):
        np.testing.assert_array_equal(pl.polyline(k), sample_node(sample, int(node), 0.02))


# -- closure on the sample route ------------------------------------------------------------


def test_sample_route_closes(sample):
    c = closure(sample)
    vec = [n for n in sample.tdb.nodes[1:] if n.kind == "vector"]
    assert len(c.join_gap) == sum(n.section_count - 1 for n in vec)
    assert c.join_gap.max() < 1e-3
    assert np.abs(c.join_turn).max() < 1e-5
    # every vector-node end meets the UiD of the node its pin links to
    assert len(c.end_gap) == 2 * len(vec)
    assert not np.isnan(c.end_gap).any()
    assert c.end_gap.max() < 1e-3
    assert {sample.tdb.nodes[k].kind for k in c.end_link} <= {"junction", "end"}


def _closure_reference(route, g):
    """The closure worked out over whole arrays and pin by pin (what closure did before
    it ran in chunks over indices), to check the chunked one against."""
    end = section_end(g)
    X, Z = absolute_xz(g.tile_x, g.tile_z, g.x, g.z)
    start = np.stack([X, g.y, Z], axis=-1)
    i = np.flatnonzero(g.node[1:] == g.node[:-1])
    delta = start[i + 1] - end.xyz[i]
    turn = wrap_angle(g.ay[i + 1] - end.heading[i])
    nodes = route.tdb.nodes
    nv = len(nodes)

    def place(k, at_end):
        n = nodes[k] if 0 < k < nv else None
        if n is None:
            return np.full(3, np.nan)
        if n.kind == "vector":
            if not n.section_count:
                return np.full(3, np.nan)
            sl = n.section_slice
            return end.xyz[sl.stop - 1] if at_end else start[sl.start]
        u = n.uid
        if u is None:
            return np.full(3, np.nan)
        return np.array([u.tile_x * 2048.0 + u.x, u.y, u.tile_z * 2048.0 + u.z])

    e = []
    for n in nodes[1:]:
        if n.kind != "vector":
            continue
        for p, pin in enumerate(n.pins[:2]):
            t = nodes[pin.link] if 0 < pin.link < nv else None
            at_end = pin.direction <= 0 if t is not None and t.kind == "vector" else False
            e.append(place(pin.link, at_end) - place(n.index, p == 1))
    return delta, turn, np.array(e).reshape(-1, 3)


@pytest.mark.parametrize("chunk", [7, 1 << 17])
def test_chunked_closure_matches_whole_arrays(sample, monkeypatch, chunk):
    monkeypatch.setattr(geometry_mod, "_END_CHUNK", chunk)
    g = section_geometry(sample)
    xyz, heading = section_end_xyz(g)
    end = section_end(g)
    assert np.array_equal(xyz, end.xyz, equal_nan=True) and np.array_equal(
        heading, end.heading, equal_nan=True
    )
    c = closure(sample, g)
    delta, turn, e_delta = _closure_reference(sample, g)
    assert np.array_equal(c.join_delta, delta) and np.array_equal(c.join_turn, turn)
    assert np.array_equal(c.end_delta, e_delta, equal_nan=True)
    assert np.array_equal(closure(sample, g, ends=(xyz, heading)).end_gap, c.end_gap, equal_nan=True)


def test_section_geometry_can_share_the_table(sample):
    a, b = section_geometry(sample), section_geometry(sample, copy=False)
    for name in SectionGeometry.__slots__:
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert a.x.flags.writeable and not np.shares_memory(a.x, sample.tdb.sections.x)
    assert np.shares_memory(b.x, sample.tdb.sections.x)


def test_network_helpers(sample):
    lengths = node_lengths(sample)
    assert len(lengths) == len(sample.tdb.nodes)
    for n in sample.tdb.nodes[1:]:
        assert lengths[n.index] == pytest.approx(sample.node_length(n.index))
    assert lengths.sum() == pytest.approx(sample.track_km * 1000)
    adj = adjacency(sample)
    assert len(adj.one_way()) == 0 and adj.valid.all()
    assert adj.neighbours(3) == [2, 4, 6]
    labels, count = connected_components(sample)
    assert count == 1 and labels[0] == -1 and (labels[1:] == 0).all()


# -- DK24 ---------------------------------------------------------------------------------


@pytest.mark.dk24
def test_dk24_closure(dk24):
    t0 = time.perf_counter()
    g = section_geometry(dk24)
    c = closure(dk24, g)
    dt = time.perf_counter() - t0
    st = c.join_stats()
    print(
        f"\nDK24: section_geometry + closure {dt * 1000:.1f} ms; joins {st['count']}: "
        f"p50 {st['p50'] * 1000:.3f} mm, p99 {st['p99'] * 1000:.3f} mm, max {st['max']:.4f} m"
    )
    ends = c.end_gap
    print(
        f"DK24 node ends {len(ends)}: p50 {np.percentile(ends, 50) * 1000:.3f} mm, "
        f"p99 {np.percentile(ends, 99) * 1000:.3f} mm, max {ends.max() * 1000:.3f} mm"
    )
    assert g.known.all() and not np.isnan(c.join_gap).any()
    assert st["p99"] < 0.01
    big = np.flatnonzero(c.join_gap > 1.0)
    assert len(big) == 2
    for k in big:
        print(
            f"DK24 gap: node {c.join_node[k]} sections {c.join_section[k]}->{c.join_section[k] + 1} "
            f"(rows {c.join_row[k]}->{c.join_row[k] + 1}): {c.join_gap[k]:.4f} m, "
            f"heading jump {math.degrees(c.join_turn[k]):.4f} deg"
        )
    sizes = sorted(c.join_gap[big])
    assert sizes[0] == pytest.approx(25.7, abs=0.5)
    assert sizes[1] == pytest.approx(100.0, abs=0.5)
    assert sorted(c.join_node[big].tolist()) == [660, 1493]
    # Both are a node's first section recorded with its heading reversed (AY off by π):
    # the start point is right, so the computed end lands 2·length behind.
    assert (c.join_section[big] == 0).all()
    np.testing.assert_allclose(np.abs(c.join_turn[big]), math.pi, atol=1e-5)
    rows = c.join_row[big]
    np.testing.assert_allclose(c.join_gap[big], 2 * g.length[rows], atol=1e-3)
    flipped = SectionGeometry(
        **{n: getattr(g.take(rows), n) for n in SectionGeometry.__slots__ if n != "ay"},
        ay=g.ay[rows] + math.pi,
    )
    e = section_end(flipped)
    nxt = g.take(rows + 1)
    X, Z = absolute_xz(nxt.tile_x, nxt.tile_z, nxt.x, nxt.z)
    np.testing.assert_allclose(np.c_[e.X, e.Z], np.c_[X, Z], atol=0.01)
    # Node ends meet their junction/end nodes.
    assert ends.max() < 0.05


@pytest.mark.dk24
def test_dk24_polylines_and_graph(dk24):
    t0 = time.perf_counter()
    pl = sample_route(dk24, max_chord_error=0.05)
    dt = time.perf_counter() - t0
    print(f"\nDK24 sample_route: {len(pl.points)} points for {len(pl)} nodes in {dt * 1000:.1f} ms")
    vec = [n.index for n in dk24.tdb.nodes[1:] if n.kind == "vector"]
    assert pl.nodes.tolist() == vec
    assert np.isfinite(pl.points).all()
    labels, count = connected_components(dk24)
    adj = adjacency(dk24)
    print(f"DK24: {count} connected components, {len(adj.one_way())} one-way pins")
    assert count >= 1 and (labels[1:] >= 0).all()
    lengths = node_lengths(dk24)
    assert lengths.sum() / 1000 == pytest.approx(dk24.track_km)


@pytest.mark.dk24
def test_dk24_chunked_closure_matches_whole_arrays(dk24, monkeypatch):
    monkeypatch.setattr(geometry_mod, "_END_CHUNK", 1000)  # many chunks, ragged last one
    g = section_geometry(dk24, copy=False)
    c = closure(dk24, g)
    delta, turn, e_delta = _closure_reference(dk24, g)
    assert np.array_equal(c.join_delta, delta) and np.array_equal(c.join_turn, turn)
    assert np.array_equal(c.end_delta, e_delta, equal_nan=True)


def test_section_start_xyz_is_where_each_section_begins(sample):
    # One function for the start table that closure and audit each worked out themselves.
    from tdbtools.track.closure import section_start_xyz
    from tdbtools.track.geometry import point_at, section_geometry

    geom = section_geometry(sample)
    start = section_start_xyz(geom)
    rows = np.arange(len(geom))
    assert start.shape == (len(geom), 3)
    np.testing.assert_allclose(start, point_at(geom, rows, np.zeros(len(geom))).xyz, atol=1e-9)
