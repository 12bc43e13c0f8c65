"""Route audit: the clean sample route, one synthetic defect at a time, the paths
check, and the real DK24 figures."""

from __future__ import annotations

import dataclasses
import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from helpers import DK24_ROUTE

from tdbtools.formats import load_route
from tdbtools.formats.route import Route
from tdbtools.formats.tdb import TrPin, VectorNode
from tdbtools.track import WorldPoint, audit_paths, audit_route, nearest_track, point_at, section_geometry
from tdbtools.track.audit import CODES

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_routes" / "sample" / "ROUTES" / "SAMPLE"
DK24 = DK24_ROUTE


@pytest.fixture(scope="module")
def sample() -> Route:
    return load_route(SAMPLE, cache=False)


@pytest.fixture(scope="module")
def dk24_report(dk24_audit):
    return dk24_audit  # the audit made once for the run (conftest.py)


# -- building defective copies ---------------------------------------------------------


def with_node(route: Route, index: int, **changes) -> Route:
    nodes = list(route.tdb.nodes)
    nodes[index] = dataclasses.replace(nodes[index], **changes)
    return dataclasses.replace(route, tdb=dataclasses.replace(route.tdb, nodes=tuple(nodes)))


def with_item(route: Route, index: int, **changes) -> Route:
    items = list(route.tdb.items)
    items[index] = dataclasses.replace(items[index], **changes)
    return dataclasses.replace(route, tdb=dataclasses.replace(route.tdb, items=tuple(items)))


def with_section_column(route: Route, column: str, row: int, value) -> Route:
    s = route.tdb.sections
    col = np.array(getattr(s, column))
    col[row] = value
    return dataclasses.replace(
        route, tdb=dataclasses.replace(route.tdb, sections=dataclasses.replace(s, **{column: col}))
    )


def found(report) -> dict[str, list[tuple[tuple[int, ...], tuple[int, ...]]]]:
    out: dict = defaultdict(list)
    for f in report.findings:
        out[f.code].append((f.nodes, f.items))
    return dict(out)


def row_of(route: Route, node: int, position: int) -> int:
    n = route.tdb.nodes[node]
    assert isinstance(n, VectorNode)
    return n.first_section + position


# -- the clean sample ------------------------------------------------------------------


def test_sample_audits_clean(sample):
    rep = audit_route(sample)
    assert [str(f) for f in rep.findings] == []
    assert rep.counts == {}
    assert rep.closure["joins"] == 14 and rep.closure["p99"] < 1e-3 and rep.closure["max"] < 1e-3
    assert rep.node_ends["count"] == 6 and rep.node_ends["max"] < 1e-3
    assert rep.stats["items"]["checked"] == 11 and rep.stats["items"]["distance_max"] < 1e-3
    # TrItemSData distance = distance along the node from its start (sample README).
    assert rep.stats["items"]["sdata_offset_max"] < 1e-3


def test_report_json(sample):
    rep = audit_route(with_node(sample, 7, pins=(TrPin(99, 0),)))
    j = json.loads(json.dumps(rep.to_json()))
    assert j["route"] == sample.name
    assert set(j) >= {"route", "findings", "closure", "counts"}
    assert set(j["closure"]) == {"joins", "p50", "p99", "max"}
    assert j["counts"] == {"PIN_ASYMMETRIC": 1, "PIN_OUT_OF_RANGE": 1}
    f = next(f for f in j["findings"] if f["code"] == "PIN_OUT_OF_RANGE")
    assert set(f) >= {"code", "message", "nodes", "items", "location"}
    assert f["nodes"] == [7] and f["items"] == []
    assert set(f["location"]) == {"tile_x", "tile_z", "x", "y", "z"}
    assert all(f["code"] in CODES for f in j["findings"])


# -- one defect at a time --------------------------------------------------------------


def _pin_out_of_range(r):
    return with_node(r, 7, pins=(TrPin(99, 0),))


def _pin_unconnected(r):
    return with_node(r, 7, pins=(TrPin(0, 0),))


