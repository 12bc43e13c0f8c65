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
import io
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import TdbToolsError
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
from .driver import AutoDriver, Controls, DriveState
from .driver import Stop as DriverStop
from .events import (
    Arrived,
    Collision,
    Deadlock,
    NotAtEnd,
    Reversed,
    ServiceStarted,
    SetupWarning,
    SideCollision,
    StartDelayed,
    Stuck,
)
from .outcome import service_outcomes
from .replay import Replay, ReplayError, ReplayResult
from .reversal import REVERSAL_S
from .scenario import Scenario, TrainSpec
from .signalling import SignalDriver
from .wholepath import ServicePart, assign_stops, part_name, service_parts

#: Blocks are vector nodes cut into pieces of this length (metres of node offset), and junctions.
BLOCK_M = 250.0
#: Metres a train stops short of a block another train holds.
BLOCK_MARGIN_M = 20.0
#: A junction block covers the track either side of the switch point up to where its two
#: branches are this far apart (centre lines; cars are about 3 m wide), found per
#: junction by walking both branches; at least JUNCTION_MIN_M, at most JUNCTION_MAX_M.
FOUL_SEPARATION_M = 4.0
JUNCTION_MIN_M = 20.0
JUNCTION_MAX_M = 200.0
#: Metres of track reserved beyond the braking distance.
RESERVE_EXTRA_M = 400.0
#: Seconds between dispatcher runs.
DISPATCH_EVERY_S = 1.0
#: A cycle of waiting trains standing this long is reported as a deadlock (s).
DEADLOCK_AFTER_S = 60.0
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


class ActivityError(TdbToolsError):
    """An activity that cannot be replayed (missing service, path or consist)."""


def clock(t: float | None) -> str:
    """HH:MM:SS of seconds since midnight (empty for None)."""
    if t is None or not math.isfinite(t):
        return ""
    s = int(round(t)) % 86400
    return f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


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
        self.leaves = ai  # taken off the track at its end (AI trains, parts before a reversal)
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


# -- the dispatcher -------------------------------------------------------------------------


def fouling_length(route: Route, junction: int) -> float:
    """Metres from the switch point of ``junction`` along its branches to where they are
    FOUL_SEPARATION_M apart (the clearance point)."""
    from ..formats.tdb import JunctionNode
    from ..track.traveller import Traveller, TravellerError

    j = route.tdb.nodes[junction]
    if not isinstance(j, JunctionNode) or len(j.pins) < 3:
        return JUNCTION_MIN_M
    walkers = []
    for pin in j.pins[1:3]:
        node = route.tdb.nodes[pin.link]
        if node is None or not hasattr(node, "pins") or not node.pins:
            return JUNCTION_MIN_M
        at_start = node.pins[0].link == junction
        try:
            walkers.append(
                Traveller(
                    route, pin.link, 0.0 if at_start else route.node_length(pin.link), 1 if at_start else 0
                )
            )
        except TravellerError:
            return JUNCTION_MIN_M
    a, b = walkers
    d = 0.0
    step = 5.0
    while d < JUNCTION_MAX_M:
        la, lb = a.location, b.location
        if math.hypot(la.X - lb.X, la.Z - lb.Z) >= FOUL_SEPARATION_M:
            return max(d, JUNCTION_MIN_M)
        if a.move(step) > 0.01 or b.move(step) > 0.01:  # (move returns what it could not travel)
            return max(d + step, JUNCTION_MIN_M)  # a branch ends: a buffer stop inside the turnout
        d += step
    return JUNCTION_MAX_M


def block_name(b: tuple[str, int]) -> str:
    if b[0] == "j":
        return f"junction {b[1]}"
    node, piece = divmod(b[1], 100_000)
    return f"node {node} [{piece * BLOCK_M:.0f}-{(piece + 1) * BLOCK_M:.0f} m]"


