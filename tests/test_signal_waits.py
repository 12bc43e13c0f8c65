"""Waiting as Open Rails waits (issue 27): a train held by another train's route waits as
long as that train moves; only a wait that leads nowhere (a cycle, or trains that will not
move again) ends as stuck or deadlocked (docs/signals.md §4.7)."""

from __future__ import annotations

import shutil

import pytest
from helpers import SAMPLE_INSTALL

from tdbtools.physics.activity import ActivityReplay, plan_activity

CROSSING = SAMPLE_INSTALL / "ROUTES" / "SIGNALS" / "ACTIVITIES" / "Crossing.act"


def _crossing(tmp_path, nca: int):  # noqa: ANN001, ANN202
    """The Crossing activity; with ``nca`` other than the sample's 2, on a copy whose
    signals propagate clear requests that far (SignalNumClearAhead): a train's reservation
    then runs over the whole line, Midtby's junctions included (the issue's long
    reservation, on a short line)."""
    if nca == 2:
        return CROSSING
    inst = tmp_path / "inst"
    shutil.copytree(SAMPLE_INSTALL, inst)
    cfg = inst / "ROUTES" / "SIGNALS" / "sigcfg.dat"
    text = cfg.read_bytes().decode("utf-16")
    assert "SignalNumClearAhead ( 2 )" in text
    cfg.write_bytes(
        text.replace("SignalNumClearAhead ( 2 )", f"SignalNumClearAhead ( {nca} )").encode("utf-16")
    )
    return inst / "ROUTES" / "SIGNALS" / "ACTIVITIES" / "Crossing.act"


@pytest.mark.parametrize("nca", [2, 8])
def test_a_train_held_by_a_moving_train_is_late_not_stuck(tmp_path, nca):
    """On the signalled sample, "Passenger east" may not start before "Freight east" has
    cleared its start (2 min and more). With the stuck timeout cut to 10 s the wait is far
    longer than the timeout, but its blocker moves the whole time: the train waits, starts
    late and reaches its end, and nobody is declared stuck; the same when every signal
    clears 8 signals ahead, so that the first train holds the whole line."""
    rp = ActivityReplay(plan_activity(_crossing(tmp_path, nca)), stand_in=True, stuck_after=10.0)
    res = rp.run()
    s = res.replay.summary
    delayed = [e for e in res.replay.events if e.kind == "start_delayed"]
    started = {e.train: e.time for e in res.replay.events if e.kind == "service_started"}
    assert delayed and delayed[0].train == "Passenger east"
    assert started["Passenger east"] - delayed[0].time > 10.0  # waited beyond the timeout
    assert not s["stuck"] and not [e for e in res.replay.events if e.kind == "stuck"]
    assert all(t["reached_end"] for t in s["trains"].values()), s
    assert s["deadlocks"] == 0 and not res.failed


def test_a_wait_that_leads_to_no_moving_train_still_times_out():
    """The live-wait rule follows blockers only to trains that move, dwell or have yet to
    start: a train waiting for a train that stands (and waits for nobody) is not live."""
    rp = ActivityReplay(plan_activity(CROSSING), stand_in=True, stuck_after=10.0)
    import numpy as np

    v = np.zeros_like(rp.engine.v)
    for d in rp.drivers:
        d.state = "running"
        d.blocked_by = set()
    names = [t.spec.name for t in rp.trains]
    rp.drivers[0].blocked_by = {names[1]}
    assert rp.policy._live_waits(v) == set()  # the blocker stands: the wait is not live
    rp.drivers[1].state = "dwell"
    assert rp.policy._live_waits(v) == {names[0]}  # it dwells at a station: it will leave
    rp.drivers[1].state = "running"
    rp.drivers[1].blocked_by = {names[0]}  # a cycle of two standing trains
    assert rp.policy._live_waits(v) == set()
    v[rp.train_start[2]] = 3.0
    rp.drivers[1].blocked_by = {names[0], names[2]}  # ... one of which waits for a moving one
    assert rp.policy._live_waits(v) == {names[0], names[1]}
