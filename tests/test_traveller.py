"""The TDB traveller (docs/formats.md §12): the pDirection table, moving, placing world
points (exact projection, spatial index), switches, items, distances; on the sample
route, on tiny synthetic routes, and on the real DK24 route."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tdbtools.errors import TdbToolsError
from tdbtools.formats import load_route
from tdbtools.formats.route import Route
from tdbtools.formats.tdb import EndNode, JunctionNode, TrackDB, TrPin, VectorNode, VectorSections
from tdbtools.formats.tsection import SectionTable, TSection
from tdbtools.track import (
    BACKWARD,
    FORWARD,
    SectionGeometry,
    Switches,
    Traveller,
    TravellerError,
    item_positions,
    point_at,
)
from tdbtools.track.closure import closure
from tdbtools.track.geometry import TILE_SIZE, locate_in_section
from tdbtools.track.spatial import SectionGrid, clean_geometry, section_grid, track_geometry

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_routes" / "sample" / "ROUTES" / "SAMPLE"

#: Node lengths of the sample route (sample_routes/README.md).
V_A, V_MAIN, V_SID = 2, 4, 6
E_WEST, J1, E_EAST, E_SID = 1, 3, 5, 7


@pytest.fixture(scope="module")
def sample():
    return load_route(SAMPLE, cache=False)


def xyz(t: Traveller) -> np.ndarray:
    return np.array(t.pose().xyz)


def node_length(route: Route, i: int) -> float:
    return float(np.nansum(route.section_length[route.tdb.nodes[i].section_slice]))


# -- tiny synthetic routes ---------------------------------------------------------------

_COLS = (
    "section_index",
    "shape_index",
    "wf_tile_x",
    "wf_tile_z",
    "world_uid",
    "flag1",
    "flag2",
    "flag3",
    "tile_x",
    "tile_z",
    "x",
    "y",
    "z",
    "ax",
    "ay",
    "az",
)


def synthetic_route(
    base: Route, nodes: list, sections: list[dict], extra: dict[int, tuple[float, float, float]] | None = None
) -> Route:
    """A Route in memory. ``nodes`` are (kind, pins, n_sections[, shape]) for nodes 1..N
    (sections taken in order from ``sections``: dicts of section id, x, y, z, ay, ...);
    ``extra`` adds tsection ids: id → (length, radius, angle_deg) (NaN radius = straight)."""
    ts = base.tsection
    tab = ts.sections
    ids, width, length, radius, angle = (
        np.array(a, dtype=float) for a in (tab.ids, tab.width, tab.length, tab.radius, tab.angle)
    )
    for sid, (ln, rad, ang) in (extra or {}).items():
        ids = np.append(ids, sid)
        width = np.append(width, 1.5)
        length = np.append(length, ln)
        radius = np.append(radius, rad)
        angle = np.append(angle, ang)
    o = np.argsort(ids)
    table = SectionTable(ids[o].astype(np.int64), width[o], length[o], radius[o], angle[o])
    tsection = TSection(table, ts.shapes, ts.track_paths, ts.files)
    cols = {c: [] for c in _COLS}
    node_col = []
    built = [None]
    row = 0
    for index, spec in enumerate(nodes, start=1):
        kind, pins = spec[0], tuple(TrPin(a, b) for a, b in spec[1])
        if kind == "vector":
            n = spec[2]
            for s in sections[row : row + n]:
                for c in _COLS:
                    cols[c].append(s.get(c, "00" if c == "flag3" else 0))
                node_col.append(index)
            built.append(VectorNode(index, 1, 1, pins, row, n, ()))
            row += n
        elif kind == "junction":
            built.append(JunctionNode(index, 1, 2, pins, None, spec[2] if len(spec) > 2 else 71))
        else:
            built.append(EndNode(index, 1, 0, pins))
    arrays = {}
    for c in _COLS:
        if c == "flag3":
            arrays[c] = np.array(cols[c], dtype=object)
        elif c in ("x", "y", "z", "ax", "ay", "az"):
            arrays[c] = np.array(cols[c], dtype=np.float64)
        else:
            arrays[c] = np.array(cols[c], dtype=np.int64)
    vs = VectorSections(**arrays, node=np.array(node_col, dtype=np.int64))
    tdb = TrackDB("synthetic.tdb", None, tuple(built), vs, ())
    rows, found = table.rows(vs.section_index)
    lengths = np.where(found, table.arc_length[rows], np.nan)
    return Route("synthetic", "synthetic", base.trk, tdb, None, tsection, lengths)


@pytest.fixture(scope="module")
def worked(sample):
    """The §11 worked example: one right curve R 300 m, 20°, from x −512.25 z 731.5
    heading 30°, between two end nodes."""
    sec = {"section_index": 90001, "x": -512.25, "y": 104.0, "z": 731.5, "ay": math.radians(30)}
    nodes = [("end", [(2, 1)]), ("vector", [(1, 1), (3, 1)], 1), ("end", [(2, 0)])]
    return synthetic_route(sample, nodes, [sec], {90001: (np.nan, 300.0, 20.0)})


# -- the pDirection table (docs/formats.md §12.4) ------------------------------------------


def test_vector_forward_leaves_by_pin_1(sample):
    t = Traveller(sample, V_MAIN, node_length(sample, V_MAIN), FORWARD)
    assert t.next_track_node()
    pin = sample.tdb.nodes[V_MAIN].pins[1]  # (5, 1)
    assert (t.node_index, t.direction) == (pin.link, 1) == (E_EAST, 1)
    assert t.junction_entry_pin == 0


def test_vector_backward_leaves_by_pin_0(sample):
    t = Traveller(sample, V_MAIN, 0.0, BACKWARD)
    assert t.next_track_node()
    assert (t.node_index, t.direction) == (J1, 0)  # TrPin ( 3 0 ): from a branch
    assert t.junction_entry_pin == 1


def test_junction_direction_0_leaves_by_the_trunk(sample):
    t = Traveller(sample, J1, direction=BACKWARD)
    t.switches.set(J1, 1)  # the switch does not matter
    assert t.next_track_node()
    # TrPin ( 2 1 ): V_a walked forward, from its first section at offset 0.
    assert (t.node_index, t.direction, t.section_index, t.offset) == (V_A, 1, 0, 0.0)


@pytest.mark.parametrize("selected, node", [(0, V_MAIN), (1, V_SID)])
def test_junction_direction_1_leaves_by_pin_1_plus_route(sample, selected, node):
    t = Traveller(sample, J1, direction=FORWARD)
    t.switches.set(J1, selected)
    assert t.next_track_node()
    assert (t.node_index, t.direction, t.section_index, t.offset) == (node, 1, 0, 0.0)
    assert t.junction_entry_pin == 0


def test_end_direction_0_leaves_by_pin_0(sample):
    t = Traveller(sample, E_WEST, direction=BACKWARD)
    assert t.next_track_node()
    # TrPin ( 2 0 ): V_a walked backward, entered at the end of its last section.
    n = sample.tdb.nodes[V_A]
    assert (t.node_index, t.direction, t.section_index) == (V_A, 0, n.section_count - 1)
    assert t.offset == pytest.approx(node_length(sample, V_A), abs=1e-9)
    assert t.section_offset == pytest.approx(sample.section_length[n.section_slice][-1])


def test_end_direction_1_is_the_end_of_the_track(sample):
    t = Traveller(sample, E_EAST, direction=FORWARD)
    assert not t.next_track_node()
    assert (t.node_index, t.direction) == (E_EAST, 1)
    assert t.move(7.5) == 7.5
    assert t.move(-2.0) == 0.0  # back into V_main, still facing east
    assert (t.node_index, t.direction) == (V_MAIN, 1)
    assert t.offset == pytest.approx(node_length(sample, V_MAIN) - 2.0)


def test_default_switch_is_the_shape_main_route(sample):
    s = Switches(sample)
    assert s[J1] == s.main_route(J1) == sample.tsection.shape(71).main_route == 0
    with pytest.raises(TravellerError):
        s.set(V_A, 0)  # not a junction
    with pytest.raises(TravellerError):
        s.set(J1, 2)  # J1 has two branches
    s[J1] = 1
    assert dict(s.items()) == {J1: 1}
    s.reset()
    assert s[J1] == 0


def test_main_route_1_leaves_by_pin_2(dk24):
    net = Switches(dk24)
    j = next(
        n.index
        for n in dk24.tdb.nodes[1:]
        if isinstance(n, JunctionNode)
        and dk24.tsection.shape(n.shape_index) is not None
        and dk24.tsection.shape(n.shape_index).main_route == 1
        and n.pins[2].link > 0
    )
    assert net[j] == 1
    t = Traveller(dk24, j, direction=FORWARD, switches=net)
    assert t.next_track_node()
    pin = dk24.tdb.nodes[j].pins[2]
    assert (t.node_index, t.direction) == (pin.link, int(pin.direction > 0))


def test_align_trailing(sample):
    s = Switches(sample)
    assert not s.align_trailing(J1, V_A)  # from the trunk: no change
    assert s[J1] == 0
    assert s.align_trailing(J1, V_SID)
    assert s[J1] == 1
    assert s.align_trailing(J1, V_MAIN)
    assert s[J1] == 0
    # A traveller that runs the switch through from V_sid leaves it set for V_sid.
    t = Traveller(sample, V_SID, 3.0, BACKWARD, switches=s, align_trailing=True)
    assert t.move(10.0) == 0.0
    assert (t.node_index, t.direction) == (V_A, 1)
    assert s[J1] == 1


def test_shared_switches(sample):
    s = Switches(sample)
    a = Traveller(sample, V_A, 10.0, BACKWARD, switches=s)
    b = a.copy()
    assert b.switches is s
    s.set(J1, 1)
    a.move(20.0)
    b.move(20.0)
    assert a.node_index == b.node_index == V_SID
    with pytest.raises(TravellerError):
        Traveller(sample, V_A, switches=Switches(load_route(SAMPLE, cache=False)))


# -- walking the sample route ---------------------------------------------------------


@pytest.mark.parametrize(
    "selected, nodes, end",
    [
        (0, [V_A, J1, V_MAIN, E_EAST], E_EAST),
        (1, [V_A, J1, V_SID, E_SID], E_SID),
    ],
)
def test_walk_through_the_junction(sample, selected, nodes, end):
    t = Traveller(sample, E_WEST, direction=BACKWARD)
    t.switches.set(J1, selected)
    seen = [E_WEST]
    prev = xyz(t)
    step = 2.0
    total = 0.0
    while True:
        rest = t.move(step)
        here = xyz(t)
        assert np.linalg.norm(here - prev) <= step - rest + 0.01
        prev = here
        total += step - rest
        if seen[-1] != t.node_index:
            seen.append(t.node_index)
        if rest:
            break
    # Junctions are passed straight through: the walk never stops on J1.
    assert seen == [E_WEST] + [n for n in nodes if n != J1]
    assert t.node_index == end and t.direction == FORWARD
    assert total == pytest.approx(node_length(sample, V_A) + node_length(sample, nodes[2]), abs=1e-6)
    # and back again, against the switch: trailing moves go through whatever it says
    t.switches.set(J1, 1 - selected)
    assert t.move(-(total + 50.0)) == pytest.approx(-50.0)
    # Still facing the way it faced: away from the buffer it backed into.
    assert t.node_index == E_WEST and t.direction == BACKWARD
    assert t.heading == pytest.approx(Traveller(sample, E_WEST, direction=BACKWARD).heading)


def test_move_stops_at_less_than_a_millimetre(sample):
    t = Traveller(sample, V_MAIN, 100.0)
    assert t.move(0.0005) == 0.0  # inside a section: any distance
    assert t.offset == pytest.approx(100.0005)
    # At a section end, less than 1 mm left is not carried into the next section.
    t = Traveller(sample, V_MAIN, 139.9995)  # section 1 ends at 140 m
    assert t.move(0.0009) == pytest.approx(0.0004)
    assert (t.section_index, t.offset) == (1, pytest.approx(140.0))
    assert t.move(0.0011) == 0.0
    assert (t.section_index, t.offset) == (2, pytest.approx(140.0011))
    assert t.move(float("nan")) == 0.0


def test_negative_move_and_reverse(sample):
    t = Traveller(sample, V_MAIN, 300.0, FORWARD)
    before = (t.state, t.pose())
    assert t.move(-120.0) == 0.0
    assert t.direction == FORWARD
    assert t.offset == pytest.approx(180.0)
    assert t.move(120.0) == 0.0
    assert t.offset == pytest.approx(300.0)
    t.reverse()
    assert t.direction == BACKWARD
    p = t.pose()
    assert p.heading == pytest.approx(math.remainder(before[1].heading + math.pi, 2 * math.pi))
    assert p.pitch == -before[1].pitch and p.grade == -before[1].grade
    assert t.track_node_offset == pytest.approx(node_length(sample, V_MAIN) - 300.0)
    t.reverse()
    assert t.state == pytest.approx(before[0]) and t.pose() == pytest.approx(before[1])
    c = t.copy(reverse=True)
    assert c.direction == BACKWARD and t.direction == FORWARD
    # Negative moves run out of track like positive ones, with the input's sign.
    t = Traveller(sample, V_MAIN, 30.0, FORWARD)
    t.switches.set(J1, 0)
    assert t.move(-500.0) == pytest.approx(-(500.0 - 30.0 - node_length(sample, V_A)))
    assert t.node_index == E_WEST and t.direction == BACKWARD


def test_location_heading_grade_curvature(sample):
    geom = track_geometry(sample)
    t = Traveller(sample, V_MAIN, 470.0)  # in the R500 −5° curve (row 7)
    p = t.pose()
    ref = point_at(geom, t.section_row, t.section_offset)
    assert (p.tile_x, p.tile_z) == (-5631, 15116)
    assert p.xyz == pytest.approx((float(ref.X), float(ref.y), float(ref.Z)), abs=1e-9)
    assert p.heading == pytest.approx(float(ref.heading))
    assert p.curvature == pytest.approx(-1 / 500.0)
    assert p.pitch == -0.005 and p.grade == pytest.approx(math.tan(0.005))  # rising eastward
    t.reverse()
    q = t.pose()
    assert q.curvature == pytest.approx(1 / 500.0) and q.grade == pytest.approx(-math.tan(0.005))
    assert t.location.as_tuple()[:2] == (-5631, 15116) and t.location.X == pytest.approx(p.xyz[0])
    # Positions are normalised into their tile: V_main's last section starts in tile −5630.
    e = Traveller(sample, V_MAIN, node_length(sample, V_MAIN))
    loc = e.location
    assert loc.tile_x == -5630 and -1024 <= loc.x < 1024
    assert (loc.x, loc.z) == pytest.approx((-737.632466, 1.366876), abs=1e-3)  # E_east's UiD
    # On a junction or end node: the neighbouring node's end, facing the way of travel.
    j = Traveller(sample, J1, direction=FORWARD)  # eastbound through J1
    assert j.pose().xyz == pytest.approx(xyz(Traveller(sample, V_MAIN, 0.0)), abs=1e-9)
    assert j.heading == pytest.approx(1.35)
    assert Traveller(sample, J1, direction=BACKWARD).heading == pytest.approx(1.35 - math.pi)
    assert Traveller(sample, E_EAST, direction=FORWARD).heading == pytest.approx(1.292734)
    assert not j.is_on_track and j.is_junction and Traveller(sample, E_EAST).is_end


def test_constructor_checks(sample):
    with pytest.raises(TravellerError, match="no track node"):
        Traveller(sample, 99)
    with pytest.raises(TravellerError, match="outside node"):
        Traveller(sample, V_A, 1000.0)
    with pytest.raises(TravellerError, match="direction"):
        Traveller(sample, V_A, 0.0, 2)
    assert issubclass(TravellerError, TdbToolsError)
    t = Traveller(sample, V_MAIN, 140.0)  # a section boundary: the later one
    assert (t.section_index, t.section_offset) == (2, 0.0)
    assert isinstance(t.node, VectorNode) and t.track_node_length == pytest.approx(1153.633, abs=1e-3)


# -- distances and items ----------------------------------------------------------------


def test_distance_to(sample):
    lengths = {i: node_length(sample, i) for i in (V_A, V_MAIN, V_SID)}
    start = Traveller(sample, V_A, 420.0, BACKWARD)  # MainWE's start, eastbound
    target = Traveller(sample, V_MAIN, 1130.0)
    assert start.distance_to(target) == pytest.approx(420.0 + 1130.0, abs=1e-9)
    # The summed section lengths from V_a's far end to E_east.
    end = Traveller(sample, V_A, lengths[V_A], BACKWARD)
    total = float(
        np.nansum(sample.section_length[sample.tdb.nodes[V_A].section_slice])
        + np.nansum(sample.section_length[sample.tdb.nodes[V_MAIN].section_slice])
    )
    assert end.distance_to(Traveller(sample, E_EAST)) == pytest.approx(total, abs=1e-9)
    # Through the switches as they are set.
    sid = Traveller(sample, V_SID, 450.0)
    assert start.distance_to(sid) is None
    start.switches.set(J1, 1)
    assert start.distance_to(sid) == pytest.approx(870.0)
    assert start.distance_to(sid, max_distance=800.0) is None
    # Behind, and on the same node.
    assert Traveller(sample, V_MAIN, 500.0).distance_to(Traveller(sample, V_MAIN, 400.0)) is None
    assert Traveller(sample, V_MAIN, 500.0, BACKWARD).distance_to(
        Traveller(sample, V_MAIN, 400.0)
    ) == pytest.approx(100.0)
    # A world point, tested section by section as Open Rails does.
    p = Traveller(sample, V_MAIN, 1130.0).location
    assert start.distance_to((p.tile_x, p.tile_z, p.x, p.z)) is None  # switch set to V_sid
    start.switches.set(J1, 0)
    assert start.distance_to((p.tile_x, p.tile_z, p.x, p.z)) == pytest.approx(1550.0, abs=1e-6)
    assert Traveller(sample, V_MAIN, 1140.0).distance_to((p.tile_x, p.tile_z, p.x, p.z)) is None


def test_item_positions_match_sdata(sample):
    pos = item_positions(sample)
    assert sorted(pos) == [V_A, V_MAIN, V_SID]
    for node, items in pos.items():
        assert [p.item.index for p in items] == sorted(sample.tdb.nodes[node].item_refs)
        for p in items:
            assert p.source == "rdata" and abs(p.lateral) < 1e-3
            assert p.offset == pytest.approx(p.item.s_data.distance, abs=1e-3)


def test_items_passed_in_order(sample):
    t = Traveller(sample, E_WEST, direction=BACKWARD)  # eastbound from the west end
    la = node_length(sample, V_A)
    rest, passed = t.move_collect(5000.0)
    assert rest == pytest.approx(5000.0 - la - node_length(sample, V_MAIN))
    assert [p.item.index for p in passed] == [3, 2, 1, 0, 4, 5, 6, 7]
    for p in passed:
        s = p.item.s_data.distance
        expected = la - s if p.node_index == V_A else la + s
        assert p.distance == pytest.approx(expected, abs=1e-3)
        assert p.direction == (0 if p.node_index == V_A else 1)
    # In pieces: every item exactly once, at the same distances.
    t = Traveller(sample, E_WEST, direction=BACKWARD)
    t.switches.set(J1, 1)
    got, done = [], 0.0
    for step in [15.0, 22.2660, 200.0, 0.7339, 300.0, 250.0, 5000.0]:
        rest, passed = t.move_collect(step)
        got += [(p.item.index, done + p.distance) for p in passed]
        done += step - rest
    assert [i for i, _ in got] == [3, 2, 1, 0, 8, 9, 10]
    for i, d in got:
        s = sample.tdb.items[i].s_data.distance
        assert d == pytest.approx(la - s if i < 4 else la + s, abs=1e-3)
    # Backwards (negative move): the same items in the opposite order.
    rest, passed = t.move_collect(-(done + 10.0))
    assert rest == pytest.approx(-10.0)
    assert [p.item.index for p in passed] == [10, 9, 8, 0, 1, 2, 3]


# -- placing world points ----------------------------------------------------------------


def test_at_round_trip_sample(sample):
    rng = np.random.default_rng(5)
    geom = track_geometry(sample)
    for node in (V_A, V_MAIN, V_SID):
        n = sample.tdb.nodes[node]
        length = node_length(sample, node)
        for off in np.r_[rng.uniform(0, length, 25), 0.0, length]:
            t0 = Traveller(sample, node, off)
            lat = rng.uniform(-2.0, 2.0)
            p = point_at(geom, t0.section_row, t0.section_offset, lat)
            t = Traveller.at(sample, int(p.tile_x), int(p.tile_z), float(p.x), float(p.z))
            assert t.direction == FORWARD
            if t.node_index == node:
                assert t.offset == pytest.approx(off, abs=0.01)
            else:  # near J1, where the branches are < 2 m apart: nearer track
                assert off < 80.0 or node == V_A and off < 0.5
                loc = Traveller.locate_many(sample, p.tile_x, p.tile_z, p.x, p.z)
                assert loc.node[0] == t.node_index and abs(loc.lateral[0]) <= abs(lat) + 1e-3
        assert n.section_count


def test_at_far_from_track(sample):
    with pytest.raises(TravellerError, match=r"nearest track centre line is 10\.00 m away \(node 4\)"):
        t = Traveller(sample, V_MAIN, 700.0)
        p = point_at(track_geometry(sample), t.section_row, t.section_offset, 10.0)
        Traveller.at(sample, int(p.tile_x), int(p.tile_z), float(p.x), float(p.z))
    with pytest.raises(TravellerError, match="no track within"):
        Traveller.at(sample, 0, 0, 0.0, 0.0)
    # A larger tolerance finds it.
    assert Traveller.at(
        sample, int(p.tile_x), int(p.tile_z), float(p.x), float(p.z), max_lateral=10.5
    ).offset == pytest.approx(700.0)
    loc = Traveller.locate_many(
        sample, [0, int(p.tile_x)], [0, int(p.tile_z)], [0.0, float(p.x)], [0.0, float(p.z)]
    )
    assert loc.found.tolist() == [False, False] and loc.node.tolist() == [0, 0]


def test_slightly_negative_offset(sample):
    # 0.3 m into V_a from J1: V_a (offset 0.3) and the branches (offset −0.3) all
    # accept it on their centre lines; whichever wins, the position is the same.
    t = Traveller(sample, V_SID, 0.0)
    g = track_geometry(sample)
    p = point_at(g, t.section_row, -0.3)
    a = Traveller.at(sample, int(p.tile_x), int(p.tile_z), float(p.x), float(p.z))
    assert a.offset == pytest.approx(0.3 if a.node_index == V_A else -0.3, abs=1e-6)
    assert a.pose().xyz[::2] == pytest.approx((float(p.X), float(p.Z)), abs=1e-6)
    # Alone on a node, a point up to 0.5 m before its start keeps a negative offset.
    route = synthetic_route(
        sample,
        [("end", [(2, 1)]), ("vector", [(1, 1), (3, 1)], 1), ("end", [(2, 0)])],
        [{"section_index": 3, "ay": 0.5}],
    )
    for lon, ok in [(-0.3, True), (-0.49, True), (-0.51, False), (250.3, True), (250.6, False)]:
        p = point_at(track_geometry(route), 0, lon, 1.0)
        if ok:
            t = Traveller.at(route, 0, 0, float(p.x), float(p.z))
            assert t.offset == pytest.approx(min(lon, 250.0))  # clipped at the node end
            if lon < 0:
                assert t.move(1.0) == 0.0 and t.offset == pytest.approx(lon + 1.0)
            else:
                assert t.move(1.0) == 1.0 and t.is_end
        else:
            with pytest.raises(TravellerError):
                Traveller.at(route, 0, 0, float(p.x), float(p.z))


def test_asin_gotcha_exact_projection(worked):
    """A point 1 m outside the worked curve's midpoint is at lon 52.360 m (asin: 52.536)."""
    g = track_geometry(worked)
    assert g.length[0] == pytest.approx(104.7198, abs=1e-4)
    mid = 300.0 * math.radians(10)
    p = point_at(g, 0, mid, -1.0)  # 1 m outside (left of a right curve)
    assert (float(p.x), float(p.z)) == pytest.approx(
        (-482.2557 - math.cos(math.radians(40)), 774.3363 + math.sin(math.radians(40))), abs=1e-4
    )
    t = Traveller.at(worked, 0, 0, float(p.x), float(p.z))
    assert t.offset == pytest.approx(52.360, abs=5e-4)
    assert abs(t.offset - 52.536) > 0.17
    # Open Rails' asin lon, for the record: asin(z'/R)·R with z' the forward coordinate.
    ay = math.radians(30)
    dx, dz = float(p.x) + 512.25, float(p.z) - 731.5
    forward = dx * math.sin(ay) + dz * math.cos(ay)
    assert math.asin(forward / 300.0) * 300.0 == pytest.approx(52.536, abs=5e-4)
    loc = Traveller.locate_many(worked, 0, 0, float(p.x), float(p.z))
    assert loc.lateral[0] == pytest.approx(-1.0) and loc.offset[0] == pytest.approx(mid)
    assert loc.found_fraction == 1.0 and loc.traveller(0).state == t.state
    # and the pose at the midpoint is the worked example's
    q = Traveller(worked, 2, mid).pose()
    assert (q.x, q.z, q.heading) == pytest.approx((-482.2557, 774.3363, math.radians(40)), abs=1e-4)


