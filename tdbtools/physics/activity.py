"""Replaying an activity: the player service and every AI service, started at their
times, with station stops and plain track occupancy (docs/activities.md §4–6).

Each service becomes a train of the physics replay (its consist on its path). A
:class:`ServiceDriver` drives it: it waits for its start time, then runs with the
automatic driver towards the nearest of its next station stop, the end of its
movement authority and the end of its path. Station stops are the booked items (the
``.trf`` for AI services, the ``.act`` for the player) whose platform lies on the
train's path; the train stops with its middle at the middle of the platform, dwells
and departs not before the booked time.

Movement authority comes from plain occupancy: the track is cut into blocks, pieces of
vector nodes and junction areas (out to each junction's clearance point). Every second
the dispatcher gives each train the blocks it occupies and the blocks ahead up to its
braking distance plus a margin and then on to the next junction area, first come first
served; a train may run up to the first block another train holds, and never waits
inside a junction area.
Trains standing still that wait on each other in a cycle are a deadlock; a train
that does not move for ``stuck_after`` seconds while waiting for track is stuck.
"""

from __future__ import annotations

import csv
import dataclasses
import difflib
import functools
import io
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import SourceError, TdbToolsError
from ..formats.activity import (
    ActivityFile,
    ServiceFile,
    StopItem,
    TrafficFile,
    find_activity_file,
    read_activity,
    read_service,
    read_traffic,
)
from ..formats.route import Route, load_route
from ..stf import resolve_case_insensitive
from ..track.pathbuild import platforms
from .dispatch import (  # noqa: F401  (their home before the dispatcher had its own module)
    BLOCK_M,
    BLOCK_MARGIN_M,
    DEADLOCK_AFTER_S,
    DISPATCH_EVERY_S,
    FOUL_SEPARATION_M,
    JUNCTION_MAX_M,
    JUNCTION_MIN_M,
    RESERVE_EXTRA_M,
    Dispatcher,
    block_name,
    clock,
    fouling_length,
)
from .driver import AutoDriver, Controls, DriveState
from .driver import Stop as DriverStop
from .events import (
    Arrived,
    Collision,
    Deadlock,
    EventLog,
    NotAtEnd,
    Reversed,
    SetupWarning,
    SideCollision,
    Stuck,
)
from .outcome import service_outcomes, unscripted_signals
from .replay import Replay, ReplayError, ReplayResult
from .reversal import REVERSAL_S
from .scenario import Scenario, TrainSpec
from .signalling import SignalDriver
from .stages.policy import ReplayPolicy
from .wholepath import ServicePart, assign_stops, part_name, service_parts

#: Boarding: 10 s per waiting passenger per passenger car, at least 20 s (docs §5).
BOARDING_PER_PASSENGER_S = 10.0
MIN_BOARDING_S = 20.0
#: A booked AI stop with arrival == departure this far from the actual arrival is not credible.
INCREDIBLE_S = 4 * 3600.0

#: At most this many services in one activity (each is a train with its own line).
MAX_TRAINS = 500

TIMETABLE_COLUMNS = (
    "train",
    "station",
    "platform",
    "sched_arr",
    "sched_dep",
    "actual_arr",
    "actual_dep",
    "arr_delay_s",
    "dep_delay_s",
)


class ActivityError(TdbToolsError, ValueError):
    """An activity that cannot be replayed (missing service, path or consist)."""


# -- the plan -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlannedTrain:
    name: str
    service: ServiceFile
    start: int  # seconds since midnight
    stops: tuple[StopItem, ...]  # booked stops, in order
    player: bool
    booked: bool  # False: an AI service without a .trf entry


@dataclass(frozen=True, slots=True)
class ActivityPlan:
    activity: ActivityFile
    route_folder: Path
    trains: tuple[PlannedTrain, ...]
    warnings: tuple[str, ...] = ()


def _route_folder(act_path: Path) -> Path:
    parent = act_path.resolve().parent
    if parent.name.lower() == "activities":
        return parent.parent
    raise ActivityError(f"{act_path}: an activity lives in <route>/ACTIVITIES/; cannot tell its route")


