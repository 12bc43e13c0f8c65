"""Pools on their storage tracks (docs/timetables.md §5.3): #maxunits, overflow, the last
unit in coming out first, underflow."""

from __future__ import annotations

import shutil

import pytest
from helpers import SAMPLE_INSTALL

from tdbtools.formats.route import load_route
from tdbtools.formats.timetable import make_timetable, write_timetable
from tdbtools.physics.timetable import replay_timetable
from tdbtools.physics.timetable_pools import PoolYard, pool_limits


def test_pool_yard_tracks_limits_and_order(tmp_path):
    (tmp_path / "a.pool-or").write_text(
        ";x\r\n#name;Depot\r\n#storage;S1\r\n#access;A1\r\n#maxunits;1\r\n#storage;S2\r\n#access;A2\r\n"
        "#maxunits;2\r\n#storage;S3\r\n#name;Other\r\n#storage;T\r\n#access;B\r\n",
        encoding="utf-8",
    )
    limits = pool_limits(tmp_path)
    # S3 has no access path: not used (TTPool)
    assert limits == {"depot": (1, 2), "other": (None,)}
    yard = PoolYard(limits)
    assert [yard.store("DEPOT", u) for u in ("a", "b", "c", "d")] == [0, 1, 1, None]
    assert yard.contents() == {"DEPOT": ["a", "b", "c"]}
    # the first track holding units gives its last one; then the next track, last in first
    assert [yard.draw("depot") for _ in range(4)] == ["a", "c", "b", None]
    # a pool no file defines: one track without a limit
    assert [PoolYard({}).store("X", str(i)) for i in range(5)] == [0] * 5


GRID = [
    ["", "P 1", "P 2", "P 3", "Q 1", "Q 2", "Q 3"],
    ["#path", "MainWE", "MainWE", "MainWE", "MainEW", "MainEW", "MainEW"],
    [
        "#consist",
        "sample_double",
        "sample_double",
        "sample_double",
        "sample_passenger",
        "sample_passenger",
        "sample_passenger",
    ],
    ["#start", "08:00", "08:06", "08:12", "08:30 $pool=Depot", "08:40 $pool=Depot", "08:50 $pool=depot"],
    ["#dispose", "$pool=Depot", "$pool=Depot", "$pool=Depot", "", "", ""],
]


@pytest.mark.slow
def test_pool_overflow_and_last_in_first_out(tmp_path):
    inst = tmp_path / "sample"
    shutil.copytree(SAMPLE_INSTALL, inst)
    folder = inst / "ROUTES" / "SAMPLE"
    tt_dir = folder / "ACTIVITIES" / "OpenRails"
    (tt_dir / "Sampleby day.timetable-or").unlink()
    (tt_dir / "Sampleby.timetablelist-or").unlink()
    # Sampleby.pool-or stays: Depot is one storage track with #maxunits 2
    path = tt_dir / "pools.timetable-or"
    write_timetable(make_timetable(GRID), path)
    res = replay_timetable(path, route=load_route(folder, cache=False), stand_in=True)
    tt = res.replay.summary["timetable"]
    out = tt["outcomes"]
    assert out["P 1"] == out["P 2"] == "to pool Depot"
    assert out["P 3"] == "pool 'Depot' overflow: no storage track has room; removed at its end"
    assert tt["drawn_from_pool"] == {"Q 1": "P 2", "Q 2": "P 1"}
    assert out["Q 3"].startswith("cancelled: pool 'depot' was empty")
    actions = [(e.train, e.action) for e in res.replay.events if e.kind == "pool"]
    assert actions == [
        ("P 1", "in"),
        ("P 2", "in"),
        ("P 3", "overflow"),
        ("Q 1", "out"),
        ("Q 2", "out"),
        ("Q 3", "underflow"),
    ]
    assert res.failed and any("overflow" in d for d in res.defects)
    assert tt["pools"] == {"Depot": []}