def test_zero_length_sections_and_data_oddities(sample):
    """Zero-length 'curves' (radius 5e-43, angle 0) walk and place correctly; an end node
    entered with direction 0 sends the traveller back (table row end 0); broken links
    stop a walk; a loop of zero-length nodes does not hang."""
    z = {"section_index": 90002, "x": 0.0, "z": 0.0, "ay": 0.0}
    secs = [
        {"section_index": 3, "ay": 0.0},  # 250 m north
        dict(z, z=250.0),  # zero length
        {"section_index": 3, "z": 250.0, "ay": 0.0},
    ]
    nodes = [
        ("end", [(2, 1)]),
        ("vector", [(1, 1), (3, 0)], 3),  # into E3 with direction 0
        ("end", [(2, 0)]),
        ("junction", [(2, 1), (0, 1), (99, 1)]),  # broken links
        ("junction", [(6, 1), (6, 1), (6, 1)]),  # junction ↔ junction loop
        ("junction", [(5, 1), (5, 1), (5, 1)]),
    ]
    route = synthetic_route(sample, nodes, secs, {90002: (np.nan, 5.19882e-43, 0.0)})
    assert track_geometry(route).length.tolist() == [250.0, 0.0, 250.0]
    t = Traveller(route, 2, 245.0)
    assert t.move(10.0) == 0.0 and t.offset == pytest.approx(255.0) and t.section_index == 2
    assert t.pose().z == pytest.approx(255.0)
    # A point 1 m past the zero-length section is in the last section, not "at" the zero one.
    a = Traveller.at(route, 0, 0, 0.4, 251.0)
    assert (a.section_index, a.offset) == (2, pytest.approx(251.0))
    # The end node entered with direction 0 leaves by TrPins[0]: back into node 2.
    t = Traveller(route, 2, 490.0)
    assert t.move(20.0) == 0.0
    assert (t.node_index, t.direction) == (2, 0) and t.offset == pytest.approx(490.0)
    # Links ≤ 0 or ≥ the node count end the track.
    for route_no in (0, 1):
        j = Traveller(route, 4, direction=FORWARD)
        j.switches.set(4, route_no)
        assert not j.next_track_node() and j.move(3.0) == 3.0
    # Zero-length loops stop, and so do searches around them.
    assert Traveller(route, 5, direction=FORWARD).move(5.0) == 5.0
    assert Traveller(route, 5, direction=FORWARD).distance_to(Traveller(route, 2, 1.0)) is None
    assert Traveller(route, 5, direction=FORWARD).distance_to((0, 0, 0.0, 1.0)) is None
    assert Traveller(route, 2, 10.0).distance_to(Traveller(route, 2, 5.0)) == pytest.approx(985.0)