def _missing(folder: Path, kind: str, name: str) -> str:
    """The message for a service or traffic file an activity names that does not exist:
    the file looked for and the nearest name that does (docs/activities.md §4.7)."""
    sub, ext = {"srv": ("SERVICES", ".srv"), "trf": ("TRAFFIC", ".trf")}[kind]
    where = resolve_case_insensitive(folder / sub)
    have = sorted(f.stem for f in where.iterdir() if f.suffix.lower() == ext) if where.is_dir() else []
    near = difflib.get_close_matches(name, have, n=1, cutoff=0.0)
    hint = f"; the nearest that exists is {near[0] + ext!r}" if near else f"; {where} has no {ext} file"
    return f"{where / (name + ext)} not found{hint}"


def plan_activity(
    path: str | Path, *, route_folder: str | Path | None = None, skip_missing: bool = False
) -> ActivityPlan:
    """Read an activity and everything it names: services, traffic times. A service or
    traffic file that does not exist is an error (Open Rails refuses such an activity);
    with ``skip_missing`` an AI service without its file is left out and a missing
    traffic file leaves the AI services without booked times, each with a warning."""
    p = Path(path)
    if not p.is_file():
        raise ActivityError(f"activity file not found: {str(p)!r}")
    act = read_activity(p)
    folder = Path(route_folder) if route_folder is not None else _route_folder(p)
    warnings: list[str] = []

    def service(name: str) -> ServiceFile | None:
        f = find_activity_file(folder, "srv", name)
        if f is None:
            msg = f"service {name!r}: " + _missing(folder, "srv", name)
            if skip_missing and not (act.player is not None and name == act.player.name):
                warnings.append(msg + ": the service is left out (--skip-missing)")
                return None
            raise ActivityError(msg + ("" if skip_missing else " (--skip-missing runs without it)"))
        srv = read_service(f)
        for what, v in (("Train_Config", srv.train_config), ("PathID", srv.path_id)):
            if "/" in v or "\\" in v or v in (".", ".."):
                raise ActivityError(f"{f}: {what} {v!r} must be a plain file name")
        return srv

    if len(act.services) + 1 > MAX_TRAINS:
        raise ActivityError(f"{p}: {len(act.services) + 1} services, at most {MAX_TRAINS} are replayed")

    traffic: TrafficFile | None = None
    if act.traffic_name:
        f = find_activity_file(folder, "trf", act.traffic_name)
        if f is None:
            msg = "traffic file: " + _missing(folder, "trf", act.traffic_name)
            if not skip_missing:
                raise ActivityError(msg + " (--skip-missing runs without it: no booked AI times)")
            warnings.append(msg + ": AI services have no booked times (--skip-missing)")
        else:
            traffic = read_traffic(f)
    trains: list[PlannedTrain] = []
    names: set[str] = set()

    def unique(n: str) -> str:
        base, k = n, 2
        while n in names:
            n, k = f"{base}#{k}", k + 1
        names.add(n)
        return n

    if act.player is not None:
        srv = service(act.player.name)
        assert srv is not None  # (a missing player service is always an error)
        trains.append(
            PlannedTrain(
                unique(srv.name or act.player.name), srv, act.player.time, act.player.stops, True, True
            )
        )
    for ref in act.services:
        found = service(ref.name)
        if found is None:
            continue
        srv = found
        entry = traffic.entry(ref.name, ref.time) if traffic is not None else None
        if entry is None and traffic is not None:
            warnings.append(
                f"service {ref.name!r} at {clock(ref.time)}: no entry in the traffic file (no booked times)"
            )
        stops = entry.stops if entry is not None else ()
        # the activity's per-stop efficiency goes with the traffic's times (same order)
        if entry is not None and ref.stops:
            stops = (
                tuple(
                    dataclasses.replace(s, efficiency=r.efficiency) if r.platform_id == s.platform_id else s
                    for s, r in zip(stops, ref.stops)
                )
                + stops[len(ref.stops) :]
            )
        trains.append(
            PlannedTrain(unique(srv.name or ref.name), srv, ref.time, stops, False, entry is not None)
        )
    if not trains:
        raise ActivityError(f"{p}: the activity starts no trains")
    return ActivityPlan(act, folder, tuple(trains), tuple(warnings))


# -- platforms and stops --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Platform:
    ids: tuple[int, int]
    name: str
    station: str
    node: int
    near: float  # node offsets of its two ends
    far: float
    min_wait: int
    passengers: int

    @property
    def length(self) -> float:
        return self.far - self.near


def route_platforms(route: Route) -> dict[int, Platform]:
    """Platforms by either of their item ids."""
    out: dict[int, Platform] = {}
    for idx, (node, a, b, it, other) in platforms(route).items():
        ids = (
            it.item_id if it.item_id is not None else idx,
            other.item_id if other.item_id is not None else other.index,
        )
        p = Platform(
            ids, it.platform_name, it.station, node, a, b, it.min_waiting_time, it.passengers_waiting
        )
        for i in (*ids, idx, other.index):
            out[i] = p
    return out