def _pin_asymmetric(r):
    j = r.tdb.nodes[3]
    return with_node(r, 3, pins=(j.pins[0], j.pins[1], TrPin(4, 1)))


def _pin_direction(r):
    v = r.tdb.nodes[4]
    return with_node(r, 4, pins=(v.pins[0], TrPin(5, 0)))


def _pin_count(r):
    return with_node(r, 1, out_pins=1)


def _missing_item_ref(r):
    return with_node(r, 6, item_refs=r.tdb.nodes[6].item_refs + (42,))


def _duplicate_item_ref(r):
    return with_node(r, 4, item_refs=r.tdb.nodes[4].item_refs + (8,))


def _unreferenced_item(r):
    return with_node(r, 6, item_refs=(8, 9))


def _item_off_track(r):
    it = r.tdb.items[5]
    rd = it.r_data
    ay = 1.35 + 0.08 - 0.05 - math.radians(5)  # heading of V_main where the crossing is
    moved = dataclasses.replace(rd, x=rd.x + 20 * math.cos(ay), z=rd.z - 20 * math.sin(ay))
    return with_item(r, 5, r_data=moved)


def _item_id_mismatch(r):
    return with_item(r, 3, item_id=33)


def _item_link_broken(r):
    return with_item(r, 1, linked_item=3)


def _unknown_section(r):
    row = row_of(r, 4, 6)  # the dynamic 40003 piece (no items on it)
    assert r.tdb.sections.section_index[row] == 40003
    bad = with_section_column(r, "section_index", row, 99999)
    length = np.array(r.section_length)
    length[row] = np.nan  # as load_route leaves an unknown section
    return dataclasses.replace(bad, section_length=length)


def _gap_in_node(r):
    row = row_of(r, 4, 3)  # a 250 m straight in the middle of V_main
    return with_section_column(r, "x", row, r.tdb.sections.x[row] + 2.0)


def _heading_kink(r):
    row = row_of(r, 6, 0)  # V_sid's 17.9 m first piece, turned by 0.02 rad
    return with_section_column(r, "ay", row, r.tdb.sections.ay[row] + 0.02)


def _uid_missing(r):
    return with_node(r, 3, uid=None)


def _node_end_gap(r):
    u = r.tdb.nodes[5].uid
    return with_node(r, 5, uid=dataclasses.replace(u, z=u.z + 3.0))


DEFECTS = {
    # name: (make, {code: [(nodes, items), ...]})
    "pin_out_of_range": (
        _pin_out_of_range,
        {
            "PIN_OUT_OF_RANGE": [((7,), ())],
            # V_sid still points at E_sid, which no longer points back
            "PIN_ASYMMETRIC": [((6, 7), ())],
        },
    ),
    "pin_unconnected": (
        _pin_unconnected,
        {"PIN_UNCONNECTED": [((7,), ())], "PIN_ASYMMETRIC": [((6, 7), ())]},
    ),
    # J1's route-1 pin moved to V_main: V_sid is left pointing at J1.
    "pin_asymmetric": (_pin_asymmetric, {"PIN_ASYMMETRIC": [((6, 3), ())]}),
    # V_main's end pin says "enter E_east from a branch": both pins disagree with it.
    "pin_direction": (_pin_direction, {"PIN_DIRECTION": [((4, 5), ()), ((5, 4), ())]}),
    "pin_count": (_pin_count, {"PIN_COUNT": [((1,), ())]}),
    "unknown_section": (_unknown_section, {"SECTION_UNKNOWN": [((4,), ())]}),
    "missing_item_ref": (_missing_item_ref, {"ITEM_REF_MISSING": [((6,), (42,))]}),
    # ... and V_main's new reference points at an item that lies on V_sid
    "duplicate_item_ref": (
        _duplicate_item_ref,
        {"ITEM_REF_DUPLICATE": [((4, 6), (8,))], "ITEM_OFF_TRACK": [((4,), (8,))]},
    ),
    "unreferenced_item": (_unreferenced_item, {"ITEM_UNREFERENCED": [((), (10,))]}),
    "item_off_track": (_item_off_track, {"ITEM_OFF_TRACK": [((4,), (5,))]}),
    "item_id_mismatch": (_item_id_mismatch, {"ITEM_ID_MISMATCH": [((2,), (3,))]}),
    # platform 1 now points at a speed post, and platform 2's partner no longer points back
    "item_link_broken": (_item_link_broken, {"ITEM_LINK_BROKEN": [((2,), (1, 3)), ((2,), (2, 1))]}),
    # the section is moved 2 m: a gap before and after it
    "gap_in_node": (_gap_in_node, {"GAP_IN_NODE": [((4,), ()), ((4,), ())]}),
    # its end moves only 0.36 m (no gap), but the heading jumps at the next section
    "heading_kink": (_heading_kink, {"HEADING_KINK": [((6,), ())]}),
    "uid_missing": (_uid_missing, {"UID_MISSING": [((3,), ())]}),
    "node_end_gap": (_node_end_gap, {"GAP_AT_NODE_END": [((4, 5), ())]}),
}