def test_spatial_index_candidates(sample):
    geom = track_geometry(sample)
    grid = section_grid(sample)
    assert section_grid(sample) is grid  # cached per route
    rng = np.random.default_rng(3)
    rows = rng.integers(0, len(geom), 300)
    off = rng.uniform(0.0, 1.0, 300) * geom.length[rows] + rng.uniform(-0.5, 0.5, 300)
    lat = rng.uniform(-2.9, 2.9, 300)
    p = point_at(geom, rows, off, lat)
    pi, cand = grid.pairs(p.X, p.Z)
    for i in range(300):
        assert rows[i] in cand[pi == i]
        assert set(grid.candidates(p.X[i], p.Z[i]).tolist()) == set(cand[pi == i].tolist())
    assert len(grid.pairs([np.nan, 1e12], [0.0, 0.0])[0]) == 0
    empty = SectionGrid.build(SectionGeometry.from_arrays(x=[], length=[]))
    assert len(empty.pairs([0.0], [0.0])[1]) == 0


def test_clean_geometry():
    g = SectionGeometry.from_arrays(
        radius=[5e-43, 300.0, np.nan], angle=[0.0, 0.2, 0.0], length=[np.nan, np.nan, 10.0]
    )
    c = clean_geometry(g)
    assert np.isnan(c.radius[0]) and c.length[0] == 0.0
    assert c.radius[1] == 300.0 and c.length[1] == pytest.approx(60.0) and c.length[2] == 10.0


