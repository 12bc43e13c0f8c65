"""Replaying an Open Rails timetable (docs/timetables.md §5) on the activity replay.

Every run of a :class:`~tdbtools.physics.timetable_plan.TTPlan` becomes a train of an
:class:`~tdbtools.physics.activity.ActivityReplay` (its path, its consist, its stops
found by station name on its path); a :class:`TimetableDriver` adds what timetables
have and activities do not, and :class:`TimetableReplay` acts on the links between
trains once a second, before the activity replay's own dispatching:

* a train formed (``$forms``/``$triggers``/``$stable``) by another starts when that
  one has reached the end of its path (and not before its own booked start); the
  forming train stays on the track until then and leaves as the new one enters;
* ``$pool``: a train that ends into a pool is stored on its first storage track with
  room (off the track), or removed when none has (overflow); a train that starts from
  a pool takes the unit nearest the access of the first track holding any, or is
  cancelled when the pool is empty at its start time (underflow): ``PoolYard``;
* ``$wait``/``$follow`` hold a train at its start or at a station until the other train
  has passed the first track both share beyond where their paths differ;
* ``$connect`` holds a train at a station until the other train has arrived there and
  the connection time has passed, unless that one is later than ``/maxdelay``;
* ``$create`` places a train before its start, where it stands until then; static
  trains stand where their path starts the whole time;
* ``$activate``/``$activated``, ``$terminal``, ``$stoptime``, ``$max``/``$cruise``.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..formats.activity import ActivityFile, ActivityHeader, ServiceFile, StopItem
from ..formats.route import Route, load_route
from ..formats.tdb import PlatformItem
from .activity import (
    ActivityPlan,
    ActivityReplay,
    ActivityResult,
    PlannedTrain,
    Platform,
    Stop,
    clock,
    place_stops,
    route_platforms,
)
from .events import SetupWarning
from .replay import Replay, ReplayError
from .scenario import Scenario, TrainSpec
from .timetable_driver import Formed, Held, PoolEvent, TimetableDriver
from .timetable_joins import join_consists
from .timetable_plan import (
    TimetableReplayError,
    TTPlan,
    TTRun,
    TTStop,
    consist_files,
    plan_timetable,
    with_route_stations,
)
from .timetable_pools import PoolYard, pool_limits
from .timetable_waits import TimetableWaits

#: Seconds between the timetable's own checks (links, pools, holds).
CHECK_EVERY_S = 1.0
#: $hold: the exit signal clears this long before the train leaves (manual: 2 minutes).
HOLD_RELEASE_S = 120.0


class TimetablePolicy(TimetableWaits):
    """The activity policy (docs/activities.md §4) with the timetable's rules (module
    docstring): its drivers are :class:`TimetableDriver` s, their stops are found by
    station name, and :meth:`_check` acts on the links between trains once a second
    before the activity's own dispatching."""

    def __init__(
        self, aplan: ActivityPlan, route: Route, t0: float, stuck_after: float, tt_plan: TTPlan
    ) -> None:
        super().__init__(aplan, route, t0, stuck_after)
        self.tt_plan = tt_plan
        self.runs = {r.name: r for r in tt_plan.runs if not r.pool_stock}
        self.pools = PoolYard(pool_limits(Path(tt_plan.timetable.path).parent))
        self.pool_defects: list[str] = []  # pools that overflowed
        for r in tt_plan.runs:
            if r.pool_stock and r.pool_to and self.pools.store(r.pool_to, r.name) is None:
                # Open Rails: more units created in a pool than it can hold (a warning)
                self.pool_defects.append(f"{r.name}: pool {r.pool_to!r} is full: not stored in it")
        self.finished_at: dict[str, float] = {}
        self.activated: dict[str, float] = {}
        self.outcome: dict[str, str] = {}
        self.pool_drawn: dict[str, str] = {}
        self._handled: set[str] = set()
        self._tt_next = 0.0
        self._dwell_held: dict[int, bool] = {}
        self._restarted: set[tuple[int, int]] = set()  # (train, stop) given its restart delay
        self._tt_stops: dict[int, list[TTStop]] = {}
        self.join_notes: dict[str, list[str]] = {}  # run -> what its joins did (set by the replay)
        self.join_defects: list[str] = []  # joins that could not be done as planned

    def driver(self, spec: TrainSpec, auto: Any, default: Any, train: Any) -> TimetableDriver:
        return TimetableDriver(super().driver(spec, auto, default, train))

    def start(self, replay: Replay) -> None:
        super().start(replay)
        for s in self.tt_plan.simplifications:
            replay.log.add(SetupWarning(time=0.0, message=f"simplified: {s}"))
        for defect in self.tt_plan.defects:
            if defect not in self.tt_plan.warnings:  # the reader's findings are said already
                replay.log.add(SetupWarning(time=0.0, message=f"left out of the timetable: {defect}"))
        self._place_timetable_stops(self.route)
        for k, d in enumerate(self._tt_drivers()):
            r = self.runs[self.trains[k].spec.name]
            if r.static:
                d.path_end = float(self.trains[k].front0)
                d.ai = False
            else:
                d.ai = not r.stays
                if r.create is not None or r.restart_new_s > 0.0:
                    d.hold_until = float(r.start) + r.restart_new_s
                if (
                    r.formed_by is not None
                    or r.pool_from is not None
                    or r.activated
                    or r.after
                    or r.picked_by
                ):
                    d.start = math.inf  # released by _check
            if r.max_speed is not None:
                d.vmax = r.max_speed if d.vmax is None else min(d.vmax, r.max_speed)
                d._set_speed_cap()

    # -- set-up --------------------------------------------------------------------------

    def _place_timetable_stops(self, route: Route) -> None:
        """Put each run's stops, found by station name, on its line."""
        plats = route_platforms(route)
        self._tt_stops = {}
        by_station: dict[str, list[Platform]] = {}
        for p in {p.ids: p for p in plats.values()}.values():
            by_station.setdefault(p.station, []).append(p)
        for k, t in enumerate(self.trains):
            d = self._tt_drivers()[k]
            r = self.runs[t.spec.name]
            found: list[tuple[Stop, TTStop]] = []
            for st in r.stops:
                best = None
                for p in by_station.get(st.station, ()):
                    pl = p if st.stoptime is None else replace(p, min_wait=st.stoptime)
                    item = StopItem(p.ids[0], st.arrival, st.depart, 0, 0.0, None)
                    got, _w = place_stops(t.line, t.front0, t.length, (item,), {p.ids[0]: pl})
                    if got and (best is None or got[0].stop_s < best.stop_s):
                        best = got[0]
                if best is None:
                    self.log.add(
                        SetupWarning(
                            time=0.0,
                            train=t.spec.name,
                            message=f"station {st.station!r} is not on the path {r.path!r}: no stop there",
                        )
                    )
                    continue
                if st.terminal and self._ends_here(t, best):
                    # $terminal: the front runs up to the far end of a platform where
                    # the path ends (the manual's terminal platform)
                    hi = best.stop_s + (best.platform.length - t.length) / 2.0
                    best.stop_s = min(hi - 2.0, float(t.line.path_length))
                found.append((best, st))
            found.sort(key=lambda s: s[0].stop_s)
            self._tt_stops[k] = [st for _s, st in found]
            stops = [s for s, _st in found]
            if stops:
                last = stops[-1]
                b = last.booked
                if (
                    b.arrival is None
                    and b.depart is not None
                    and not r.formed_by
                    and self._ends_here(t, last)
                ):
                    # a single time at the final location is the arrival (docs §3.3)
                    last.booked = replace(b, arrival=b.depart, depart=None)
            for s in stops:
                s.stop_s = self.clear_of_junctions(t.line, s.stop_s)
            d.stops = stops

    @staticmethod
    def _ends_here(t, stop: Stop) -> bool:  # noqa: ANN001
        end = float(t.end_s if t.end_s is not None else t.line.path_length)
        return end - stop.stop_s < stop.platform.length + 400.0

    # -- the timetable's rules, once a second ---------------------------------------------

    def before_step(self, replay: Replay) -> None:
        if replay.time + 1e-9 >= self._tt_next:
            self._tt_next += CHECK_EVERY_S
            self._check()
        super().before_step(replay)

    def _train_delay(self, k: int) -> float:
        """Open Rails' running delay (manual, "Calculation of running delay"): how late
        against the booked arrival at the next station, never going down."""
        d = self._tt_drivers()[k]
        name = self.trains[k].spec.name
        now = self._now()
        cand = 0.0
        if d.state in ("waiting", "ready"):
            r = self.runs[name]
            if math.isfinite(d.start) or r.formed_by or r.pool_from:
                cand = max(0.0, now - r.start)
        elif d.next_stop < len(d.stops):
            b = d.stops[d.next_stop].booked
            due = b.arrival if b.arrival is not None else b.depart
            if due is not None:
                cand = max(0.0, now - due)
        v = max(self.delay.get(name, 0.0), cand)
        self.delay[name] = v
        return v

    def _check(self) -> None:
        now = self._now()
        for k in range(len(self.drivers)):
            self._train_delay(k)
        # 1. ends: disposal, successors, pools, activations
        for k, d in enumerate(self._tt_drivers()):
            name = self.trains[k].spec.name
            if name in self._handled or not (d.finished or d.state in ("stuck", "not_started")):
                continue
            self._handled.add(name)
            r = self.runs[name]
            if not d.finished:
                self.outcome.setdefault(name, f"did not reach its end ({d.state})")
                continue
            self.finished_at[name] = now
            self.outcome.setdefault(name, self._end_outcome(name))
            if r.pool_to and not r.static:
                if self.pools.store(r.pool_to, name) is None:
                    # pool overflow (TTPool.SetPoolExit): the train is abandoned at its end
                    why = f"pool {r.pool_to!r} overflow: no storage track has room; removed at its end"
                    self.outcome[name] = why
                    self.pool_defects.append(f"{name}: {why}")
                    self.log.add(SetupWarning(time=self.time, train=name, message=why))
                    action = "overflow"
                else:
                    action = "in"
                self.log.add(
                    PoolEvent(time=self.time, clock=clock(now), train=name, pool=r.pool_to, action=action)
                )
            for where, tgt in r.activates:
                if where == "END":
                    self.activated.setdefault(tgt, now)
            for j in r.joins:
                if j.kind == "pickup" and j.other is not None:
                    self._pick_up(k, j.other)
        # 2. starts
        for k, d in enumerate(self._tt_drivers()):
            name = self.trains[k].spec.name
            r = self.runs[name]
            for where, tgt in r.activates:
                if tgt in self.activated or where == "END":
                    continue
                if where is None and d.state in ("running", "dwell", "done"):
                    self.activated[tgt] = now
                elif where is not None and any(
                    s.platform.station == where and s.arrival is not None for s in d.stops
                ):
                    self.activated[tgt] = now
            if d.state != "waiting" or math.isfinite(d.start) or r.picked_by:
                continue
            release = float(r.start)
            if r.activated:
                if name not in self.activated:
                    continue
                release = max(release, self.activated[name])
            if r.formed_by is not None:
                if r.formed_by not in self.finished_at:
                    kf = self.index.get(r.formed_by)
                    if kf is not None and self._gone(kf) and not self.drivers[kf].finished:
                        self._cancel(k, f"{r.formed_by} that forms it never reached its end")
                    continue
                release = max(release, self.finished_at[r.formed_by])
            waiting_for = [o for o in r.after if o not in self.finished_at]
            if waiting_for:
                for o in waiting_for:
                    ko = self.index.get(o)
                    if ko is not None and self._gone(ko) and not self.drivers[ko].finished:
                        self._cancel(k, f"{o} that joins it never reached its end")
                        break
                continue
            for o in r.after:
                release = max(release, self.finished_at[o])
            if now + 1e-9 < release:
                continue
            if r.pool_from is not None:
                drawn = self.pools.draw(r.pool_from)
                if drawn is None:
                    self.log.add(
                        PoolEvent(
                            time=self.time, clock=clock(now), train=name, pool=r.pool_from, action="underflow"
                        )
                    )
                    self._cancel(k, f"pool {r.pool_from!r} was empty at its start (pool underflow)")
                    continue
                unit = drawn
                self.pool_drawn[name] = unit
                self.log.add(
                    PoolEvent(
                        time=self.time,
                        clock=clock(now),
                        train=name,
                        pool=r.pool_from,
                        action="out",
                        unit=unit,
                    )
                )
            if r.formed_by is not None:
                kf = self.index[r.formed_by]
                self._leave(kf)
                how = "detach" if r.detached else self.runs[r.formed_by].disposal.split(" ")[0]
                self.log.add(
                    Formed(time=self.time, clock=clock(now), train=r.formed_by, new_train=name, how=how)
                )
            for o in r.after:
                # an attached train leaves as the train it is attached to starts
                kinds = {j.kind for j in self.runs[o].joins if j.other == name}
                if "attach" in kinds:
                    self._leave(self.index[o])
                for how in sorted(kinds & {"attach", "transfer"}):
                    self.log.add(Formed(time=self.time, clock=clock(now), train=o, new_train=name, how=how))
            d.start = now
        # #restartdelay $station: once a stop has begun, its departure is that much later
        for k, d in enumerate(self._tt_drivers()):
            r = self.runs[self.trains[k].spec.name]
            if r.restart_station_s > 0.0 and d.state == "dwell" and (k, d.next_stop) not in self._restarted:
                self._restarted.add((k, d.next_stop))
                d.dwell_until += r.restart_station_s
        # 3. holds at the start and at stations
        for k, d in enumerate(self._tt_drivers()):
            name = self.trains[k].spec.name
            r = self.runs[name]
            if not r.links or d.state not in ("running", "dwell"):
                d.held = False
                continue
            at_start = d.state == "running" and d.next_stop == 0 and self._at_start(k)
            station = d.stops[d.next_stop].platform.station if d.state == "dwell" else None
            holding = None
            for link in r.links:
                if link.kind in ("wait", "follow"):
                    here = (link.station is None and at_start) or (
                        station is not None
                        and (link.station == station or (link.kind == "follow" and link.station is None))
                    )
                    if here and self._wait_holds(k, link):
                        at = self._line_wait(k, link)
                        if at is not None:
                            # it runs on and waits at the wait position on the line
                            self._armed[(k, id(link))] = (*at, link)
                            continue
                        holding = link
                        break
                elif link.kind == "waitany":
                    here = (link.station is None and at_start) or (
                        station is not None and link.station == station
                    )
                    if here and self._waitany_holds(k, link):
                        holding = link
                        break
                elif link.kind == "connect" and station is not None and link.station == station:
                    until = self._connect_until(k, link, station)
                    if until is not None and now + 1e-9 < until:
                        holding = link
                        break
            on_line = self._line_waits(k)
            self._note_hold(k, holding or on_line, station)
            if on_line is not None and holding is None:
                self._still_since[k] = self.time  # waiting by the timetable is not being stuck
            if holding is None:
                d.held = False
                self._dwell_held[k] = False
                continue
            self._still_since[k] = self.time  # waiting by the timetable is not being stuck
            self._dwell_held[k] = d.state == "dwell"
            if d.state == "dwell":
                d.dwell_until = max(d.dwell_until, now + CHECK_EVERY_S)
            else:
                d.held = True
        for k, d in enumerate(self._tt_drivers()):
            if d.state == "running" and self._now() < d.hold_until:
                self._still_since[k] = self.time
        if self.signals is not None:
            for k, d in enumerate(self._tt_drivers()):
                held = self._exit_held(k)
                if math.isfinite(d.wait_limit):
                    # waiting on the line: no signal asked for, no track reserved beyond
                    held = d.wait_limit if held is None else min(held, d.wait_limit)
                self.signals.ilk.trains[k].hold_s = held

    def _exit_held(self, k: int) -> float | None:
        """$hold: the exit of the next stop stays closed until 2 minutes before the train
        leaves (manual, "$hold"), and while the train is held for another: the line
        distance beyond which it asks for no signal and reserves no track, or None.
        Open Rails holds the platform's exit signal; here the exit is the end of the
        stop, whether a signal stands there or the track is worked without one."""
        d = self._tt_drivers()[k]
        if d.state not in ("running", "dwell") or d.next_stop >= len(d.stops):
            return None
        tts = self._tt_stops.get(k, [])
        if d.next_stop >= len(tts) or not tts[d.next_stop].hold:
            return None
        stop = d.stops[d.next_stop]
        hold_at = stop.stop_s + 1.0
        if d.state == "dwell" and (d.held or self._dwell_held.get(k, False)):
            return hold_at
        b = stop.booked
        leave = d.dwell_until if d.state == "dwell" else (b.depart if b.depart is not None else None)
        # a connection still to come keeps it closed on the approach too
        for link in self.runs[self.trains[k].spec.name].links:
            if link.kind == "connect" and link.station == stop.platform.station:
                until = self._connect_until(k, link, link.station)
                if until is not None:
                    leave = until if leave is None else max(leave, until)
        return hold_at if leave is not None and self._now() < leave - HOLD_RELEASE_S else None

    def _leave(self, k: int) -> None:
        """The forming train leaves the track: its consist is the new train now."""
        d = self._tt_drivers()[k]
        name = self.trains[k].spec.name
        if d.ai:
            return
        d.ai = True
        if self.signals is not None:
            self.signals.ilk.leave(k)
        self.on_off[name] = (self.on_off.get(name, (self.t0, 0.0))[0], self._now())

    def _end_outcome(self, name: str) -> str:
        """How a train that reached its end ended: what its joins did, then its
        disposal (none after $attach: it is part of the other train)."""
        r = self.runs[name]
        notes = self.join_notes.get(name, [])
        if not notes:
            return r.disposal
        ends = [] if any(j.kind == "attach" for j in r.joins) else [r.disposal]
        return "; ".join([*notes, *ends])

    def _pick_up(self, k: int, other: str) -> None:
        """$pickup: the other train, standing at its end or at the start of its path,
        becomes part of this one (its consist was joined when the replay was set up)."""
        name = self.trains[k].spec.name
        ko = self.index.get(other)
        if ko is None:
            return
        od = self._tt_drivers()[ko]
        if od.finished:
            self._leave(ko)
        elif od.state == "waiting" and self.runs[other].picked_by == name:
            # it stood at the start of its path: it never runs, it is part of this train now
            od.state, od.finished, od.ai = "done", True, True
            self.trains[ko].finish(self.time)
            self._handled.add(other)
        else:
            why = f"{other} was not standing at its end when {name} ended ({od.state}): not picked up"
            self.join_defects.append(why)
            self.log.add(SetupWarning(time=self.time, train=name, message=why))
            return
        self.outcome[other] = f"picked up by {name}"
        self.log.add(
            Formed(time=self.time, clock=clock(self._now()), train=other, new_train=name, how="pickup")
        )

    def _cancel(self, k: int, why: str) -> None:
        d = self._tt_drivers()[k]
        name = self.trains[k].spec.name
        d.state = "not_started"
        self.trains[k].finish(self.time)
        self.outcome[name] = f"cancelled: {why}"
        self.log.add(SetupWarning(time=self.time, train=name, message=f"cancelled: {why}"))

    # -- the result ----------------------------------------------------------------------

    def outcomes(self) -> dict[str, str]:
        """How every train ended (and the units that were in a pool from the start)."""
        out = {}
        for k, t in enumerate(self.trains):
            name = t.spec.name
            d = self._tt_drivers()[k]
            if name in self.outcome:
                out[name] = self.outcome[name]
            elif d.finished:
                out[name] = self._end_outcome(name)
            else:
                out[name] = f"did not reach its end ({d.state})"
        for r in self.tt_plan.runs:
            if r.pool_stock:
                out[r.name] = f"in pool {r.pool_to} from the start"
        return out