@pytest.mark.parametrize("name", sorted(DEFECTS))
def test_synthetic_defect(sample, name):
    make, expected = DEFECTS[name]
    rep = audit_route(make(sample))
    assert found(rep) == expected, [str(f) for f in rep.findings]
    for f in rep.findings:
        assert f.severity == CODES[f.code]
        assert f.message


def test_defect_locations(sample):
    rep = audit_route(_item_off_track(sample))
    (f,) = rep.findings
    rd = _item_off_track(sample).tdb.items[5].r_data
    assert (f.location.tile_x, f.location.tile_z) == (rd.tile_x, rd.tile_z)
    assert f.location.x == pytest.approx(rd.x) and f.location.z == pytest.approx(rd.z)
    assert f.value == pytest.approx(20.0, abs=1e-3)

    rep = audit_route(_node_end_gap(sample))
    (f,) = rep.findings
    assert f.value == pytest.approx(3.0, abs=1e-3)
    u = sample.tdb.nodes[5].uid  # V_main's end is where E_east used to be
    assert (f.location.tile_x, f.location.tile_z) == (u.tile_x, u.tile_z)
    assert f.location.x == pytest.approx(u.x, abs=1e-3) and f.location.z == pytest.approx(u.z, abs=1e-3)

    rep = audit_route(_gap_in_node(sample))
    assert [f.value for f in rep.findings] == [pytest.approx(2.0, abs=1e-6)] * 2
    assert all(-1024 <= f.location.x < 1024 and -1024 <= f.location.z < 1024 for f in rep.findings)


def test_reversed_section_is_explained(sample):
    # Lay the first section of V_sid with its heading turned by π, as DK24 does twice.
    row = row_of(sample, 6, 0)
    r = with_section_column(sample, "ay", row, sample.tdb.sections.ay[row] + math.pi)
    rep = audit_route(r)
    (f,) = rep.findings
    assert f.code == "GAP_IN_NODE" and f.nodes == (6,)
    length = float(sample.section_length[row])
    assert f.value == pytest.approx(2 * length, abs=1e-3)
    assert "reversed by π" in f.message
    # A plain gap is not blamed on a reversal.
    rep = audit_route(_gap_in_node(sample))
    assert all("reversed" not in f.message for f in rep.findings)


def test_thresholds_are_configurable(sample):
    r = _gap_in_node(sample)
    assert audit_route(r, gap_tolerance=2.5).counts == {}
    assert audit_route(_node_end_gap(sample), node_end_tolerance=3.5).counts == {}
    assert audit_route(_item_off_track(sample), item_tolerance=25).counts == {}
    rep = audit_route(_unreferenced_item(sample), unreferenced_items=False)
    assert rep.counts == {}
    assert audit_route(sample, gap_tolerance=0.25).thresholds["gap_tolerance"] == 0.25


