"""On DK24 (issue 26): a path built with ``tdbtools path --reversals`` out to Tommerup and
back to the line end runs whole in an activity, with its booked stop at Tommerup."""

from __future__ import annotations

import pytest
from helpers import DK24_ROUTE, REPO, load_script, needs_dk24

from tdbtools.formats.route import load_route
from tdbtools.physics.activity import replay_activity
from tdbtools.physics.activity_build import ServiceSpec, write_activity_files
from tdbtools.track.paths import resolve_path


def _bench():
    return load_script(REPO / "benchmarks" / "bench_activity.py")


@pytest.mark.dk24
@pytest.mark.slow
@needs_dk24
def test_dk24_reversing_path_runs_whole(tmp_path):
    bench = _bench()
    folder = bench.dk24_install(DK24_ROUTE, tmp_path, world=True)
    route = load_route(folder, cache=False)
    h = bench.hms
    act = write_activity_files(
        route,
        "Tommerup turn",
        [
            ServiceSpec(
                "IC turn",
                "DSB IC3 VIA x2",
                h(10, 0),
                ("366", "366", "Tommerup, Spor 2"),
                stops=(("Tommerup, Spor 2", h(10, 10), h(10, 15)),),
                player=True,
            )
        ],
        reversals=True,
        duration=2 * 3600,
    )
    res_path = resolve_path(route, folder / "PATHS" / "Tommerup_turn_IC_turn.pat")
    assert res_path.ok and len(res_path.reversals) == 1
    res = replay_activity(act, route=route, stand_in=True)
    o = res.replay.summary["services"]["IC turn"]
    print(f"path {res_path.length:.1f} m, reversal at point {res_path.reversals}", o, res.timetable)
    assert o["reached_end"] and o["parts"] == 2 and o["stops"] == o["booked_stops"] == 1
    assert o["distance_m"] == pytest.approx(o["path_m"], abs=5.0)
    assert o["path_m"] > 0.9 * res_path.length - 500.0
    assert not res.failed
    (row,) = res.timetable
    assert row["actual_dep"] >= h(10, 15)