# -- DK24 ------------------------------------------------------------------------------


def _join_gaps(route: Route) -> dict[int, float]:
    c = closure(route)
    return {int(r): float(g) for r, g in zip(c.join_row, c.join_gap)}


@pytest.mark.dk24
def test_dk24_walk_every_node_both_ways(dk24):
    """Every vector node, both directions, positions every ≤ 10 m: consecutive
    positions are at most step + 1 cm apart, plus the recorded gap of every join
    crossed (closure). Jumps of more than 1 m happen only at the two known gaps."""
    gaps = _join_gaps(dk24)
    big = set()
    worst = 0.0
    for n in dk24.tdb.nodes[1:]:
        if not isinstance(n, VectorNode) or n.section_count == 0:
            continue
        length = node_length(dk24, n.index)
        for d in (FORWARD, BACKWARD):
            t = Traveller(dk24, n.index, 0.0 if d else length, d)
            # Plain tuples and math.dist: ~170,000 positions, where an array and
            # np.linalg.norm per step were half the test's time.
            prev, prow = t.pose().xyz, t.section_row
            left = lost = 0.0
            left = length
            while left > 1e-9:
                step = min(10.0, left)
                rest = t.move(step)
                assert rest < 0.001  # only sub-mm rests at section ends
                lost += rest
                left -= step
                here, row = t.pose().xyz, t.section_row
                jump = math.dist(here, prev)
                crossed = sum(gaps.get(k, 0.0) for k in range(min(prow, row), max(prow, row)))
                assert jump <= step + 0.01 + crossed, (n.index, d, row, jump, step)
                worst = max(worst, jump - step - crossed)
                if jump > step + 1.0:
                    big.add((n.index, d))
                prev, prow = here, row
            assert t.node_index == n.index
            assert t.offset == pytest.approx(length - lost if d else lost, abs=1e-6)
    assert big == {(660, 0), (660, 1), (1493, 0), (1493, 1)}
    assert worst < 0.005


