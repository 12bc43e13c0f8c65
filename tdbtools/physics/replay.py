"""Replaying consists over an imported route.

Each train gets a :class:`~tdbtools.physics.trackline.TrackLine` (its path, then the
track beyond it), its cars a :class:`~tdbtools.physics.forces.CarModel`. A
:class:`Replay` is an orchestrator of stages (:mod:`tdbtools.physics.stages`), each in
its own module owning its state and its fast paths; every step:

1. driving (:mod:`~tdbtools.physics.stages.driving`): the drivers set throttle and brakes;
2. forces (:mod:`~tdbtools.physics.stages.forces`): per car (vectorised over all cars
   of all trains), traction from the effort–speed curve or MaxForce with the power
   limit, gravity from the elevations under the two bogies, Davis resistance, curve
   resistance (800/R equivalent grade), brakes;
3. the 1-D engine moves the cars, with collisions and coupler snatches between cars of
   one line resolved by momentum transfer at their exact times (docs/physics.md §1);
4. watching (:mod:`~tdbtools.physics.stages.watching`): the engine's contacts as events;
   bogies move as measures along the line: running off a track end or a switch thrown
   under a car is a derailment; every ``collision_check_interval`` seconds the trains'
   track occupancy and nearby cars on other lines are checked (docs/physics.md §5);
5. recording (:mod:`~tdbtools.physics.stages.recording`): trace rows, and at the end
   the :class:`ReplayResult`.

The set-up (:mod:`~tdbtools.physics.stages.setup`) places the trains and builds the
layout the stages share; what a kind of replay changes (an activity) is a
:class:`~tdbtools.physics.stages.policy.ReplayPolicy` passed in. Every event goes to
one :class:`~tdbtools.physics.events.EventLog` (docs/development.md).

Trains given the same path share one line, so they meet in the 1-D engine (a shunt
into a standing train conserves momentum exactly). Scheme: forces are evaluated at the
start of a step and held over it; motion within the step is exact constant-acceleration
kinematics between interaction events (first order in the step for speed-dependent
forces; see the convergence test).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import time as _time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from ..errors import Diagnostics
from ..formats.route import Route, load_route
from ..track.traveller import Switches
from .compiled import load_replay_kernels
from .driver_step import compile_driver
from .events import EventLog, StandIn, SwitchThrow
from .safety import throw_switch
from .scenario import Scenario, read_scenario
from .signalling import ReplaySignals, signals_for
from .stages.driving import DrivingStage
from .stages.forces import ForceStage
from .stages.policy import ReplayPolicy
from .stages.recording import CAR_COLUMNS, EVENT_UNITS, TRACE_COLUMNS, Recorder, ReplayResult, safe_name
from .stages.setup import ReplayError, build
from .stages.watching import MIN_EVENT_SPEED, WatchStage
from .trackline import TrackLine


class Replay:
    """A running replay; :func:`replay` runs one to the end (module docstring)."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        route: Route | None = None,
        cars_trace: bool = False,
        trace_every: float | None = None,
        signals: object = None,
        lines: dict[str, TrackLine] | None = None,
        policy: ReplayPolicy | None = None,
    ) -> None:
        """``lines``: a prepared line per train name (e.g. :meth:`TrackLine.synthetic`),
        used instead of the train's path or start point; the auto driver stops at its
        end when it ends at a track end. ``policy``: what this kind of replay changes
        (default: a scenario replay's)."""
        self.scenario = scenario
        self.route = route if route is not None else load_route(scenario.route)
        self.policy = policy if policy is not None else ReplayPolicy()
        self.trace_every = trace_every if trace_every is not None else scenario.step
        self.diags = Diagnostics(strict=False)
        self.switches = Switches(self.route)
        self.log = EventLog()
        self.signals: ReplaySignals | None = None
        # The route's signals (None: the route's own if it has any; False: none).
        self.signal_set = signals_for(self.route, signals)  # type: ignore[arg-type]
        lay = self.layout = build(
            scenario,
            self.route,
            given_lines=lines,
            policy=self.policy,
            signalled=self.signal_set is not None,
            adhesion=None if scenario.adhesion == "off" else scenario.adhesion,
            diags=self.diags,
        )
        # the profile the stock chose when the scenario gives none (Scenario.profile)
        self.scenario = scenario = dataclasses.replace(
            scenario, physics=lay.physics, rotating_mass=lay.rotating_mass
        )
        # (the layout's parts every caller reads)
        self.trains, self.model, self.bodies, self.engine = lay.trains, lay.model, lay.bodies, lay.engine
        self.lines, self.train_start, self.car_train = lay.lines, lay.train_start, lay.car_train
        self.forces = ForceStage(lay, scenario)
        self.driving = DrivingStage(lay, self.log)
        self.watch = WatchStage(lay, self.log)
        self.recorder = Recorder(lay, cars_trace)
        self.occupancy = self.watch.occupancy
        self.time = 0.0
        self._next_check = 0.0
        self._next_trace = 0.0
        self._xv: tuple | None = None  # (x, v, engine time) as the last step left them
        self._pending_switches = list(scenario.events)
        for t in self.trains:
            for w in t.warnings:
                self.log.add(StandIn(time=0.0, train=t.spec.name, message=w))
        if self.signal_set is not None:
            self.signals = ReplaySignals(self, self.signal_set)
        self.policy.start(self)
        # (the hooks a policy left as they are, no-ops, not called every step)
        hooks = type(self.policy)
        self._before_step = None if hooks.before_step is ReplayPolicy.before_step else self.policy.before_step
        self._after_step = None if hooks.after_step is ReplayPolicy.after_step else self.policy.after_step
        if lay.compiled:  # the automatic drivers' steps compiled (the same numbers)
            for t in self.trains:
                compile_driver(t.driver)
            # every kernel the loop calls loaded here, not in the first steps
            load_replay_kernels(lay.physics == "openrails")

    @property
    def events(self) -> list:
        """The replay's events so far, in order (:class:`EventLog`)."""
        return self.log.events

    # -- the loop ---------------------------------------------------------------------------
    def step(self) -> None:
        """One step of every stage (module docstring)."""
        if self._before_step is not None:
            self._before_step(self)
        sc = self.scenario
        dt = sc.step
        eng = self.engine
        # Positions and speeds as the last step left them (nothing else moves the cars
        # between steps; the engine's x is rebuilt from its gaps on every read).
        if self._xv is None or self._xv[2] != eng.time:
            self._xv = (eng.x, eng.v, eng.time)
            self.layout.bogies_at(self._xv[0])
        x, v = self._xv[0], self._xv[1]
        sig = self.signals
        ctl, speeds, batch = self.driving.controls(self.time, x, v, dt, sig.version if sig is not None else 0)
        trac, brk, drive, opposed = self.forces.evaluate(ctl, speeds, x, v, dt, batch)
        evs = eng.step(dt, drive, opposed, rows=True)  # (the watch makes its own records)
        if evs:
            self.watch.engine_events(evs)
        self.time += dt
        x1, v1 = eng.x, eng.v  # (new arrays: the engine never changes one handed out)
        self._xv = (x1, v1, eng.time)
        # Energy and top speed per car, bogies following their cars; one past a line
        # end that is a track end derails its car (the exact event comes from BogieSet).
        if self.forces.account(x, x1, v1, trac, brk):
            self.watch.track_ends(self.time)
        if sig is not None and self.time + 1e-9 >= sig.next_update:  # (its own test)
            starts = self.train_start
            sig.update(self.time, x1[starts].tolist(), v1[starts].tolist())
        if self.driving.running:
            self.driving.after_step(self.time, dt, v1, batch)
        while self._pending_switches and self._pending_switches[0].at <= self.time + 1e-9:
            sw = self._pending_switches.pop(0)
            self.throw_switch(sw.junction, sw.route)
        if self.time + 1e-9 >= self._next_check:
            self._next_check += sc.collision_check_interval
            self.check_collisions()
        if self.time + 1e-9 >= self._next_trace:
            self._next_trace += self.trace_every
            self.recorder.trace(self.time, trac, brk, self.forces.scale, x1, v1)
        if self._after_step is not None:
            self._after_step(self)

    def throw_switch(self, junction: int, route: int) -> None:
        """Throw a switch now: cars whose bogies straddle it on a line that takes the
        other route derail (their bogies would take different routes)."""
        self.switches.set(junction, route)
        if self.signals is not None:
            self.signals.ilk.set_switch(junction, route)  # the interlocking walks the switches as set
        self.log.add(SwitchThrow(time=self.time, junction=junction, route=route))
        on = self.on_track()  # a train not in the world (yet, or any more) is not under it
        bogies = [t.bogies for k, t in enumerate(self.trains) if on is None or on[k]]
        for ev in throw_switch(bogies, junction, route, self.time):
            self.watch.safety(ev)

    def on_track(self) -> np.ndarray | None:
        """Which trains are on the track now (None: all; the policy says)."""
        return self.policy.on_track(self)

    def check_collisions(self) -> None:
        """Track occupancy and side collisions now (docs/physics.md §5.4)."""
        self.watch.check_collisions(self.time, self.on_track())

    def finished(self) -> bool:
        """Whether every train has finished."""
        return self.driving.all_done()

    def run(self, progress: Callable[[float], None] | None = None) -> ReplayResult:
        wall = _time.perf_counter()
        with _older_objects_frozen():
            n = len(self.engine.x)
            self.recorder.trace(self.time, np.zeros(n), np.zeros(n), self.forces.scale)
            self._next_trace = self.trace_every
            self.check_collisions()
            self._next_check = self.scenario.collision_check_interval
            last_report = 0.0
            while self.time < self.scenario.duration - 1e-9 and not self.finished():
                self.step()
                if progress is not None and self.time - last_report >= 1.0:
                    progress(self.time)
                    last_report = self.time
            return self.result(_time.perf_counter() - wall)

    def result(self, wall: float) -> ReplayResult:
        """What the replay produced so far (``wall``: the seconds it took)."""
        return self.recorder.result(
            self.scenario,
            self.route.name,
            self.time,
            wall,
            self.events,
            self.forces.sums,
            self.signals.summary() if self.signals is not None else None,
        )


