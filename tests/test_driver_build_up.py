"""The automatic driver against force-mode brakes that build up slowly (freight, 20 s).

Regression: once braking began, the driver dropped the whole build-up lag from its
curve check, found itself under the curve the next step and released; braking and
traction alternated every step, the brakes never built up and the train overran its
stop (an activity's freight ran off the end of its path at a planned 0.6 m/s²).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import SAMPLE_INSTALL

from tdbtools.physics.driver import AutoDriver, Controls, DriveState
from tdbtools.physics.replay import Replay
from tdbtools.physics.scenario import Scenario, TrainSpec
from tdbtools.physics.trackline import TrackLine

KMH = 1 / 3.6
ROUTE = SAMPLE_INSTALL / "ROUTES" / "SAMPLE"


class Recorder:
    """Wraps the automatic driver and keeps what it asked for each step."""

    def __init__(self, inner: AutoDriver) -> None:
        self.inner = inner
        self.braking: list[bool] = []

    def __call__(self, st: DriveState) -> Controls:
        c = self.inner(st)
        self.braking.append(c.deceleration > 0.0 and c.speed_target is None)
        return c


def freight_stop(decel: float, dt: float, grade: float = 0.0) -> tuple[Replay, Recorder, dict]:
    line = TrackLine.synthetic(3000.0, grade=grade, route_limit=80 * KMH)
    spec = TrainSpec(
        name="t",
        consist=ROUTE.parent.parent / "TRAINS" / "CONSISTS" / "sample_freight.con",
        path=Path("x"),
        brake_mode="force",
        deceleration=decel,
        driver="auto",
    )
    rep = Replay(Scenario(ROUTE, (spec,), step=dt, duration=1000), lines={"t": line}, trace_every=1.0)
    rec = Recorder(rep.trains[0].driver)
    rep.trains[0].replace_driver(rec)
    s = rep.run().summary["trains"]["t"]
    return rep, rec, s


@pytest.mark.parametrize("decel", [0.4, 0.6])
@pytest.mark.parametrize("dt", [0.1, 0.5])
@pytest.mark.parametrize("grade", [0.0, -0.005])
def test_freight_stops_at_the_end_with_slow_build_up(decel, dt, grade):
    rep, rec, s = freight_stop(decel, dt, grade)
    assert rec.inner.brake_delay == pytest.approx(10.0)  # freight: 20 s build-up
    assert s["finished"] and not s["derailed"]
    front = float(rep.engine.x[rep.train_start[0]])
    stop = float(rep.trains[0].line.path_length) - AutoDriver.STOP_SHORT
    assert abs(front - stop) < AutoDriver.ARRIVED_WITHIN
    # From the braking point on the driver keeps braking: before the fix it asked for
    # traction every other step (about half of them).
    approach = rec.braking[rec.braking.index(True) :]
    assert len(approach) > 10 / dt and approach.count(False) < 0.05 * len(approach)