@pytest.mark.dk24
def test_dk24_known_gaps(dk24):
    """Nodes 660 and 1493: the first section's AY is off by π, so walking jumps
    (100 m, 25.73 m) at the join but still advances by arc length."""
    c = closure(dk24)
    for node, gap in [(660, 100.0), (1493, 25.73)]:
        k = int(np.flatnonzero((c.join_node == node) & (c.join_section == 0))[0])
        assert c.join_gap[k] == pytest.approx(gap, abs=0.01)
        assert abs(c.join_turn[k]) == pytest.approx(math.pi, abs=1e-5)
        first = dk24.section_length[dk24.tdb.nodes[node].section_slice][0]
        t = Traveller(dk24, node, first - 1.0)
        a = xyz(t)
        assert t.move(2.0) == 0.0 and t.section_index == 1
        assert t.offset == pytest.approx(first + 1.0)
        assert np.linalg.norm(xyz(t) - a) == pytest.approx(gap, abs=2.5)


@pytest.mark.dk24
def test_dk24_walk_through_every_junction(dk24):
    """Every junction, from the trunk with each route and from each branch: 5 m before
    to 5 m after, in 0.5 m steps. The walk ends in the node the pin table names,
    continuously (1 cm plus the recorded gaps of the node ends at that junction),
    and stops at junctions whose exit pin links nowhere."""
    c = closure(dk24)
    end_gap: dict[int, float] = {}
    for link, gap in zip(c.end_link, c.end_gap):
        end_gap[int(link)] = end_gap.get(int(link), 0.0) + (0.0 if np.isnan(gap) else float(gap))
    nodes = dk24.tdb.nodes
    count = len(nodes)

    def vector(i: int) -> bool:
        return 0 < i < count and isinstance(nodes[i], VectorNode)

    cases = stops = 0
    for j in nodes[1:]:
        if not isinstance(j, JunctionNode):
            continue
        plans = []
        trunk = j.pins[0].link
        if vector(trunk):
            plans += [(trunk, 1, r, j.pins[1 + r]) for r in range(len(j.pins) - 1)]
        plans += [(p.link, 0, None, j.pins[0]) for p in j.pins[1:] if vector(p.link)]
        for start, pdir, route_no, exit_pin in plans:
            pins = nodes[start].pins
            p = max(k for k in (0, 1) if pins[k].link == j.index and pins[k].direction == pdir)
            length = node_length(dk24, start)
            before = min(5.0, length)
            t = Traveller(dk24, start, length - before if p == 1 else before, 1 if p == 1 else 0)
            if route_no is not None:
                t.switches.set(j.index, route_no)
            after = min(5.0, node_length(dk24, exit_pin.link)) if vector(exit_pin.link) else 5.0
            total, moved, prev, rest = before + after, 0.0, xyz(t), 0.0
            while moved < total - 1e-9:
                step = min(0.5, total - moved)
                rest = t.move(step)
                here = xyz(t)
                assert np.linalg.norm(here - prev) <= step + 0.01 + end_gap.get(j.index, 0.0)
                prev = here
                moved += step - rest
                if rest >= 0.001:
                    break
            cases += 1
            if vector(exit_pin.link):
                assert (t.node_index, t.direction) == (exit_pin.link, int(exit_pin.direction > 0))
                assert t.track_node_offset == pytest.approx(after, abs=1e-3)
            else:
                stops += 1
                assert t.node_index == j.index and rest > 0.0
                assert moved == pytest.approx(before, abs=1e-3)
    assert cases > 3000 and stops == 32  # 16 junctions have trunk link 0