def test_problems_by_severity(sample):
    rep = audit_route(_unreferenced_item(sample))
    assert rep.problems("warning") == [] and len(rep.problems("info")) == 1
    assert rep.by_code("ITEM_UNREFERENCED")[0].items == (10,)


def test_world_point_normalises():
    p = WorldPoint.of(-5631, 15116, 1500.0, 1.0, -1100.0)
    assert (p.tile_x, p.tile_z) == (-5630, 15115)
    assert p.x == pytest.approx(1500 - 2048) and p.z == pytest.approx(-1100 + 2048)
    assert WorldPoint.of(0, 0, float("nan"), 0, 0) is None


# -- paths ------------------------------------------------------------------------------


def test_sample_paths_clean(sample):
    rep = audit_paths(sample)
    assert rep.exists and [p.file for p in rep.paths] == [
        "MainEW.pat",
        "MainWE.pat",
        "Siding.pat",
        "SidingStore.pat",
    ]
    assert all(p.ok and p.issues == () for p in rep.paths), rep.to_json()
    assert rep.counts == {
        "files": 4,
        "ok": 4,
        "findings": 0,
        "error": 0,
        "off_track_pdps": 0,
        "junction_pdps_unmatched": 0,
    }
    ew = rep.paths[0]
    assert (ew.path_id, ew.pdps, ew.nodes, ew.main_chain) == ("MainEW", 4, 4, (0, 1, 2, 3))
    json.dumps(rep.to_json())


PAT = """SIMISA@@@@@@@@@@JINX0P0t______

Serial ( 1 )
TrackPDPs (
{pdps})
TrackPath (
	TrPathName ( {name} )
	Name ( "{name}" )
	TrPathStart ( a )
	TrPathEnd ( b )
	TrPathNodes ( 3
		TrPathNode ( 00000000 1 4294967295 0 )
		TrPathNode ( 00000000 2 4294967295 1 )
		TrPathNode ( 00000000 {last} 4294967295 2 )
	)
)
"""


def test_paths_with_defects(sample, tmp_path):
    good = (
        "\tTrackPDP ( -5631 15116 -212.95441 41.321771 -380.181 1 1 )\n"
        "\tTrackPDP ( -5631 15116 200 42 -310 2 0 )\n"
        "\tTrackPDP ( -5630 15116 -760.357921 43.467883 -5.12029 1 1 )\n"
    )
    # PDP 0 moved 20 m to the right of V_a; PDP 1 a junction 3 m from J1 along V_main
    # (on the track, so not off track).
    geom = section_geometry(sample)
    _, row, along = nearest_track(sample, -5631, 15116, -212.95441, -380.181, geom=geom)
    moved = point_at(geom, row[0], along[0], 20.0)
    off = (
        f"\tTrackPDP ( -5631 15116 {float(moved.x)} 41.321771 {float(moved.z)} 1 1 )\n"
        f"\tTrackPDP ( -5631 15116 {200 + 3 * math.sin(1.35)} 42 {-310 + 3 * math.cos(1.35)} 2 0 )\n"
        "\tTrackPDP ( -5630 15116 -760.357921 43.467883 -5.12029 1 1 )\n"
    )
    (tmp_path / "a_good.pat").write_text(PAT.format(pdps=good, name="good", last=4294967295))
    (tmp_path / "b_off.pat").write_text(PAT.format(pdps=off, name="off", last=4294967295))
    (tmp_path / "c_badlink.PAT").write_text(PAT.format(pdps=good, name="badlink", last=9))
    (tmp_path / "d_garbage.pat").write_bytes(b"\xff\xfe\x00\x00\x01\x02" * 10)
    (tmp_path / "notes.txt").write_text("not a path")
    rep = audit_paths(sample, tmp_path)
    by = {p.file: p for p in rep.paths}
    assert sorted(by) == ["a_good.pat", "b_off.pat", "c_badlink.PAT", "d_garbage.pat"]
    assert by["a_good.pat"].ok and by["a_good.pat"].issues == ()
    off_rep = by["b_off.pat"]
    assert off_rep.ok
    kinds = sorted((i.kind, i.pdp) for i in off_rep.issues)
    assert kinds == [("junction", 1), ("off_track", 0)]
    ot = next(i for i in off_rep.issues if i.kind == "off_track")
    assert ot.distance == pytest.approx(20.0, abs=1e-3) and ot.track_node == 2 and ot.path_nodes == (0,)
    jn = next(i for i in off_rep.issues if i.kind == "junction")
    assert jn.distance == pytest.approx(3.0, abs=1e-6) and jn.track_node == 3
    bad = by["c_badlink.PAT"]
    assert bad.status == "findings" and "out of range" in bad.error
    assert bad.main_chain == (0, 1, 2)
    assert by["d_garbage.pat"].status == "error" and by["d_garbage.pat"].error
    assert rep.counts == {
        "files": 4,
        "ok": 2,
        "findings": 1,
        "error": 1,
        "off_track_pdps": 1,
        "junction_pdps_unmatched": 1,
    }
    json.dumps(rep.to_json())