class Dispatcher:
    """Plain occupancy: blocks are vector nodes and junctions (module docstring)."""

    def __init__(self, replay: ActivityReplay) -> None:
        self.rp = replay
        self.holder: dict[tuple[str, int], str] = {}
        self.foul: dict[int, float] = {}
        self.reserved: dict[tuple[str, int], str] = {}  # last run's reservations
        self.cycle_since: dict[frozenset, float] = {}
        self.reported: set[frozenset] = set()

    def _blocks(self, t, lo: float, hi: float) -> list[tuple[tuple[str, int], float]]:  # noqa: ANN001
        """Blocks of a train's line between two line distances, with the line distance
        where each begins (in line order)."""
        ln = t.line
        out: list[tuple[tuple[str, int], float]] = []
        i0 = int(np.searchsorted(ln.seg_s1, lo, side="right"))
        i1 = int(np.searchsorted(ln.seg_s0, hi, side="right"))
        for i in range(max(i0, 0), min(i1, len(ln.seg_s0))):
            s0, s1 = float(ln.seg_s0[i]), float(ln.seg_s1[i])
            a, b = max(lo, s0), min(hi, s1)
            if b < a:
                continue
            off0 = float(ln.seg_off0[i])
            sg = 1.0 if ln.seg_dir[i] == 1 else -1.0
            oa, ob = off0 + sg * (a - s0), off0 + sg * (b - s0)
            node = int(ln.seg_node[i])
            for piece in range(int(min(oa, ob) // BLOCK_M), int(max(oa, ob) // BLOCK_M) + 1):
                # where the line enters this piece: its low end going forward, else its high end
                edge = piece * BLOCK_M if sg > 0 else (piece + 1) * BLOCK_M
                enter = min(max(s0 + sg * (edge - off0), s0), s1)
                out.append(((("n", node * 100_000 + piece)), enter))
        j0 = int(np.searchsorted(ln.junction_s, lo - JUNCTION_MAX_M, side="left"))
        j1 = int(np.searchsorted(ln.junction_s, hi + JUNCTION_MAX_M, side="right"))
        for j in range(j0, j1):
            jn = int(ln.junction_node[j])
            f = self.foul.get(jn)
            if f is None:
                f = self.foul[jn] = fouling_length(self.rp.route, jn)
            js = float(ln.junction_s[j])
            if js + f >= lo and js - f <= hi:
                out.append(((("j", jn)), js - f))
        out.sort(key=lambda b: b[1])
        return out

    def run(self, now: float) -> None:
        if self.rp.signals is not None:
            self._run_signalled()
            return
        rp = self.rp
        x, v = rp.engine.x, rp.engine.v
        holder: dict[tuple[str, int], str] = {}
        occupied: dict[str, list] = {}
        # 1. occupied blocks (every train, started or not: it is on the track)
        for k, t in enumerate(rp.trains):
            front = float(x[rp.train_start[k]])
            rear = float(x[rp.train_end[k]] - rp.bodies.length[rp.train_end[k]])
            occ = self._blocks(t, rear, front)
            occupied[t.spec.name] = occ
            if rp.drivers[k].on_track:
                for b, _s in occ:
                    holder.setdefault(b, t.spec.name)
        # trains due to start go on the track where it is free, in order of start time
        for k in sorted(range(len(rp.trains)), key=lambda k: (rp.drivers[k].start, k)):
            d = rp.drivers[k]
            if d.state != "ready":
                continue
            name = rp.trains[k].spec.name
            taken = {holder[b] for b, _ in occupied[name] if b in holder and holder[b] != name}
            taken |= {
                self.reserved[b]
                for b, _ in occupied[name]
                if self.reserved.get(b, name) != name and rp.drivers[rp.index[self.reserved[b]]].on_track
            }
            if taken:
                d.blocked_by = taken
                if not d.delayed:
                    d.delayed = True
                    rp._event(
                        StartDelayed(
                            time=rp.time,
                            clock=clock(rp.t0 + rp.time),
                            train=name,
                            waiting_for=tuple(sorted(taken)),
                            message=f"its start is occupied by {', '.join(sorted(taken))}",
                        )
                    )
                continue
            d.state = "running"
            rp.on_off[name] = (rp.t0 + rp.time, math.inf)
            rp._event(ServiceStarted(time=rp.time, clock=clock(rp.t0 + rp.time), train=name))
            for b, _s in occupied[name]:
                holder[b] = name
        # 2. reservations ahead, in order of the trains' start times (first come first
        #    served); a block reserved last time stays with its train while it wants it,
        #    so nobody's authority shrinks under it
        prev = self.reserved
        running = {t.spec.name for k, t in enumerate(rp.trains) if rp.drivers[k].state == "running"}
        reserved: dict[tuple[str, int], str] = {}
        order = sorted(range(len(rp.trains)), key=lambda k: (rp.drivers[k].start, k))
        for k in order:
            t = rp.trains[k]
            d = rp.drivers[k]
            name = t.spec.name
            if d.state != "running" or t.derailed:
                continue
            d.blocked_by = set()
            d.blocked_blocks = set()
            front = float(x[rp.train_start[k]])
            speed = abs(float(v[rp.train_start[k]]))
            reach = speed * speed / (2.0 * d.auto.decel) + RESERVE_EXTRA_M + 2.0 * speed * DISPATCH_EVERY_S
            hi = min(front + reach, float(t.line.path_length))
            # Plain track is taken whole, up to the next junction area: on a single line
            # that is the way to the next loop, so trains cross there, never head-on.
            ln = t.line
            j = int(np.searchsorted(ln.junction_s, hi, side="left"))
            if j < len(ln.junction_s):
                jn = int(ln.junction_node[j])
                f = self.foul.get(jn)
                if f is None:
                    f = self.foul[jn] = fouling_length(rp.route, jn)
                hi = min(max(hi, float(ln.junction_s[j]) - f), float(ln.path_length))
            else:
                hi = float(ln.path_length)
            own = {b for b, _ in occupied[name]}
            authority = math.inf
            claims: list[tuple[tuple[str, int], float]] = []
            for b, s0 in self._blocks(t, front, hi):
                if b in own:
                    # shared with a train in the same block: stop behind its rear
                    other = holder.get(b)
                    if other is not None and other != name:
                        lim = self._behind(k, b, other, front)
                        if lim is not None:
                            authority = lim
                            d.blocked_by.add(other)
                            d.blocked_blocks.add(b)
                            break
                    continue
                other = holder.get(b)
                if other is None and prev.get(b, name) != name and prev[b] in running:
                    other = prev[b]
                if other is not None and other != name:
                    authority = s0 - BLOCK_MARGIN_M
                    d.blocked_by.add(other)
                    d.blocked_blocks.add(b)
                    # Do not wait inside a junction area: give back the junctions (and the
                    # short links between them) claimed just before, so a train waiting
                    # for a line ahead does not block the station throat behind it.
                    while claims and (claims[-1][0][0] == "j" or self._short(claims[-1][0])):
                        cb, cs = claims.pop()
                        del holder[cb]
                        del reserved[cb]
                        authority = cs - BLOCK_MARGIN_M
                    break
                holder[b] = name
                reserved[b] = name
                claims.append((b, s0))
            d.authority = authority
        self.holder = holder
        self.reserved = reserved
        self._deadlocks(now)

    def _run_signalled(self) -> None:
        """With the route's signals the interlocking is the authority (docs/activities.md
        §4.3): trains due to start enter where the interlocking has their track free, in
        order of start time; their movement authority is the signals'."""
        rp = self.rp
        assert rp.signals is not None
        ilk = rp.signals.ilk
        x = rp.engine.x
        for k in sorted(range(len(rp.trains)), key=lambda k: (rp.drivers[k].start, k)):
            d = rp.drivers[k]
            if d.state == "running":
                d.authority = math.inf
                d.blocked_by = ilk.waiting_for(k)  # named when it is stuck
            if d.state != "ready":
                continue
            name = rp.trains[k].spec.name
            front = float(x[rp.train_start[k]])
            taken = ilk.can_enter(k, front)
            if taken:
                d.blocked_by = taken
                if not d.delayed:
                    d.delayed = True
                    rp._event(
                        StartDelayed(
                            time=rp.time,
                            clock=clock(rp.t0 + rp.time),
                            train=name,
                            waiting_for=tuple(sorted(taken)),
                            message=f"its start is occupied by {', '.join(sorted(taken))}",
                        )
                    )
                continue
            d.blocked_by = set()
            d.state = "running"
            d.authority = math.inf
            ilk.enter(k, front)
            rp.on_off[name] = (rp.t0 + rp.time, math.inf)
            rp._event(ServiceStarted(time=rp.time, clock=clock(rp.t0 + rp.time), train=name))

    def _short(self, b: tuple[str, int]) -> bool:
        """A vector piece of a node too short to wait on (a link inside a junction area)."""
        return b[0] == "n" and self.rp.route.node_length(b[1] // 100_000) < 2 * JUNCTION_MAX_M

    def _behind(self, k: int, block: tuple[str, int], other: str, front: float) -> float | None:
        """Where train ``k`` must stop for ``other`` in a vector node both occupy, or None
        when ``other`` is not ahead."""
        if block[0] != "n":
            return None
        node_id = block[1] // 100_000
        rp = self.rp
        t = rp.trains[k]
        ko = rp.index[other]
        o = rp.trains[ko]
        x = rp.engine.x
        ofront = float(x[rp.train_start[ko]])
        orear = float(x[rp.train_end[ko]] - rp.bodies.length[rp.train_end[ko]])
        best = None
        for node, a, b in o.line.occupancy(orear, ofront):
            if node != node_id:
                continue
            for off in (a, b):
                for s in t.line.locate(node, off, tol=1.0):
                    if s > front - 1.0 and (best is None or s < best):
                        best = float(s)
        return None if best is None else best - BLOCK_MARGIN_M

    def _deadlocks(self, now: float) -> None:
        rp = self.rp
        v = rp.engine.v
        waiting = {}
        for k, t in enumerate(rp.trains):
            d = rp.drivers[k]
            if (
                d.state == "running"
                and d.blocked_by
                and abs(float(v[rp.train_start[k]])) < 0.05
                and d.authority - float(rp.engine.x[rp.train_start[k]]) < BLOCK_MARGIN_M + 5.0
            ):
                waiting[t.spec.name] = d.blocked_by
        # cycles in the wait-for graph
        seen_cycles = set()
        for start in waiting:
            path, cur = [], start
            while cur in waiting and cur not in path:
                path.append(cur)
                nxt = sorted(waiting[cur])
                cur = nxt[0]
            if cur in path:
                cyc = frozenset(path[path.index(cur) :])
                seen_cycles.add(cyc)
        for cyc in list(self.cycle_since):
            if cyc not in seen_cycles:
                del self.cycle_since[cyc]
        for cyc in seen_cycles:
            since = self.cycle_since.setdefault(cyc, now)
            if now - since >= DEADLOCK_AFTER_S and cyc not in self.reported:
                self.reported.add(cyc)
                trains = sorted(cyc)
                blocks = sorted(
                    {block_name(b) for n in trains for b in rp.drivers[rp.index[n]].blocked_blocks}
                )
                rp._event(
                    Deadlock(
                        time=rp.time,
                        clock=clock(rp.t0 + rp.time),
                        trains=tuple(trains),
                        sections=tuple(blocks),
                        message=f"{', '.join(trains)} wait for each other at {', '.join(blocks)}",
                    )
                )
                for n in trains:
                    k = rp.index[n]
                    rp.drivers[k].state = "stuck"
                    rp.trains[k].done_at = rp.time
                    rp.stuck.add(n)


# -- the replay -----------------------------------------------------------------------------


class ActivityReplay(Replay):
    """A :class:`Replay` of an activity's trains, with their service drivers. ``signals``:
    None or True (default) runs the route's signals when it has them, the interlocking
    being the movement authority (docs/activities.md §4.3); False, or a route without
    signals, keeps the trains apart by plain occupancy (§4.1)."""

    #: Trains enter the interlocking at their start time, not at time 0 (signalling.py).
    SIGNALS_ON_TRACK_AT_START = False
    #: With signals: Auto Node reserves this far ahead and on to the next junction, as the
    #: dispatcher does (§4.1), not the whole way to a signal tens of kilometres on.
    SIGNALS_AHEAD_M = RESERVE_EXTRA_M + 2000.0

    def signal_clearance(self, junction: int) -> float:
        """Metres to a junction's clearance point (the interlocking stops trains outside it)."""
        return fouling_length(self.route, junction)

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
        self.parts: list[ServicePart] = []
        try:
            for pt in plan.trains:
                srv = pt.service
                self.parts.extend(
                    service_parts(
                        pt.name,
                        Path(srv.train_config + ".con"),
                        Path(srv.path_id + ".pat"),
                        route,
                        sdir,
                        stand_in,
                        lambda j: fouling_length(route, j),
                    )
                )
        except TdbToolsError as exc:
            raise ActivityError(str(exc)) from None
        specs = [sp.spec for sp in self.parts]
        given = {sp.spec.name: sp.plan.line for sp in self.parts if sp.plan is not None}
        sc = Scenario(
            Path(plan.route_folder),
            tuple(specs),
            step=step,
            duration=dur,
            stand_in=stand_in,
            source=str(Path(plan.activity.path).resolve()),
        )
        try:
            super().__init__(
                sc,
                route=route,
                trace_every=trace_every,
                signals=False if signals is False else None,
                lines=given or None,
            )
        except ReplayError as exc:
            raise ActivityError(str(exc)) from None
        if self.signals is not None:
            # Trains wait at loops for trains coming the other way (docs/signals.md §4.9).
            self.signals.ilk.avoid_deadlocks = True
        self.index = {t.spec.name: k for k, t in enumerate(self.trains)}
        self.stuck: set[str] = set()
        self.on_off: dict[str, tuple[float, float]] = {}
        self.stuck_after = stuck_after
        plats = route_platforms(self.route)
        by_name = {pt.name: pt for pt in plan.trains}
        self.drivers: list[ServiceDriver] = []
        for w in plan.warnings:
            self._event(SetupWarning(time=0.0, message=w))
        self.part_of = {sp.spec.name: sp for sp in self.parts}
        stops_of = self._whole_path_stops(plan, plats)
        for t in self.trains:
            sp = self.part_of[t.spec.name]
            pt = by_name[sp.service]
            stops = stops_of[t.spec.name]
            auto = t.driver
            if isinstance(auto, SignalDriver):
                # Its constraints obey the signals; the ServiceDriver drives the AutoDriver inside.
                auto = auto.inner
            assert isinstance(auto, AutoDriver)
            vmax = t.consist.max_velocity if t.consist.max_velocity else None
            eng = t.model.max_velocity[t.model.is_engine]
            if vmax is None and len(eng) and np.isfinite(eng).any():
                vmax = float(np.nanmin(eng))
            end = (
                sp.plan.end_s
                if sp.plan is not None
                else (t.end_s if t.end_s is not None else t.line.path_length)
            )
            d = ServiceDriver(
                t.spec.name,
                auto,
                self.t0,
                float(pt.start) if sp.index == 0 else math.inf,  # later parts: at the reversal
                stops,
                float(end),
                int(t.model.is_passenger.sum()),
                not pt.player,
                vmax,
                pt.service.efficiency,
                self.signals is not None,
            )
            d.leaves = d.ai or not sp.last  # a part that ends at a reversal leaves the track
            for s_at, wait in sp.waits:
                if s_at > t.front0 + AutoDriver.ARRIVED_WITHIN:
                    auto.stops.append(DriverStop(s_at, wait, "waiting point"))
            auto.stops.sort(key=lambda p: p.s)
            t.driver = d
            self.drivers.append(d)
        self.dispatcher = Dispatcher(self)
        self._next_dispatch = 0.0
        self._still_since = [0.0] * len(self.trains)

    def _whole_path_stops(self, plan: ActivityPlan, plats: dict[int, Platform]) -> dict[str, list[Stop]]:
        """Every replay train's station stops: each service's booked stops matched over
        its parts (docs/activities.md §5), moved out of junction clearances except at the
        train's origin."""
        out: dict[str, list[Stop]] = {}
        for pt in plan.trains:
            sps = [sp for sp in self.parts if sp.service == pt.name]
            ts = [self.trains[self.index[sp.spec.name]] for sp in sps]
            spans = [
                (
                    t.line,
                    t.front0,
                    sp.plan.end_s if sp.plan is not None else float(t.line.path_length),
                )
                for sp, t in zip(sps, ts)
            ]
            per, warns, origin = assign_stops(spans, ts[0].length, pt.stops, plats, place_stops, Stop)
            for w in warns:
                self._event(SetupWarning(time=0.0, train=pt.name, message=w))
            for k, (sp, t) in enumerate(zip(sps, ts)):
                for n, st in enumerate(per[k]):
                    if not (origin[k] and n == 0):
                        st.stop_s = self._clear_of_junctions(t.line, st.stop_s)
                out[sp.spec.name] = per[k]
        return out

    def _clear_of_junctions(self, line, s: float) -> float:  # noqa: ANN001
        """A station stop moved back out of the clearance zone of a junction just ahead
        (docs/activities.md §5): a train standing there would foul the other branch."""
        js, jn = line.junction_s, line.junction_node
        j = int(np.searchsorted(js, s - JUNCTION_MAX_M, side="left"))
        while j < len(js) and float(js[j]) <= s + JUNCTION_MAX_M:
            a = float(js[j])
            if a >= s - 1e-6:
                f = self.signal_clearance(int(jn[j]))
                if a - f < s:
                    s = a - f - 1.0
            j += 1
        return s

    def step(self) -> None:
        if self.time + 1e-9 >= self._next_dispatch:
            self._next_dispatch += DISPATCH_EVERY_S
            self.dispatcher.run(self.time)
            self._watch()
        super().step()
        for k, d in enumerate(self.drivers):
            t = self.trains[k]
            if d.finished and t.done_at is None:
                t.done_at = self.time
                if d.leaves and self.signals is not None:
                    self.signals.ilk.leave(k)  # off the track: its sections are free again
                if d.leaves:
                    self.on_off[t.spec.name] = (
                        self.on_off.get(t.spec.name, (self.t0, 0.0))[0],
                        self.t0 + self.time,
                    )
                sp = self.part_of[t.spec.name]
                if not sp.last:
                    self._reverse(k, sp)
                    continue
                self._event(Arrived(time=self.time, clock=clock(self.t0 + self.time), train=t.spec.name))

    def _reverse(self, k: int, sp: ServicePart) -> None:
        """Part ``k`` stands at its reversal: the next part takes over there after the
        change of ends (docs/activities.md §4.4)."""
        nxt = self.index[part_name(sp.service, sp.index + 1)]
        # It takes over the track at once (nobody slips in while the ends are changed)
        # and stands REVERSAL_S before it moves.
        self.drivers[nxt].start = self.t0 + self.time
        self.drivers[nxt].hold_until = self.t0 + self.time + REVERSAL_S
        t = self.trains[k]
        self._event(
            Reversed(
                time=self.time,
                clock=clock(self.t0 + self.time),
                train=sp.service,
                part=sp.index + 1,
                at=round(float(self.engine.x[self.train_start[k]]), 3),
                lead=str(self.trains[nxt].consist.cars[0].file) if self.trains[nxt].consist.cars else "",
                message=f"stopped {t.length:.0f} m train to reverse; part {sp.index + 2} leads with the former rear car",
            )
        )

    def engine_line_key(self, spec: TrainSpec, key: object) -> object:
        # Services on one path run at different times: each has its own engine line
        # (a train not yet started, or taken off, must not be met there).
        return (key, spec.name)

    def on_track(self) -> np.ndarray:
        return np.array([d.on_track for d in self.drivers], dtype=bool)

    def _watch(self) -> None:
        """Trains that stand waiting for track far too long are stuck."""
        v = self.engine.v
        for k, d in enumerate(self.drivers):
            t = self.trains[k]
            if t.done_at is not None:
                continue
            moving = abs(float(v[self.train_start[k]])) > 0.05
            # Waiting only for trains that will never move again (stuck, or the player's
            # train at the end of its path) is hopeless at once.
            hopeless = bool(d.blocked_by) and all(
                n in self.stuck or self.drivers[self.index[n]].state == "done" for n in d.blocked_by
            )
            if moving or d.state not in ("running", "ready"):
                self._still_since[k] = self.time
            elif self.time - self._still_since[k] >= (DEADLOCK_AFTER_S if hopeless else self.stuck_after):
                self.stuck.add(t.spec.name)
                d.state = "stuck" if d.state == "running" else "not_started"
                t.done_at = self.time
                self._event(
                    Stuck(
                        time=self.time,
                        clock=clock(self.t0 + self.time),
                        train=t.spec.name,
                        waiting_for=tuple(sorted(d.blocked_by)),
                        message=f"stood {self.time - self._still_since[k]:.0f} s waiting for track held by "
                        f"{', '.join(sorted(d.blocked_by)) or 'nobody'}"
                        + (", which will not move again" if hopeless else ""),
                    )
                )

    def run(self, progress: Callable[[float], None] | None = None) -> ActivityResult:  # type: ignore[override]
        base = super().run(progress)
        return self._activity_result(base)

    def _activity_result(self, base: ReplayResult) -> ActivityResult:
        rows = []
        for k, t in enumerate(self.trains):
            for s in self.drivers[k].stops:
                b = s.booked
                rows.append(
                    {
                        "train": self.part_of[t.spec.name].service,
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
                        time=self.time,
                        clock=clock(self.t0 + self.time),
                        train=name,
                        state=o.state,
                        message=f"never reached the end of its path ({o.state})",
                    )
                )
        summary = dict(base.summary)
        summary["activity"] = self.plan.activity.header.name
        summary["clock_start"] = clock(self.t0)
        summary["clock_start_s"] = self.t0  # a trace's time + this = seconds since midnight
        summary["clock_end"] = clock(self.t0 + self.time)
        for k, t in enumerate(self.trains):
            d = self.drivers[k]
            st = summary["trains"][t.spec.name]
            st["start"] = clock(d.start)
            st["reached_end"] = d.finished
            st["stuck"] = t.spec.name in self.stuck
            st["stops"] = sum(1 for s in d.stops if s.arrival is not None)
            st["booked_stops"] = len(d.stops)
        summary["deadlocks"] = sum(1 for e in events if isinstance(e, Deadlock))
        summary["collisions"] = sum(1 for e in events if isinstance(e, (Collision, SideCollision)))
        summary["derailed"] = sorted(t.spec.name for t in self.trains if t.derailed)
        summary["stuck"] = sorted(self.stuck)
        summary["services"] = {name: o.to_dict() for name, o in outcomes.items()}
        summary["not_at_end"] = sorted(name for name, o in outcomes.items() if not o.reached_end)
        summary["stops_missed"] = sorted(name for name, o in outcomes.items() if o.stops < o.booked_stops)
        for t in self.trains:
            sp = self.part_of[t.spec.name]
            st = summary["trains"][t.spec.name]
            st["service"], st["part"] = sp.service, sp.index + 1
            st["lead_car"] = t.consist.cars[0].file if t.consist.cars else ""
        clocked = {}
        for name, cols in base.traces.items():
            c = dict(cols)
            c["clock"] = np.asarray(c["time"], dtype=np.float64) + self.t0
            clocked[name] = c
        res = ReplayResult(base.scenario, clocked, base.car_traces, tuple(events), summary, base.wall_seconds)
        lines = {t.spec.name: t.line for t in self.trains}
        stops = {t.spec.name: list(self.drivers[k].stops) for k, t in enumerate(self.trains)}
        return ActivityResult(res, tuple(rows), self.t0, lines, stops, dict(self.on_off))


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

    def timetable_csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(TIMETABLE_COLUMNS)
        for r in self.timetable:
            w.writerow(
                [
                    r["train"],
                    r["station"],
                    r["platform"],
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