@dataclass(slots=True)
class Stop:
    """A station stop on a train's line: where the front stops, and what happened."""

    platform: Platform
    booked: StopItem
    stop_s: float  # line distance of the front at the stop
    arrival: float | None = None  # actual, seconds since midnight
    depart: float | None = None


def place_stops(
    line,
    front0: float,
    train_length: float,
    booked: tuple[StopItem, ...],  # noqa: ANN001
    plats: dict[int, Platform],
) -> tuple[list[Stop], list[str]]:
    """The booked stops found on the line, in order (docs/activities.md §5)."""
    stops: list[Stop] = []
    warnings: list[str] = []
    after = front0 - 1e-6
    end = float(line.path_length)
    for item in booked:
        p = plats.get(item.platform_id)
        if p is None:
            warnings.append(f"platform id {item.platform_id} is not a platform of the route")
            continue
        a = line.locate(p.node, p.near)
        b = line.locate(p.node, p.far)
        found = None
        for sa in a:
            for sb in b:
                lo, hi = sorted((float(sa), float(sb)))
                if abs((hi - lo) - p.length) < 1.0 and hi > after and lo <= end:
                    if found is None or hi < found[1]:
                        found = (lo, hi)
        if found is None:
            warnings.append(f"platform {p.name!r} (id {item.platform_id}) is not on the path")
            continue
        lo, hi = found
        stop_s = hi - (p.length - train_length) / 2.0
        stop_s = min(stop_s, end)
        stops.append(Stop(p, item, stop_s))
        after = stop_s
    return stops, warnings