def test_missing_paths_folder(sample, tmp_path):
    rep = audit_paths(sample, tmp_path / "nope")
    assert not rep.exists and rep.paths == ()


def test_nearest_track_matches_known_points(sample):
    # The sample README: the level crossing (item 5) lies on V_main at 730 m.
    rd = sample.tdb.items[5].r_data
    d, row, off = nearest_track(
        sample, [rd.tile_x, rd.tile_x], [rd.tile_z, rd.tile_z], [rd.x, rd.x + 7.0], [rd.z, rd.z]
    )
    assert d[0] < 1e-3 and sample.tdb.sections.node[row[0]] == 4
    assert d[1] == pytest.approx(7 * abs(math.cos(1.35 - 0.05 + 0.08 - math.radians(5))), abs=0.05)
    n = sample.tdb.nodes[4]
    assert row[0] - n.first_section == 7 and off[0] == pytest.approx(730 - 653.633, abs=1e-2)


# -- DK24 -------------------------------------------------------------------------------


def test_dk24_closure(dk24_report):
    c = dk24_report.closure
    assert c["joins"] > 17000
    assert c["p99"] < 0.01
    assert c["max"] == pytest.approx(100.0, abs=0.5)
    assert dk24_report.node_ends["max"] < 0.05


def test_dk24_gaps(dk24_report):
    gaps = {f.nodes[0]: f for f in dk24_report.by_code("GAP_IN_NODE")}
    assert sorted(gaps) == [660, 1493]
    assert gaps[1493].value == pytest.approx(25.73, abs=0.5)
    assert gaps[660].value == pytest.approx(100.0, abs=0.5)
    for f in gaps.values():
        assert "reversed by π" in f.message
        assert f.location is not None


def test_dk24_counts(dk24_report):
    # The real route's figures: two reversed sections, sixteen switches with nothing
    # on the trunk (TrPin ( 0 0 )), 58.pat that does not resolve, and nothing else.
    assert dk24_report.counts == {"GAP_IN_NODE": 2, "PATH_UNRESOLVED": 1, "PIN_UNCONNECTED": 16}
    assert all(f.nodes and f.location for f in dk24_report.findings if f.code != "PATH_UNRESOLVED")
    assert dk24_report.stats["zero_length_sections"] == 106
    assert dk24_report.stats["items"]["distance_max"] < 0.01


def test_dk24_paths(dk24_audit):
    rep = dk24_audit.paths
    assert rep is not None
    n = len([p for p in (DK24 / "PATHS").iterdir() if p.suffix.lower() == ".pat"])
    c = rep.counts
    assert c["files"] == n and c["ok"] == n
    # 58.pat's two PDPs sit about 4.1 m beside vector node 282.
    off = [(p.file, i.pdp, round(i.distance, 1), i.track_node) for p in rep.paths for i in p.issues]
    assert off == [("58.pat", 0, 4.1, 282), ("58.pat", 1, 4.2, 282)]