def _reference(route: Route, tx, tz, x, z, rows_all):
    """docs/formats.md §12.2 by brute force over every section: per node the first accepting
    section, then the smallest |lateral|, ties to the lowest node. Then (our exact
    offsets) the first later section of that node holding the point, if the point is
    past the first one's end. Returns node, row (−1: carried on) and its lateral."""
    geom = track_geometry(route)
    out_node = np.zeros(len(x), dtype=np.int64)
    out_row = np.full(len(x), -1, dtype=np.int64)
    out_lat = np.full(len(x), np.nan)
    # Only to save time, not a search structure: a section accepts a point (|lateral| <=
    # 2.5, -0.5 <= lon <= length + 0.5) only if the point is within 3 * (length + 3) m
    # of its start (in the section frame |(lat, lon)| <= length + 3 as a chord is no
    # longer than its arc; undoing pitch and roll at most triples that), so the sections
    # farther away cannot change the result and are not scanned.
    sx = geom.tile_x[rows_all] * TILE_SIZE + geom.x[rows_all]
    sz = geom.tile_z[rows_all] * TILE_SIZE + geom.z[rows_all]
    reach = 3.0 * (geom.length[rows_all] + 3.0) + 1.0
    for i in range(len(x)):
        near = np.hypot(tx[i] * TILE_SIZE + x[i] - sx, tz[i] * TILE_SIZE + z[i] - sz) <= reach
        rows = rows_all[near]
        lat, lon = locate_in_section(geom, rows, tx[i], tz[i], x[i], z[i])
        length = geom.length[rows]
        ok = (np.abs(lat) <= 2.5) & (lon >= -0.5) & (lon <= length + 0.5)
        if not ok.any():
            continue
        r, la, lo, ln = rows[ok], lat[ok], lon[ok], length[ok]
        nd = geom.node[r]
        first = np.flatnonzero(np.r_[True, nd[1:] != nd[:-1]])
        k = first[np.lexsort((nd[first], np.abs(la[first])))[0]]
        out_node[i], out_row[i], out_lat[i] = nd[k], r[k], la[k]
        if lo[k] > ln[k]:
            later = np.flatnonzero((nd == nd[k]) & (r > r[k]) & (lo >= 0) & (lo <= ln))
            if len(later):
                out_row[i], out_lat[i] = r[later[0]], la[later[0]]
            else:
                out_row[i] = -1
    return out_node, out_row, out_lat


