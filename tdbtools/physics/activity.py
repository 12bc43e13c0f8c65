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

import dataclasses
import difflib
import functools
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..errors import SourceError, TdbToolsError
from ..formats.activity import (
    ServiceFile,
    TrafficFile,
    find_activity_file,
    read_activity,
    read_service,
    read_traffic,
)
from ..formats.route import Route, load_route
from ..stf import resolve_case_insensitive
from .activity_plan import ActivityError, ActivityPlan, PlannedTrain
from .activity_policy import ActivityPolicy, ReplayView
from .activity_result import TIMETABLE_COLUMNS, ActivityResult, summary_json
from .activity_stops import Platform, Stop, boarding_time, departure, place_stops, route_platforms
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
from .events import Collision, Deadlock, NotAtEnd, SideCollision
from .outcome import service_outcomes
from .replay import Replay, ReplayError, ReplayResult
from .scenario import Scenario
from .servicedriver import ServiceDriver
from .wholepath import ServicePart, service_parts

#: Boarding: 10 s per waiting passenger per passenger car, at least 20 s (docs §5).


#: At most this many services in one activity (each is a train with its own line).
MAX_TRAINS = 500


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


class ActivityReplay(ReplayView):
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
        physics: str | None = None,
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
            physics=physics,
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
    physics: str | None = None,
) -> ActivityResult:
    """Replay an activity file to its end (see the module docstring): with the route's
    signals when it has them, ``signals=False``: on plain occupancy (docs/activities.md §4).
    ``skip_missing``: run without AI services or a traffic file that do not exist.
    ``physics``: "engineering" or "openrails" (None: by the stock, Scenario.profile)."""
    plan = plan_activity(path, skip_missing=skip_missing)
    return ActivityReplay(
        plan, route=route, stand_in=stand_in, step=step, duration=duration, signals=signals, physics=physics
    ).run(progress)


__all__ = [
    "BLOCK_MARGIN_M",
    "FOUL_SEPARATION_M",
    "MAX_TRAINS",
    "TIMETABLE_COLUMNS",
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
    "fouling_length",
    "place_stops",
    "plan_activity",
    "replay_activity",
    "route_platforms",
    "summary_json",
]
