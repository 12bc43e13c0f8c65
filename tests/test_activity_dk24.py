"""The DK24 activity of benchmarks/bench_activity.py (paths built with tdbtools path,
files written into a temporary install: DK24 itself stays untouched)."""

from __future__ import annotations

import pytest
from helpers import DK24_ROUTE, REPO, load_script, needs_dk24

from tdbtools.formats.activity import read_activity, read_traffic
from tdbtools.formats.route import load_route
from tdbtools.physics.activity import replay_activity
from tdbtools.physics.signalling import signals_for
from tdbtools.track.paths import resolve_path


def _bench():
    return load_script(REPO / "benchmarks" / "bench_activity.py")


@pytest.mark.dk24
@pytest.mark.slow
@needs_dk24
def test_dk24_activity(tmp_path):
    bench = _bench()
    folder = bench.dk24_install(DK24_ROUTE, tmp_path, world=True)
    # Loaded once for writing and replaying the activity (the throw-away copy in the
    # user's route cache would only be written, never read again).
    route = load_route(folder, cache=False)
    act = bench.make_dk24_activity(folder, route)
    a = read_activity(act)
    assert a.player.name == "Fyn_morning_IC_821" and len(a.services) == 4
    trf = read_traffic(folder / "TRAFFIC" / "Fyn_morning.trf")
    assert trf.entry("Fyn_morning_IR_4520", bench.hms(9, 52)) is not None
    assert signals_for(route, None) is not None  # a signalled route: the activity runs on its signals
    for pat in sorted((folder / "PATHS").glob("*.pat")):
        res = resolve_path(route, pat)
        assert res.ok and res.length > 40_000, pat.name
    res = replay_activity(act, route=route, stand_in=True)
    s = res.replay.summary
    assert "signalling" in s
    assert not res.failed and all(t["reached_end"] for t in s["trains"].values()), s
    assert s["deadlocks"] == 0 and s["collisions"] == 0 and not s["stuck"]
    rows = {r["train"]: r for r in res.timetable}
    assert set(rows) == {"IC 821", "IR 4520", "IC 823"}
    for r in rows.values():
        assert r["actual_dep"] >= r["sched_dep"] and r["actual_arr"] <= r["sched_arr"] + 120
    # the crossing: the IR leaves Tommerup only after both IC3s have come in off the single line
    assert rows["IR 4520"]["actual_dep"] > rows["IC 823"]["actual_arr"]
    assert rows["IR 4520"]["actual_dep"] > rows["IC 821"]["actual_arr"]
