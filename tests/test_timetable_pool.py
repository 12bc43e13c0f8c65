"""Open Rails pool files (``.pool-or``; docs/timetables.md §5.3): reading them as Open
Rails does, the lossless writer, and the audit of pools (storage and access paths,
pools a timetable names that no file defines)."""

from __future__ import annotations

import codecs
import shutil

import pytest
from helpers import SAMPLE_INSTALL, SAMPLE_ROUTE

from tdbtools.formats.route import load_route
from tdbtools.formats.timetable_pool import parse_pool_file, pool_file_bytes, read_pool_file
from tdbtools.track.audit import audit_route

POOLS = [
    ["", "pools of a yard"],
    ["#comment", "two pools"],
    ["#name", "Depot"],
    ["#storage", "Track 1"],
    ["#access", "In 1", "In 2", "", "not read after an empty cell"],
    ["#maxunits", "3"],
    ["#storage", "Track 2"],
    ["#access", "In 3"],
    ["#settings", "whatever"],
    ["#name", "Yard B"],
    ["#storage", "Track 9"],  # no access paths: not used
]


@pytest.mark.parametrize(("sep", "enc"), [(";", "utf-8"), ("\t", "utf-16-le"), (",", "utf-8-sig")])
def test_pool_file_reads_and_round_trips(sep, enc):
    text = "".join(sep.join(r) + "\r\n" for r in POOLS)
    data = (codecs.BOM_UTF16_LE if enc == "utf-16-le" else b"") + text.encode(enc)
    pf = parse_pool_file(data, "x.pool-or")
    assert pool_file_bytes(pf) == data
    depot = pf.pool("DEPOT")  # Open Rails lower-cases pool names
    assert depot is not None and [(s.path, s.access, s.max_units) for s in depot.storages] == [
        ("Track 1", ("In 1", "In 2"), 3),
        ("Track 2", ("In 3",), None),
    ]
    yard = pf.pool("yard b")
    assert yard is not None and yard.storages == ()
    assert [f.code for f in pf.findings] == ["TT_POOL_ROW"] and "no #access" in pf.findings[0].message


def test_pool_rows_open_rails_does_not_use():
    rows = [
        [";"],
        ["#storage", "T"],
        ["#name", "P"],
        ["#maxunits", "many"],
        ["#storage", "T"],
        ["#access", "A"],
        ["#bogus", "x"],
        ["#name", "p"],
    ]
    pf = parse_pool_file("".join(";".join(r) + "\n" for r in rows).encode(), "y")
    msgs = [f.message for f in pf.findings]
    assert any("before any #name" in m for m in msgs) and any("defined twice" in m for m in msgs)
    assert any("unknown pool row" in m for m in msgs)
    assert [p.name for p in pf.pools] == ["P"]


def test_sample_route_defines_its_pool():
    pf = read_pool_file(SAMPLE_ROUTE / "ACTIVITIES" / "OpenRails" / "Sampleby.pool-or")
    depot = pf.pool("Depot")
    assert depot is not None and depot.storages[0].path == "SidingStore" and pf.findings == ()


def test_audit_checks_pools(tmp_path):
    inst = tmp_path / "sample"
    shutil.copytree(SAMPLE_INSTALL, inst)
    folder = inst / "ROUTES" / "SAMPLE"
    ttdir = folder / "ACTIVITIES" / "OpenRails"

    def codes() -> list[str]:
        return sorted(
            f.code for f in audit_route(load_route(folder, cache=False)).findings if f.code.startswith("TT_")
        )

    assert codes() == []
    # the pool's access path goes missing; the timetable's pool is named by no file
    (ttdir / "Sampleby.pool-or").write_bytes(
        b";\r\n#name;Depot\r\n#storage;SidingStore\r\n#access;Nowhere\r\n"
    )
    (ttdir / "More.pool_or").write_bytes(b";\r\n#name;Other\r\n#storage;Gone\r\n#access;Siding\r\n")
    assert codes() == ["TT_PATH_MISSING", "TT_PATH_MISSING"]
    (ttdir / "Sampleby.pool-or").unlink()
    assert codes() == ["TT_PATH_MISSING", "TT_POOL_UNKNOWN", "TT_POOL_UNKNOWN"]
