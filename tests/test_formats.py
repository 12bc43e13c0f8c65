"""Typed readers: .tdb/.rdb, tsection.dat, .trk — on the sample route and DK24."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from helpers import DK24_ROUTE, SAMPLE_INSTALL, SAMPLE_ROUTE, needs_dk24

from tdbtools.errors import Diagnostics, FormatError
from tdbtools.formats import (
    EndNode,
    JunctionNode,
    PlatformItem,
    SidingItem,
    SignalItem,
    SpeedPostItem,
    VectorNode,
    read_tdb,
    read_trk,
    read_tsection,
    read_tsection_file,
)
from tdbtools.formats.tdb import tdb_from_document
from tdbtools.stf import parse_text


def test_sample_tdb_nodes_pins_and_sections():
    db = read_tdb(SAMPLE_ROUTE / "SAMPLE.tdb")
    assert db.counts() == {"vector": 3, "junction": 1, "end": 3, "total": 7}
    assert db.nodes[0] is None
    j = db.nodes[3]
    assert isinstance(j, JunctionNode) and j.shape_index == 71
    assert [p.link for p in j.pins] == [2, 4, 6] and (j.in_pins, j.out_pins) == (1, 2)
    assert j.uid is not None and len(j.values) == 3
    assert isinstance(db.nodes[1], EndNode)
    v = db.nodes[2]
    assert isinstance(v, VectorNode) and v.item_refs == (0, 1, 2, 3)
    cols = db.node_sections(2)
    assert len(cols["x"]) == v.section_count == 3
    assert cols["section_index"].dtype == np.int64 and cols["x"].dtype == np.float64
    assert set(db.sections.flag3) == {"00"}
    assert (db.sections.node[v.section_slice] == 2).all()
    with pytest.raises(ValueError):
        db.sections.x[0] = 1.0  # the model is immutable


def test_sample_items_are_typed():
    db = read_tdb(SAMPLE_ROUTE / "SAMPLE.tdb")
    kinds = db.item_counts()
    assert kinds == {"levelcr": 1, "platform": 2, "siding": 2, "signal": 3, "speedpost": 3}
    plat = [i for i in db.items if isinstance(i, PlatformItem)]
    assert plat[0].linked_item == plat[1].index and plat[1].flags == "ffff0000"
    assert plat[0].station and plat[0].min_waiting_time > 0
    sig = [i for i in db.items if isinstance(i, SignalItem)][0]
    assert sig.s_data.flags == "00000002" and sig.signal_dirs
    posts = [i for i in db.items if isinstance(i, SpeedPostItem)]
    limit = [p for p in posts if p.is_limit][0]
    assert limit.value == 80 and math.isclose(limit.speed_ms, 80 / 3.6)
    assert any(p.is_warning for p in posts) and any(p.is_milepost for p in posts)
    sid = [i for i in db.items if isinstance(i, SidingItem)]
    assert sid[0].siding_name == sid[1].siding_name
    for it in db.items:
        assert it.item_id == it.index


def test_hex_flags_that_look_decimal_stay_text():
    text = (
        "SIMISA@@@@@@@@@@JINX0T0t______\nTrackDB ( TrItemTable ( 1 SignalItem ( TrItemId ( 0 ) "
        "TrItemSData ( 1.5 00000010 ) TrSignalType ( 00000010 0 1.5 x ) ) ) )\n"
    )
    db = tdb_from_document(parse_text(text), Diagnostics())
    assert db.items[0].s_data.flags == "00000010" and db.items[0].flags == "00000010"
    assert int(db.items[0].flags, 16) == 16


def test_rdb_reads_through_the_same_model():
    db = read_tdb(SAMPLE_ROUTE / "SAMPLE.rdb")
    assert db.counts()["vector"] == 1 and db.item_counts() == {"carspawner": 2, "levelcr": 1}


def test_tsection_global_and_local_merge():
    ts = read_tsection([SAMPLE_INSTALL / "GLOBAL" / "tsection.dat"], SAMPLE_ROUTE / "tsection.dat")
    dyn = [i for i in ts.sections.ids.tolist() if i >= 40000]
    assert dyn and all(i in ts.sections.ids for i in dyn)
    curve = next(ts.section(i) for i in dyn if ts.section(i).is_curved)
    # Route-local curves give the angle in radians; the model keeps degrees.
    assert abs(curve.angle) < 10 and curve.radius > 0
    assert math.isclose(curve.arc_length, curve.radius * math.radians(abs(curve.angle)))
    assert ts.track_paths
    shape = ts.shape(71)
    assert shape.num_paths == 2 and len(shape.paths) == 2 and shape.main_route in (0, 1)


def test_section_lengths_straight_and_curve():
    ts = read_tsection_file(SAMPLE_INSTALL / "GLOBAL" / "tsection.dat")
    for sid in ts.sections.ids.tolist():
        s = ts.section(sid)
        expected = s.radius * math.radians(abs(s.angle)) if s.is_curved else s.length
        assert math.isclose(s.arc_length, expected)


def test_route_local_needs_its_exact_signature(tmp_path):
    p = tmp_path / "tsection.dat"
    p.write_text(
        "SIMISA@@@@@@@@@@JINX0T0t_____X\nTrackSections ( 1 TrackSection ( SectionCurve ( 0 ) 40000 10 0 ) )\n"
    )
    with pytest.raises(FormatError, match="must start with"):
        read_tsection([], p)
    d = Diagnostics(strict=False)
    ts = read_tsection([], p, diagnostics=d)
    assert len(ts.sections) == 0 and len(d.findings) == 1  # ignored, as Open Rails does


def test_trk():
    trk = read_trk(SAMPLE_ROUTE / "SAMPLE.trk")
    assert trk.route_id == "SAMPLE" and trk.filename == "SAMPLE" and trk.route_start is not None
    assert "Østende" in trk.description and trk.milepost_units_km
    assert math.isclose(trk.track_gauge, 1.435)


def test_records_pickle_to_equal_objects():
    db = read_tdb(SAMPLE_ROUTE / "SAMPLE.tdb")
    again = pickle.loads(pickle.dumps(db))
    assert again == db and again.nodes[3] == db.nodes[3]


@needs_dk24
def test_dk24_tdb_counts_match_the_real_route():
    db = read_tdb(DK24_ROUTE / "DK24.tdb")
    assert db.counts() == {"vector": 1381, "junction": 819, "end": 321, "total": 2521}
    assert len(db.sections) == 18562
    counts = db.item_counts()
    assert (counts["crossover"], counts["speedpost"], counts["signal"], counts["platform"]) == (
        124,
        102,
        95,
        6,
    )
    # Every node's first value is its position; every vector node has its sections.
    assert all(n.index == i for i, n in enumerate(db.nodes) if n is not None)
    assert sum(n.section_count for n in db.nodes[1:] if isinstance(n, VectorNode)) == 18562
    assert db.nodes[8].shape_index == 71 and db.nodes[8].uid.world_id == 79


@needs_dk24
def test_dk24_tsection_override_includes_global():
    r = DK24_ROUTE
    ts = read_tsection([r / "OPENRAILS" / "tsection.dat"], r / "tsection.dat")
    assert any(f.endswith("GLOBAL/tsection.dat") for f in ts.files)
    assert ts.section(40000).radius == 29997.5 and ts.section(40000).angle == -0.250029
    s = ts.section(50006)  # route-local: angle -0.03525 rad
    assert math.isclose(s.angle, math.degrees(-0.03525)) and s.radius == 14078.6
    assert ts.shape(1).filename == "A1t50mStrt.s"
    # The global file has comments like `_INFO( 3DTrains ScaleRail 30" Narrow Gauge ... )`:
    # as in Open Rails, `30"` is the word 30 (the quote is eaten). Read as the start of a
    # quoted string it would swallow ~200 TrackShapes up to the next `30"`.
    assert len(ts.sections) == 14649 and len(ts.shapes) == 14989


@needs_dk24
def test_dk24_all_files_read_in_lenient_mode_without_findings():
    d = Diagnostics(strict=False)
    read_tdb(DK24_ROUTE / "DK24.tdb", diagnostics=d)
    read_tdb(DK24_ROUTE / "DK24.rdb", diagnostics=d)
    assert [f for f in d.findings if "ignored" not in f.message] == []