class TimetableReplay(ActivityReplay):
    """A replay of a timetable's runs: an :class:`ActivityReplay` whose policy is a
    :class:`TimetablePolicy` (module docstring)."""

    def __init__(
        self,
        plan: TTPlan,
        *,
        route: Route | None = None,
        stand_in: bool = False,
        step: float = 0.5,
        duration: float | None = None,
        trace_every: float = 2.0,
        signals: bool | None = None,
        stuck_after: float = 1800.0,
        physics: str | None = None,
    ) -> None:
        route = route if route is not None else load_route(plan.route_folder)
        plan = with_route_stations(
            plan, {it.station for it in route.tdb.items if isinstance(it, PlatformItem)}
        )
        self.tt_plan = plan
        runs = [r for r in plan.runs if not r.pool_stock]
        if not runs:
            raise TimetableReplayError(f"{plan.timetable.path}: the timetable runs no trains")
        timed = [
            r.create if r.create is not None and r.create >= 0 else r.start for r in runs if not r.static
        ]
        timed = [t for t in timed if t >= 0]
        if not timed:
            raise TimetableReplayError(f"{plan.timetable.path}: no train has a start time")
        t0 = min(timed)
        by_name = {r.name: r for r in runs}
        with tempfile.TemporaryDirectory(prefix="tdbtools-tt-") as tmp:
            cons = consist_files(plan, Path(route.install_root), Path(route.folder), Path(tmp))
            # A train formed by $forms runs with the consist of the train that forms it.
            for r in runs:
                src, seen = r, set()
                while src.keeps_consist_of and src.keeps_consist_of in by_name and src.name not in seen:
                    seen.add(src.name)
                    src = by_name[src.keeps_consist_of]
                cons[r.name] = cons[src.name]
            # joined and split trains run with the cars they really have (docs §5.6)
            joined, units = join_consists(plan, Path(route.install_root), Path(route.folder), Path(tmp))
            cons.update(joined)
            planned, specs = [], []
            for r in runs:
                placed = (
                    t0
                    if r.static or (r.create is not None and r.create < 0)
                    else (r.create if r.create is not None else r.start)
                )
                srv = ServiceFile(
                    path=str(plan.timetable.path),
                    serial=None,
                    name=r.name,
                    train_config=cons[r.name],
                    path_id=r.path,
                    max_wheel_acceleration=None,
                    efficiency=None,
                    starting_speed=0.0,
                    ending_speed=None,
                    platform_ids=(),
                    tree=None,  # type: ignore[arg-type]
                )
                planned.append(
                    PlannedTrain(r.name, srv, int(max(placed, 0)), (), r.name == plan.player, True)
                )
                specs.append(
                    TrainSpec(
                        name=r.name,
                        consist=Path(cons[r.name] + ".con"),
                        path=Path(r.path + ".pat"),
                        driver="auto",
                        start_speed=0.0,
                        waiting_points=False,
                    )
                )
            last = max(max(r.start for r in runs), t0)
            header = ActivityHeader(
                route_id=Path(plan.route_folder).name,
                name=plan.timetable.description or Path(plan.timetable.path).stem,
                start_time=int(t0),
                duration=int(last - t0 + 3 * 3600),
            )
            act = ActivityFile(str(plan.timetable.path), None, header, None, None, (), 0, None)  # type: ignore[arg-type]
            self.plan = ActivityPlan(act, Path(plan.route_folder), tuple(planned), plan.warnings)
            self.t0 = float(t0)
            dur = duration if duration is not None else float(last - t0 + 4 * 3600)
            sc = Scenario(
                Path(plan.route_folder),
                tuple(specs),
                step=step,
                duration=dur,
                stand_in=stand_in,
                source=str(Path(plan.timetable.path).resolve()),
                physics=physics,
            )
            self.policy = TimetablePolicy(self.plan, route, self.t0, stuck_after, plan)
            self.policy.join_notes = units.notes
            try:
                self.replay = Replay(
                    sc,
                    route=route,
                    trace_every=trace_every,
                    signals=False if signals is False else None,
                    policy=self.policy,
                )
            except ReplayError as exc:
                raise TimetableReplayError(str(exc)) from None

    def run(self, progress: Callable[[float], None] | None = None) -> TimetableResult:  # type: ignore[override]
        ar = super().run(progress)
        pol = self.policy
        assert isinstance(pol, TimetablePolicy)
        outcomes = pol.outcomes()
        ar.replay.summary["timetable"] = {
            "file": str(self.tt_plan.timetable.path),
            "description": self.tt_plan.timetable.description,
            "player": self.tt_plan.player,
            "outcomes": outcomes,
            "pools": pol.pools.contents(),
            "drawn_from_pool": dict(pol.pool_drawn),
            "delays_s": {k: round(v, 1) for k, v in pol.delay.items()},
            "simplifications": list(self.tt_plan.simplifications),
            "defects": list(self.tt_plan.defects),
        }
        defects = (*self.tt_plan.defects, *pol.join_defects, *pol.pool_defects)
        ar.replay.summary["timetable"]["defects"] = list(defects)
        return TimetableResult(ar, outcomes, self.tt_plan.simplifications, defects)


