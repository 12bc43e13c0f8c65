"""$wait on the line (docs/timetables.md §5.4): a train that waits for another runs on
from where the wait is set and stands at the wait position, the start of the first
stretch both paths share, until the other train has passed it."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from helpers import sample_timetable

from tdbtools.formats.route import load_route
from tdbtools.physics.timetable import replay_timetable
from tdbtools.physics.timetable_driver import wait_position


def test_wait_position():
    line = SimpleNamespace(
        seg_node=np.array([4, 9, 2, 9]),
        seg_s0=np.array([0.0, 100.0, 130.0, 500.0]),
        seg_s1=np.array([100.0, 130.0, 500.0, 530.0]),
    )
    assert wait_position(line, 0.0, 2) == 130.0
    assert wait_position(line, 120.0, 9) == 100.0  # the node it is on still counts
    assert wait_position(line, 140.0, 9) == 500.0
    assert wait_position(line, 600.0, 9) is None


#: W 1 runs east to west over the junction J1; S 1 (slow) comes from the west end and
#: turns into the siding at J1: they share node 2 and J1, the single line west of it.
GRID = [
    ["", "W 1", "S 1"],
    ["#path", "MainEW", "Siding"],
    ["#consist", "sample_passenger", "sample_freight"],
    ["#start", "08:00", "08:00"],
    ["#note", "$wait=S 1", ""],
    ["#speedkph", "", "$max=20"],
]


@pytest.mark.slow
@pytest.mark.parametrize("signals", [None, False], ids=["signals", "no_signals"])
def test_wait_on_the_line(tmp_path, signals):
    folder, path = sample_timetable(tmp_path, GRID, "wait.timetable-or")
    res = replay_timetable(path, route=load_route(folder, cache=False), stand_in=True, signals=signals)
    s = res.replay.summary
    assert not res.failed and s["collisions"] == 0 and not s["stuck"]
    (held,) = [e for e in res.replay.events if e.kind == "held"]
    assert (held.train, held.reason, held.other, held.station) == ("W 1", "wait", "S 1", None)
    assert held.seconds >= 10.0
    tr = res.replay.traces["W 1"]
    clock, dist, speed = (np.asarray(tr[k], dtype=float) for k in ("clock", "distance", "speed"))
    t0 = 8 * 3600 + int(held.clock[3:5]) * 60 + int(held.clock[6:8])
    during = (clock >= t0 + 2.0) & (clock <= t0 + held.seconds - 2.0)
    assert during.any()
    # it stood on the line, far from its start and short of the shared single line
    # (the path is 1,363 m long; it waits about 840 m along it), not at its start
    # (it is held from when it draws near the wait position: it brakes, then stands)
    stood = during & (np.abs(speed) < 0.1)
    assert np.count_nonzero(stood) >= 5  # traced every 2 s: 10 s and more
    assert np.all((dist[during] > 500.0) & (dist[during] < 1000.0))
    assert np.ptp(dist[stood]) < 0.5
    # and went on once S 1 was in the siding: both reach their ends
    assert s["trains"]["W 1"]["reached_end"] and s["trains"]["S 1"]["reached_end"]
    assert res.activity.on_track["S 1"][1] <= res.activity.on_track["W 1"][1]


def _run(tmp_path, grid):  # noqa: ANN001
    folder, path = sample_timetable(tmp_path, grid, "waitany.timetable-or")
    return replay_timetable(path, route=load_route(folder, cache=False), stand_in=True)


@pytest.mark.slow
@pytest.mark.parametrize(("qualifier", "waits"), [("", True), (" /both", True), (" /opposite", False)])
def test_waitany(tmp_path, qualifier, waits):
    # W 1 waits at its start while any train is on the track of the path Siding, in
    # that path's direction (S 1 runs it), either (/both) or only against it (/opposite)
    grid = [list(r) for r in GRID]
    grid[4][1] = f"$waitany=Siding{qualifier}"
    res = _run(tmp_path, grid)
    assert not res.failed
    held = [e for e in res.replay.events if e.kind == "held"]
    on = res.activity.on_track
    tr = res.replay.traces["W 1"]
    moved = float(np.asarray(tr["clock"])[np.flatnonzero(np.asarray(tr["distance"]) > 10.0)[0]])
    if waits:
        assert [(e.train, e.reason, e.other, e.station) for e in held] == [("W 1", "waitany", "Siding", None)]
        # it moves only once S 1 has left the track at the end of the siding
        assert moved >= on["S 1"][1] - 1.0
    else:
        assert held == [] and moved < on["S 1"][1] - 30.0