@contextlib.contextmanager
def _older_objects_frozen() -> Iterator[None]:
    """Leave the objects made before a replay (the route's, the replay's own set-up) out
    of the cyclic garbage collector's passes while it runs: the events it makes by the
    thousand set off full passes, each over every object of the process (0.16 s of a
    1,000-train run's 2.9 s), for no garbage of theirs. Nothing when the collector is off
    or the caller froze objects itself (docs/running-time.md §2.1)."""
    mine = gc.isenabled() and gc.get_freeze_count() == 0
    if mine:
        gc.freeze()
    try:
        yield
    finally:
        if mine:
            gc.unfreeze()


def replay(
    scenario: Scenario | str | Path,
    *,
    route: Route | None = None,
    cars_trace: bool = False,
    progress: Callable[[float], None] | None = None,
    signals: object = None,
) -> ReplayResult:
    """Run a scenario (a :class:`Scenario` or a TOML file) to its end; ``signals``: None
    uses the route's signals when it has them, False runs without (docs/signals.md §5)."""
    sc = scenario if isinstance(scenario, Scenario) else read_scenario(scenario)
    return Replay(sc, route=route, cars_trace=cars_trace, signals=signals).run(progress)


__all__ = [
    "CAR_COLUMNS",
    "EVENT_UNITS",
    "MIN_EVENT_SPEED",
    "TRACE_COLUMNS",
    "Replay",
    "ReplayError",
    "ReplayResult",
    "replay",
    "safe_name",
]