@dataclass(frozen=True, slots=True, eq=False)
class TimetableResult:
    """A replayed timetable: the activity result (traces, events, timetable rows) and
    every train's outcome."""

    activity: ActivityResult
    outcomes: dict = field(default_factory=dict)
    simplifications: tuple[str, ...] = ()
    defects: tuple[str, ...] = ()  # what of the file was left out (TTPlan.defects)

    @property
    def replay(self):  # noqa: ANN201
        return self.activity.replay

    @property
    def timetable(self) -> tuple[dict, ...]:
        return self.activity.timetable

    @property
    def failed(self) -> bool:
        """Derailed, collided, deadlocked, stuck, a train that did not reach its end
        (cancelled ones included), or a part of the file left out (``defects``)."""
        s = self.activity.replay.summary
        return self.activity.failed or bool(s["not_at_end"]) or bool(self.defects)

    def timetable_csv(self) -> str:
        return self.activity.timetable_csv()

    def write(self, out: str | Path) -> list[Path]:
        from .._fs import write_bytes_atomic

        files = self.activity.write(out)
        p = Path(out) / "outcomes.json"
        write_bytes_atomic(p, json.dumps(self.outcomes, indent=2, ensure_ascii=False).encode())
        files.append(p)
        return files


def replay_timetable(
    path: str | Path,
    *,
    player: str | None = None,
    route: Route | None = None,
    stand_in: bool = False,
    step: float = 0.5,
    duration: float | None = None,
    progress: Callable[[float], None] | None = None,
    signals: bool | None = None,
    physics: str | None = None,
) -> TimetableResult:
    """Replay every train of a ``.timetable-or`` (module docstring); ``player``: the
    train that stays on the track at its end (the others are AI trains). ``physics``:
    "engineering" or "openrails" (None: TDBTOOLS_PHYSICS, else by the stock as for an
    activity: Open Rails' laws when every car comes from its .eng/.wag file)."""
    plan = plan_timetable(path, player=player, route_folder=None if route is None else route.folder)
    return TimetableReplay(
        plan, route=route, stand_in=stand_in, step=step, duration=duration, signals=signals, physics=physics
    ).run(progress)


__all__ = [
    "Formed",
    "Held",
    "PoolEvent",
    "TTRun",
    "TimetableDriver",
    "TimetablePolicy",
    "TimetableReplay",
    "TimetableResult",
    "replay_timetable",
]