def boarding_time(passengers: int, passenger_cars: int) -> float:
    if passenger_cars <= 0:
        return MIN_BOARDING_S
    # whole seconds, as Open Rails computes it (7 passengers, 3 cars: 23 s)
    return max(float(int(BOARDING_PER_PASSENGER_S * passengers) // passenger_cars), MIN_BOARDING_S)


def departure(stop: Stop, arrival: float, passenger_cars: int, ai: bool) -> float:
    """When a train that arrived at ``arrival`` leaves (docs/activities.md §5)."""
    board = boarding_time(stop.platform.passengers, passenger_cars)
    b = stop.booked
    if b.depart is None:
        return arrival + max(board, float(stop.platform.min_wait))
    if ai and b.arrival == b.depart and abs(arrival - b.depart) > INCREDIBLE_S:
        return arrival + board
    return max(float(b.depart), arrival + board)


# -- the driver -----------------------------------------------------------------------------


class ServiceDriver:
    """Drives one service: waits for its start, runs to its stops within its authority."""

    def __init__(
        self,
        name: str,
        auto: AutoDriver,
        t0: float,
        start: float,
        stops: list[Stop],
        path_end: float,
        passenger_cars: int,
        ai: bool,
        vmax: float | None,
        final_efficiency: float | None,
        signalled: bool = False,
    ) -> None:
        self.name = name
        # With signals the automatic driver also stops for a red: standing there is not
        # arriving at the target (docs/activities.md §4.3).
        self.signalled = signalled
        self.auto = auto
        self.t0 = t0  # clock time of replay time 0
        self.start = start
        self.stops = stops
        self.next_stop = 0
        self.path_end = path_end
        self.passenger_cars = passenger_cars
        self.ai = ai
        self.turns = False  # its path part ends at a reversal: it leaves the track there
        self.hold_until = -math.inf  # clock time: stands until then (the change of ends at a reversal)
        self.vmax = vmax
        self.final_efficiency = final_efficiency
        self.authority = math.inf  # line distance the front may reach
        self.state = "waiting"  # waiting | ready | running | dwell | done | stuck
        self.dwell_until = 0.0
        self.blocked_by: set[str] = set()
        self.blocked_blocks: set[tuple[str, int]] = set()
        self.finished = False
        self.delayed = False
        self._set_speed_cap()

    def _set_speed_cap(self) -> None:
        if self.vmax is None:
            return
        eff = None
        if self.next_stop < len(self.stops):
            eff = self.stops[self.next_stop].booked.efficiency
        if eff is None:
            eff = self.final_efficiency
        self.auto.max_speed = self.vmax * (eff if eff and eff > 0 else 1.0)

    def target(self) -> tuple[float, str]:
        cands = [(self.path_end, "end")]
        if self.next_stop < len(self.stops):
            cands.append((self.stops[self.next_stop].stop_s, "stop"))
        cands.append((self.authority, "authority"))
        return min(cands)

    @property
    def leaves(self) -> bool:
        """Taken off the track at its end: AI trains, and path parts before a reversal."""
        return self.ai or self.turns

    @property
    def events(self) -> list:
        """The automatic driver's events (waiting points); the replay collects them."""
        return self.auto.events

    @property
    def on_track(self) -> bool:
        """Started and not taken off: an AI train leaves the world at the end of its path
        (docs/activities.md §4); the player's train stays."""
        return self.state in ("running", "dwell", "stuck") or (self.state == "done" and not self.leaves)

    def __call__(self, st: DriveState) -> Controls:
        now = self.t0 + st.time
        if self.state == "waiting" and now + 1e-9 >= self.start:
            self.state = "ready"  # the dispatcher puts it on the track when that is free
        if self.state in ("waiting", "ready", "done", "stuck", "not_started"):
            return Controls(0.0, 1.0, 0.0)
        if self.state == "dwell":
            if now + 1e-9 < self.dwell_until:
                return Controls(0.0, 1.0, 0.0)
            stop = self.stops[self.next_stop]
            stop.depart = now
            self.next_stop += 1
            self._set_speed_cap()
            self.state = "running"
        if now + 1e-9 < self.hold_until:
            return Controls(0.0, 1.0, 0.0)
        s, kind = self.target()
        self.auto.stop_at = s + AutoDriver.STOP_SHORT
        self.auto.finished = False
        c = self.auto(st)
        if (
            self.auto.finished and self.signalled and s - st.front >= AutoDriver.ARRIVED_WITHIN
        ):  # held at a signal short of the target
            self.auto.finished = False
        if self.auto.finished:
            if kind == "stop":
                stop = self.stops[self.next_stop]
                stop.arrival = now
                self.dwell_until = departure(stop, now, self.passenger_cars, self.ai)
                self.state = "dwell"
            elif kind == "end":
                self.state = "done"
                self.finished = True
        return c


# -- the replay -----------------------------------------------------------------------------


class ActivityPolicy(ReplayPolicy):
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
    def trains(self) -> list:
        return self.replay.trains

    @property
    def engine(self) -> Any:
        return self.replay.engine

    @property
    def bodies(self) -> Any:
        return self.replay.bodies

    @property
    def signals(self) -> Any:
        return self.replay.signals

    @property
    def train_start(self) -> np.ndarray:
        return self.replay.layout.train_start

    @property
    def train_end(self) -> np.ndarray:
        return self.replay.layout.train_end

    @property
    def time(self) -> float:
        return self.replay.time

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


class ActivityReplay:
    """A replay of an activity's trains with their service drivers: a
    :class:`~tdbtools.physics.replay.Replay` with an :class:`ActivityPolicy`. ``signals``:
    None or True (default) runs the route's signals when it has them, the interlocking
    being the movement authority (docs/activities.md §4.3); False, or a route without
    signals, keeps the trains apart by plain occupancy (§4.1)."""

    def __init__(
        self,
        plan: ActivityPlan,
        *,
        route: Route | None = None,
        stand_in: bool = False,
        step: float = 0.5,
        stuck_after: float = 1800.0,
        duration: float | None = None,
        trace_every: float = 2.0,
        signals: bool | None = None,
    ) -> None:
        self.plan = plan
        route = route if route is not None else load_route(plan.route_folder)
        self.t0 = float(min(t.start for t in plan.trains))
        last = max(t.start for t in plan.trains)
        act_end = plan.activity.header.start_time + plan.activity.header.duration
        dur = duration if duration is not None else max(act_end, last) - self.t0 + 4 * 3600.0
        # A path with reversals runs as one replay train per part (docs/activities.md §4.4).
        sdir = Path(plan.activity.path).resolve().parent
        parts: list[ServicePart] = []
        try:
            for pt in plan.trains:
                srv = pt.service
                parts.extend(
                    service_parts(
                        pt.name,
                        Path(srv.train_config + ".con"),
                        Path(srv.path_id + ".pat"),
                        route,
                        sdir,
                        stand_in,
                        functools.partial(fouling_length, route),
                    )
                )
        except SourceError:
            raise  # (located: it says where)
        except TdbToolsError as exc:
            raise ActivityError(str(exc)) from None
        specs = [sp.spec for sp in parts]
        given = {sp.spec.name: sp.plan.line for sp in parts if sp.plan is not None}
        sc = Scenario(
            Path(plan.route_folder),
            tuple(specs),
            step=step,
            duration=dur,
            stand_in=stand_in,
            source=str(Path(plan.activity.path).resolve()),
        )
        use = False if signals is False else None
        self.policy = ActivityPolicy(plan, route, self.t0, stuck_after, parts)
        try:
            self.replay = Replay(
                sc, route=route, trace_every=trace_every, signals=use, lines=given or None, policy=self.policy
            )
        except ReplayError as exc:
            raise ActivityError(str(exc)) from None

    # (the replay's and the policy's parts callers read)
    @property
    def scenario(self) -> Scenario:
        return self.replay.scenario

    @property
    def route(self) -> Route:
        return self.replay.route

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

    @property
    def events(self) -> list:
        return self.replay.events

    @property
    def trace_every(self) -> float:
        return self.replay.trace_every

    @property
    def drivers(self) -> list[ServiceDriver]:
        return self.policy.drivers

    @property
    def dispatcher(self) -> Dispatcher:
        return self.policy.dispatcher

    @property
    def parts(self) -> list[ServicePart]:
        return self.policy.parts

    @property
    def index(self) -> dict[str, int]:
        return self.policy.index

    @property
    def stuck(self) -> set[str]:
        return self.policy.stuck

    def step(self) -> None:
        self.replay.step()

    def run(self, progress: Callable[[float], None] | None = None) -> ActivityResult:
        return self._activity_result(self.replay.run(progress))

    def _activity_result(self, base: ReplayResult) -> ActivityResult:
        rows = []
        for k, t in enumerate(self.replay.trains):
            for s in self.policy.drivers[k].stops:
                b = s.booked
                rows.append(
                    {
                        "train": self.policy.part_of[t.spec.name].service,
                        "station": s.platform.station,
                        "platform": s.platform.name,
                        "sched_arr": b.arrival,
                        "sched_dep": b.depart,
                        "actual_arr": s.arrival,
                        "actual_dep": s.depart,
                        "arr_delay_s": None
                        if b.arrival is None or s.arrival is None
                        else s.arrival - b.arrival,
                        "dep_delay_s": None if b.depart is None or s.depart is None else s.depart - b.depart,
                    }
                )
        events = list(base.events)
        outcomes = service_outcomes(self)
        for name, o in outcomes.items():
            if not o.reached_end:
                events.append(
                    NotAtEnd(
                        time=self.replay.time,
                        clock=clock(self.t0 + self.replay.time),
                        train=name,
                        state=o.state,
                        message=f"never reached the end of its path ({o.state})",
                    )
                )
        summary = dict(base.summary)
        summary["activity"] = self.plan.activity.header.name
        summary["clock_start"] = clock(self.t0)
        summary["clock_start_s"] = self.t0  # a trace's time + this = seconds since midnight
        summary["clock_end"] = clock(self.t0 + self.replay.time)
        for k, t in enumerate(self.replay.trains):
            d = self.policy.drivers[k]
            st = summary["trains"][t.spec.name]
            st["start"] = clock(d.start)
            st["reached_end"] = d.finished
            st["stuck"] = t.spec.name in self.policy.stuck
            st["stops"] = sum(1 for s in d.stops if s.arrival is not None)
            st["booked_stops"] = len(d.stops)
        summary["deadlocks"] = sum(1 for e in events if isinstance(e, Deadlock))
        summary["collisions"] = sum(1 for e in events if isinstance(e, (Collision, SideCollision)))
        summary["derailed"] = sorted(t.spec.name for t in self.replay.trains if t.derailed)
        summary["stuck"] = sorted(self.policy.stuck)
        summary["services"] = {name: o.to_dict() for name, o in outcomes.items()}
        summary["not_at_end"] = sorted(name for name, o in outcomes.items() if not o.reached_end)
        summary["stops_missed"] = sorted(name for name, o in outcomes.items() if o.stops < o.booked_stops)
        for t in self.replay.trains:
            sp = self.policy.part_of[t.spec.name]
            st = summary["trains"][t.spec.name]
            st["service"], st["part"] = sp.service, sp.index + 1
            st["lead_car"] = t.consist.cars[0].file if t.consist.cars else ""
        clocked = {}
        for name, cols in base.traces.items():
            c = dict(cols)
            c["clock"] = np.asarray(c["time"], dtype=np.float64) + self.t0
            clocked[name] = c
        res = ReplayResult(base.scenario, clocked, base.car_traces, tuple(events), summary, base.wall_seconds)
        lines = {t.spec.name: t.line for t in self.replay.trains}
        stops = {t.spec.name: list(self.policy.drivers[k].stops) for k, t in enumerate(self.replay.trains)}
        return ActivityResult(res, tuple(rows), self.t0, lines, stops, dict(self.policy.on_off))


@dataclass(frozen=True, slots=True, eq=False)
class ActivityResult:
    """A replayed activity: the replay's traces, events and summary, and the timetable."""

    replay: ReplayResult
    timetable: tuple[dict, ...]
    t0: float  # clock time of replay time 0
    lines: dict = field(repr=False)  # train -> its TrackLine
    stops: dict = field(repr=False, default_factory=dict)  # train -> its Stops
    on_track: dict = field(repr=False, default_factory=dict)  # train -> (clock on, clock off)

    @property
    def failed(self) -> bool:
        """A problem: a derailment, collision, stuck train or deadlock, a service short of
        its path end (or never started), a booked stop not made (docs/activities.md §4.6)."""
        s = self.replay.summary
        return bool(
            s["derailed"]
            or s["collisions"]
            or s["stuck"]
            or s["deadlocks"]
            or s.get("not_at_end")
            or s.get("stops_missed")
        )

    def _facts(self) -> list[tuple[str, object]]:
        s = self.replay.summary
        return [
            ("activity", s.get("activity")),
            ("trains", list(s.get("trains", {}))[:8]),
            ("clock", f"{s.get('clock_start')}-{s.get('clock_end')}"),
            ("timetable_rows", len(self.timetable)),
            ("events", len(self.replay.events)),
            ("failed", self.failed),
        ]

    def __repr__(self) -> str:
        from .._display import short_repr

        return short_repr("ActivityResult", self._facts())

    def _repr_html_(self) -> str:
        from .._display import html_summary

        return html_summary(f"Activity {self.replay.summary.get('activity')}", self._facts())

    def timetable_csv(self) -> str:
        """The timetable as CSV; names from the activity are made inert for spreadsheets
        (``_outputs.spreadsheet_text``, docs/security.md §5)."""
        from .._outputs import spreadsheet_text as text

        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(TIMETABLE_COLUMNS)
        for r in self.timetable:
            w.writerow(
                [
                    text(str(r["train"])),
                    text(str(r["station"])),
                    text(str(r["platform"])),
                    clock(r["sched_arr"]),
                    clock(r["sched_dep"]),
                    clock(r["actual_arr"]),
                    clock(r["actual_dep"]),
                    "" if r["arr_delay_s"] is None else f"{r['arr_delay_s']:.0f}",
                    "" if r["dep_delay_s"] is None else f"{r['dep_delay_s']:.0f}",
                ]
            )
        return buf.getvalue()

    def write(self, out: str | Path) -> list[Path]:
        from .._fs import write_bytes_atomic

        folder = Path(out)
        files = self.replay.write(folder)
        p = folder / "timetable.csv"
        write_bytes_atomic(p, self.timetable_csv().encode())
        files.append(p)
        return files


def replay_activity(
    path: str | Path,
    *,
    route: Route | None = None,
    stand_in: bool = False,
    step: float = 0.5,
    duration: float | None = None,
    progress: Callable[[float], None] | None = None,
    signals: bool | None = None,
    skip_missing: bool = False,
) -> ActivityResult:
    """Replay an activity file to its end (see the module docstring): with the route's
    signals when it has them, ``signals=False``: on plain occupancy (docs/activities.md §4).
    ``skip_missing``: run without AI services or a traffic file that do not exist."""
    plan = plan_activity(path, skip_missing=skip_missing)
    return ActivityReplay(
        plan, route=route, stand_in=stand_in, step=step, duration=duration, signals=signals
    ).run(progress)


def summary_json(result: ActivityResult) -> str:
    return json.dumps(result.replay.summary, indent=2, ensure_ascii=False)


__all__ = [
    "ActivityError",
    "ActivityPlan",
    "ActivityPolicy",
    "ActivityReplay",
    "ActivityResult",
    "Dispatcher",
    "Platform",
    "PlannedTrain",
    "ServiceDriver",
    "Stop",
    "boarding_time",
    "clock",
    "departure",
    "place_stops",
    "plan_activity",
    "replay_activity",
    "route_platforms",
]