@pytest.mark.dk24
@pytest.mark.parametrize("noise", [0.0, 2.0])
def test_dk24_round_trip(dk24, noise):
    """2000 random track points (uniform along the whole track) with up to ``noise`` m
    lateral noise are placed back by Traveller.at / locate_many.

    Judged strictly: (1) the result is exactly the spec rule's (a brute-force scan
    of every section agrees on node and lateral); (2) on the sampled node, the
    offset is within 1 cm; (3) a result on another node is a track at least as near
    as the sampled one (|lateral| not larger, within 1 mm) whose (offset, lateral)
    rebuild the query point within 1 mm: coincident track at switches and overlaps.
    """
    rng = np.random.default_rng(2024 + int(noise))
    geom = track_geometry(dk24)
    length = np.nan_to_num(geom.length)
    live = np.flatnonzero(length > 0)
    rows = rng.choice(live, 2000, p=length[live] / length[live].sum())
    soff = rng.uniform(0.0, 1.0, 2000) * length[rows]
    lat = rng.uniform(-noise, noise, 2000)
    p = point_at(geom, rows, soff, lat)
    loc = Traveller.locate_many(dk24, p.tile_x, p.tile_z, p.x, p.z)
    assert loc.found.all()
    cum = np.zeros(len(geom))
    for n in dk24.tdb.nodes[1:]:
        if isinstance(n, VectorNode) and n.section_count:
            sl = n.section_slice
            cum[sl] = np.concatenate([[0.0], np.cumsum(length[sl])[:-1]])
    true_node = geom.node[rows]
    true_off = cum[rows] + soff
    same = loc.node == true_node
    assert np.abs(loc.offset[same] - true_off[same]).max() <= 0.01
    other = np.flatnonzero(~same)
    assert len(other) <= (0.002 if noise == 0 else 0.06) * len(rows)
    assert np.all(np.abs(loc.lateral[other]) <= np.abs(lat[other]) + 1e-3)
    # The found (section, offset, lateral) is the point's projection on that section;
    # the offset is only clipped at a node end, for a point up to 0.5 m beyond it.
    la, lo = locate_in_section(geom, loc.row[other], p.tile_x[other], p.tile_z[other], p.x[other], p.z[other])
    assert np.abs(la - loc.lateral[other]).max(initial=0.0) <= 1e-6
    clipped = np.abs(lo - loc.section_offset[other]) > 1e-6
    at_end = np.isclose(loc.offset[other], [node_length(dk24, n) for n in loc.node[other]])
    assert np.all(at_end[clipped])
    assert np.all(lo[clipped] - loc.section_offset[other][clipped] <= 0.5)
    # The spec rule by brute force (a scan of all 18 562 sections for every point).
    sub = np.arange(2000)
    ref_node, ref_row, ref_lat = _reference(
        dk24, p.tile_x[sub], p.tile_z[sub], p.x[sub], p.z[sub], np.flatnonzero(geom.known)
    )
    assert np.array_equal(ref_node, loc.node[sub])
    exact = ref_row >= 0
    assert np.array_equal(ref_row[exact], loc.row[sub][exact])
    np.testing.assert_allclose(ref_lat[exact], loc.lateral[sub][exact], rtol=0, atol=1e-9)
    # Traveller.at agrees with locate_many.
    for i in sub[:40]:
        t = Traveller.at(dk24, int(p.tile_x[i]), int(p.tile_z[i]), float(p.x[i]), float(p.z[i]))
        assert (t.node_index, t.section_row) == (loc.node[i], loc.row[i])
        assert t.offset == pytest.approx(loc.offset[i], abs=1e-9)


