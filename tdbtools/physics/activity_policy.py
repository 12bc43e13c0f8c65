"""What an activity changes about a replay (docs/activities.md §4): the replay policy of
an activity's trains (:class:`ActivityPolicy`), and the view of a running replay it shares
with :class:`~tdbtools.physics.activity.ActivityReplay` (:class:`ReplayView`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..formats.route import Route
from .activity_plan import ActivityPlan
from .activity_stops import Stop, place_stops, route_platforms
from .dispatch import (
    DEADLOCK_AFTER_S,
    DISPATCH_EVERY_S,
    JUNCTION_MAX_M,
    RESERVE_EXTRA_M,
    Dispatcher,
    clock,
    fouling_length,
)
from .driver import AutoDriver
from .driver import Stop as DriverStop
from .events import Arrived, EventLog, Reversed, SetupWarning, Stuck
from .outcome import unscripted_signals
from .replay import Replay
from .reversal import REVERSAL_S
from .scenario import TrainSpec
from .servicedriver import ServiceDriver
from .signalling import SignalDriver
from .stages.policy import ReplayPolicy
from .wholepath import ServicePart, assign_stops, part_name

#: Boarding: 10 s per waiting passenger per passenger car, at least 20 s (docs §5).


class ReplayView:
    """What the dispatcher, the outcomes and callers read of a running replay, forwarded
    from ``self.replay``: one definition for the policy and the activity replay."""

    replay: Any

    @property
    def trains(self) -> list:
        return self.replay.trains

    @property
    def engine(self) -> Any:
        return self.replay.engine

    @property
    def signals(self) -> Any:
        return self.replay.signals

    @property
    def train_start(self) -> np.ndarray:
        return self.replay.layout.train_start

    @property
    def time(self) -> float:
        return self.replay.time


class ActivityPolicy(ReplayView, ReplayPolicy):
    """What an activity changes about a replay (docs/activities.md §4): trains enter the
    track at their start time and AI trains leave it at the end of their path; each
    service has its own engine line; a :class:`ServiceDriver` drives each train's
    automatic driver to its station stops; the :class:`Dispatcher` runs before every
    step. With signals the interlocking is the movement authority (§4.3)."""

    #: Trains enter the interlocking at their start time, not at time 0 (signalling.py).
    signals_on_track_at_start = False
    #: With signals: Auto Node reserves this far ahead and on to the next junction, as the
    #: dispatcher does (§4.1), not the whole way to a signal tens of kilometres on.
    signals_ahead_m = RESERVE_EXTRA_M + 2000.0

    def __init__(
        self,
        plan: ActivityPlan,
        route: Route,
        t0: float,
        stuck_after: float,
        parts: list[ServicePart] | None = None,
    ) -> None:
        self.plan = plan
        self.route = route
        # the replay trains of each service: one per part of a path with reversals (§4.4);
        # a train not given here is a service of its own (its spec's name)
        self.parts = list(parts) if parts is not None else []
        self.part_of = {sp.spec.name: sp for sp in self.parts}
        self.t0 = t0  # clock time of replay time 0
        self.stuck_after = stuck_after
        self.plats = route_platforms(route)
        self.by_name = {pt.name: pt for pt in plan.trains}
        self.drivers: list[ServiceDriver] = []
        self.index: dict[str, int] = {}
        self.stuck: set[str] = set()
        self.on_off: dict[str, tuple[float, float]] = {}
        # (train, message): placing the stops, waiting-point orders not carried out
        self._warnings: list[tuple[str, str]] = [(sp.service, n) for sp in self.parts for n in sp.notes]
        self.rp: Replay | None = None
        self.dispatcher = Dispatcher(self)
        self._next_dispatch = 0.0
        self._still_since: list[float] = []

    # (what the dispatcher reads of the replay)
    @property
    def replay(self) -> Replay:
        assert self.rp is not None, "the policy's replay is not set up yet"
        return self.rp

    @property
    def bodies(self) -> Any:
        return self.replay.bodies

    @property
    def train_end(self) -> np.ndarray:
        return self.replay.layout.train_end

    @property
    def log(self) -> EventLog:
        return self.replay.log

    # -- the policy -------------------------------------------------------------------------
    def signal_clearance(self) -> Callable[[int], float]:
        """Metres to a junction's clearance point (the interlocking stops trains outside it)."""
        return functools.partial(fouling_length, self.route)

    def engine_line_key(self, spec: TrainSpec, key: object) -> object:
        # Services on one path run at different times: each has its own engine line
        # (a train not yet started, or taken off, must not be met there).
        return (key, spec.name)

    def driver(self, spec: TrainSpec, auto: Any, default: Any, train: Any) -> ServiceDriver:
        """The train's service driver around its automatic driver (with signals, the
        automatic driver's constraints obey them through ``default``'s signal wrapper)."""
        assert isinstance(auto, AutoDriver)
        sp = self.part_of.get(spec.name)
        if sp is None:
            sp = self.part_of[spec.name] = ServicePart(spec.name, spec, None)
            self.parts.append(sp)
        pt = self.by_name[sp.service]
        vmax = train.consist.max_velocity if train.consist.max_velocity else None
        eng = train.model.max_velocity[train.model.is_engine]
        if vmax is None and len(eng) and np.isfinite(eng).any():
            vmax = float(np.nanmin(eng))
        end = (
            sp.plan.end_s
            if sp.plan is not None
            else (train.end_s if train.end_s is not None else train.line.path_length)
        )
        d = ServiceDriver(
            spec.name,
            auto,
            self.t0,
            float(pt.start) if sp.index == 0 else math.inf,  # later parts: at the reversal
            [],  # the stops: when every part is placed (start)
            float(end),
            int(train.model.is_passenger.sum()),
            not pt.player,
            vmax,
            pt.service.efficiency,
            isinstance(default, SignalDriver),
        )
        d.turns = not sp.last
        auto.clock0 = self.t0  # (waiting points until a clock time)
        for s_at, wait, until in sp.waits:
            if s_at > train.front0 + AutoDriver.ARRIVED_WITHIN:
                auto.stops.append(DriverStop(s_at, wait, "waiting point", until=until))
        auto.stops.sort(key=lambda p: p.s)
        return d

    def start(self, replay: Replay) -> None:
        self.rp = replay
        if replay.signals is not None:
            # Trains wait at loops for trains coming the other way (docs/signals.md §4.9).
            replay.signals.ilk.avoid_deadlocks = True
        self.index = {t.spec.name: k for k, t in enumerate(replay.trains)}
        self.drivers = [d for t in replay.trains if isinstance(d := t.driver, ServiceDriver)]
        self._still_since = [0.0] * len(replay.trains)
        for name, stops in self._whole_path_stops(replay).items():
            d = self.drivers[self.index[name]]
            d.stops = stops
            d._set_speed_cap()
        for w in self.plan.warnings:
            replay.log.add(SetupWarning(time=0.0, message=w))
        if replay.signals is not None:
            for w in unscripted_signals(replay.signals.ilk.aspects.heads):
                replay.log.add(SetupWarning(time=0.0, message=w))
        for name, w in self._warnings:
            replay.log.add(SetupWarning(time=0.0, train=name, message=w))

    def _whole_path_stops(self, replay: Replay) -> dict[str, list[Stop]]:
        """Every replay train's station stops: each service's booked stops matched over
        its parts (docs/activities.md §5), moved out of junction clearances except at the
        train's origin."""
        out: dict[str, list[Stop]] = {}
        for pt in self.plan.trains:
            sps = [sp for sp in self.parts if sp.service == pt.name]
            if not sps:
                continue
            ts = [replay.trains[self.index[sp.spec.name]] for sp in sps]
            spans = [
                (t.line, t.front0, sp.plan.end_s if sp.plan is not None else float(t.line.path_length))
                for sp, t in zip(sps, ts)
            ]
            per, warns, origin = assign_stops(spans, ts[0].length, pt.stops, self.plats, place_stops, Stop)
            self._warnings.extend((pt.name, w) for w in warns)
            for k, (sp, t) in enumerate(zip(sps, ts)):
                for n, st in enumerate(per[k]):
                    if not (origin[k] and n == 0):
                        st.stop_s = self.clear_of_junctions(t.line, st.stop_s)
                out[sp.spec.name] = per[k]
        return out

    def clear_of_junctions(self, line, s: float) -> float:  # noqa: ANN001
        """A station stop moved back out of the clearance zone of a junction just ahead
        (docs/activities.md §5): a train standing there would foul the other branch."""
        js, jn = line.junction_s, line.junction_node
        j = int(np.searchsorted(js, s - JUNCTION_MAX_M, side="left"))
        while j < len(js) and float(js[j]) <= s + JUNCTION_MAX_M:
            a = float(js[j])
            if a >= s - 1e-6:
                f = fouling_length(self.route, int(jn[j]))
                if a - f < s:
                    s = a - f - 1.0
            j += 1
        return s

    def on_track(self, replay: Replay) -> np.ndarray:
        return np.array([d.on_track for d in self.drivers], dtype=bool)

    def before_step(self, replay: Replay) -> None:
        if replay.time + 1e-9 >= self._next_dispatch:
            self._next_dispatch += DISPATCH_EVERY_S
            self.dispatcher.run(replay.time)
            self._watch()

    def after_step(self, replay: Replay) -> None:
        for k, d in enumerate(self.drivers):
            t = replay.trains[k]
            if d.finished and t.done_at is None:
                t.finish(replay.time)
                if d.leaves and replay.signals is not None:
                    replay.signals.ilk.leave(k)  # off the track: its sections are free again
                if d.leaves:
                    self.on_off[t.spec.name] = (
                        self.on_off.get(t.spec.name, (self.t0, 0.0))[0],
                        self.t0 + replay.time,
                    )
                sp = self.part_of[t.spec.name]
                if not sp.last:
                    self._reverse(replay, k, sp)
                    continue
                replay.log.add(
                    Arrived(time=replay.time, clock=clock(self.t0 + replay.time), train=t.spec.name)
                )

    def _reverse(self, replay: Replay, k: int, sp: ServicePart) -> None:
        """Part ``k`` stands at its reversal: the next part takes over there after the
        change of ends (docs/activities.md §4.4)."""
        nxt = self.index[part_name(sp.service, sp.index + 1)]
        # It takes over the track at once (nobody slips in while the ends are changed)
        # and stands REVERSAL_S before it moves.
        self.drivers[nxt].start = self.t0 + replay.time
        self.drivers[nxt].hold_until = self.t0 + replay.time + REVERSAL_S
        t, n = replay.trains[k], replay.trains[nxt]
        replay.log.add(
            Reversed(
                time=replay.time,
                clock=clock(self.t0 + replay.time),
                train=sp.service,
                part=sp.index + 1,
                at=round(float(replay.engine.x[replay.layout.train_start[k]]), 3),
                lead=str(n.consist.cars[0].file) if n.consist.cars else "",
                message=f"stopped {t.length:.0f} m train to reverse; part {sp.index + 2} "
                "leads with the former rear car",
            )
        )

    def _watch(self) -> None:
        """Trains that stand waiting for track far too long are stuck; a train whose wait
        leads (through the trains it waits for) to a train that moves, dwells at a station
        or has yet to start waits on as long as that lasts, as in Open Rails: it is late,
        not stuck (docs/signals.md §4.7)."""
        rp = self.replay
        v = rp.engine.v
        live = self._live_waits(v)
        for k, d in enumerate(self.drivers):
            t = rp.trains[k]
            if t.done_at is not None:
                continue
            moving = abs(float(v[rp.layout.train_start[k]])) > 0.05 or t.spec.name in live
            # Waiting only for trains that will never move again (stuck, or the player's
            # train at the end of its path) is hopeless at once.
            hopeless = bool(d.blocked_by) and all(
                n in self.stuck or self.drivers[self.index[n]].state == "done" for n in d.blocked_by
            )
            if moving or d.state not in ("running", "ready"):
                self._still_since[k] = rp.time
            elif rp.time - self._still_since[k] >= (DEADLOCK_AFTER_S if hopeless else self.stuck_after):
                self.stuck.add(t.spec.name)
                d.state = "stuck" if d.state == "running" else "not_started"
                t.finish(rp.time)
                rp.log.add(
                    Stuck(
                        time=rp.time,
                        clock=clock(self.t0 + rp.time),
                        train=t.spec.name,
                        waiting_for=tuple(sorted(d.blocked_by)),
                        message=f"stood {rp.time - self._still_since[k]:.0f} s waiting for track held by "
                        f"{', '.join(sorted(d.blocked_by)) or 'nobody'}"
                        + (", which will not move again" if hopeless else ""),
                    )
                )

    def _live_waits(self, v: np.ndarray) -> set[str]:
        """Names of the trains whose blockers, followed from train to train, reach one that
        moves, dwells or has yet to start (so the wait will end)."""
        rp = self.replay
        going = {
            rp.trains[k].spec.name
            for k, d in enumerate(self.drivers)
            if rp.trains[k].done_at is None
            and (d.state in ("dwell", "waiting") or abs(float(v[rp.layout.train_start[k]])) > 0.05)
        }
        live: set[str] = set()
        changed = True
        while changed:  # (a fixpoint over the waits-for graph: a cycle alone never gets in)
            changed = False
            for k, d in enumerate(self.drivers):
                n = rp.trains[k].spec.name
                if n not in live and d.blocked_by and any(b in going or b in live for b in d.blocked_by):
                    live.add(n)
                    changed = True
        return live