@pytest.mark.dk24
def test_dk24_items(dk24):
    pos = item_positions(dk24)
    placed = [p for v in pos.values() for p in v]
    refs = sum(len(n.item_refs) for n in dk24.tdb.nodes[1:] if isinstance(n, VectorNode))
    assert len(placed) == refs
    assert all(p.source == "rdata" for p in placed)
    assert np.median([abs(p.lateral) for p in placed]) < 0.01
    # A walk over a node both ways meets its items in opposite orders.
    node = max(pos, key=lambda k: len(pos[k]))
    length = node_length(dk24, node)
    fwd = Traveller(dk24, node, 0.0).move_collect(length)[1]
    bwd = Traveller(dk24, node, length, BACKWARD).move_collect(length)[1]
    assert [p.item.index for p in fwd] == [p.item.index for p in reversed(bwd)]
    assert [p.item.index for p in fwd] == [p.item.index for p in pos[node]]
    for f in fwd:
        assert f.distance == pytest.approx(f.offset)


@pytest.mark.dk24
def test_dk24_locate_in_runs_of_points_is_the_same(dk24, monkeypatch):
    """locate_many works through the points in runs of at most _LOCATE_PAIRS candidate
    pairs (memory): tiny runs give exactly the one-run results."""
    from tdbtools.track import bulk_locate as bulk_mod

    rng = np.random.default_rng(16)
    geom = track_geometry(dk24)
    length = np.nan_to_num(geom.length)
    rows = rng.choice(np.flatnonzero(length > 0), 300)
    p = point_at(geom, rows, rng.uniform(0.0, 1.0, 300) * length[rows], rng.uniform(-3.0, 3.0, 300))
    whole = Traveller.locate_many(dk24, p.tile_x, p.tile_z, p.x, p.z)
    monkeypatch.setattr(bulk_mod, "_LOCATE_PAIRS", 5)
    assert len(bulk_mod._point_runs(section_grid(dk24).counts(*p.xyz[:, ::2].T))) > 50
    runs = Traveller.locate_many(dk24, p.tile_x, p.tile_z, p.x, p.z)
    assert not whole.found.all() and whole.found.any()  # both kinds of point are checked
    for name in ("found", "node", "section", "row", "offset", "section_offset", "lateral"):
        assert np.array_equal(getattr(whole, name), getattr(runs, name), equal_nan=True), name
