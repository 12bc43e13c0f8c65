"""Replaying consists over an imported route.

Each train gets a :class:`~tdbtools.physics.trackline.TrackLine` (its path, then the
track beyond it), its cars a :class:`~tdbtools.physics.forces.CarModel`. Every step:

1. the drivers set throttle and brakes;
2. per car (vectorised over all cars of all trains): traction from the effort–speed
   curve or MaxForce with the power limit, gravity from the elevations under the two
   bogies, Davis resistance, curve resistance (800/R equivalent grade), brakes;
3. the 1-D engine moves the cars, with collisions and coupler snatches between cars
   of one line resolved by momentum transfer at their exact times (docs/physics.md §1);
4. bogies move as measures along the line: running off a track end or a switch
   thrown under a car is a derailment; every ``collision_check_interval`` seconds the
   trains' track occupancy and nearby cars on other lines are checked (docs/physics.md §5).

Trains given the same path share one line, so they meet in the 1-D engine (a shunt
into a standing train conserves momentum exactly). Scheme: forces are evaluated at the
start of a step and held over it; motion within the step is exact constant-acceleration
kinematics between interaction events (first order in the step for speed-dependent
forces; see the convergence test).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import itertools
import json
import operator
import time as _time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import Diagnostics, RouteError, TdbToolsError
from ..formats.consist import Consist, read_consist, resolve_stock
from ..formats.route import Route, load_route
from ..formats.stock import Stock
from ..signals.runtime import CREEP
from ..track.geometry import normalize_tile
from ..track.paths import resolve_path
from ..track.traveller import Switches
from . import forces
from .driver import AutoDriver, Controls, DriverBatch, DriveState, ScheduleDriver, Stop
from .engine import Bodies, Engine, LazyKernel, compiled_available
from .events import (
    CAR_EVENTS,
    SAFETY_EVENTS,
    Arrived,
    CarEvent,
    EndOfLine,
    EventLocation,
    ReplayEvent,
    StandIn,
    SwitchThrow,
    TrainStopped,
)
from .reversal import reverse_consist
from .safety import (
    DEFAULT_CLEARANCE_M,
    BogieSet,
    Occupancy,
    SafetyEvent,
    TrainPosition,
    box_pairs,
    chords_within,
    throw_switch,
)
from .scenario import Scenario, TrainSpec, read_scenario, resolve_file
from .signalling import DepartDriver, ReplaySignals, SignalDriver, signals_for, wrap_driver
from .trackline import TrackLine

TRACE_COLUMNS = (
    "time",
    "distance",
    "speed",
    "acceleration",
    "throttle",
    "brake",
    "node",
    "offset",
    "tile_x",
    "tile_z",
    "x",
    "y",
    "z",
    "grade_permille",
)
CAR_COLUMNS = ("time", "car", "front", "speed", "gap", "force")

#: The units of the numbers in events.json (written with the events).
EVENT_UNITS = {
    "time": "s",
    "relative_speed": "m/s",
    "impulse": "N·s",
    "energy_lost": "J",
    "distance": "m",
    "speed": "m/s",
    "closing_speed": "m/s",
    "location.x/y/z": "m in the tile (y: height)",
    "cars": "[train, car index from the front]",
}


class ReplayError(TdbToolsError):
    """A replay that cannot start (no consist, no path, a train that does not fit)."""


@dataclass(slots=True)
class _Train:
    spec: TrainSpec
    consist: Consist
    model: forces.CarModel
    line: TrackLine
    line_id: int
    cars: slice  # this train's rows in the engine arrays
    driver: Callable[[DriveState], Controls]
    bogies: BogieSet
    front0: float
    length: float
    end_s: float | None  # where the path ends on the line (auto driver stops there)
    controls: Controls = field(default_factory=Controls)
    car_rows: list = field(default_factory=list)
    traction_j: float = 0.0
    braking_j: float = 0.0
    max_speed: float = 0.0
    done_at: float | None = None
    derailed: bool = False
    stopped_for: float = 0.0
    warnings: list = field(default_factory=list)
    category: str = "passenger"
    waits: list = field(default_factory=list)  # (line distance, seconds): waiting points
    allowance: dict | None = None  # what the running-time allowance did

    def __setattr__(self, name: str, value: object) -> None:
        if name in _WATCHED:
            _TRAIN_FLAGS[0] += 1
        object.__setattr__(self, name, value)


#: Counts the settings of any train's ``driver``, ``derailed`` or ``done_at`` (of any
#: replay): the batch path re-reads those of all trains only when it changed
#: (docs/running-time.md §2.1).
_TRAIN_FLAGS = [0]
_WATCHED = frozenset({"driver", "derailed", "done_at"})


@dataclass(frozen=True, slots=True, eq=False)
class _ConsistStock:
    """A consist as every train that uses it gets it (read once per replay)."""

    consist: Consist
    stocks: tuple[Stock, ...]
    flipped: tuple[bool, ...]
    model: forces.CarModel
    slack: np.ndarray  # coupler free play per car (m)
    warnings: tuple[str, ...]  # stand-in substitutions


@dataclass(frozen=True, slots=True, eq=False)
class _Placement:
    """A train placed on its engine line, before the engine's arrays are built."""

    line_id: int
    front0: float  # line distance of its front at the start
    spec: TrainSpec
    stock: _ConsistStock
    line: TrackLine
    end_s: float | None


@dataclass(frozen=True, slots=True, eq=False)
class _TraceRow:
    """One trace instant of every train (arrays indexed by train)."""

    time: float
    distance: np.ndarray  # front's distance from its start
    speed: np.ndarray
    acceleration: np.ndarray  # mean since the previous row
    throttle: np.ndarray
    brake: np.ndarray
    s_front: np.ndarray  # front's line distance, clipped onto the line

    PER_TRAIN = ("distance", "speed", "acceleration", "throttle", "brake", "s_front")


@dataclass(frozen=True, slots=True, eq=False)
class ReplayResult:
    """What a replay produced: per-train traces (numpy columns), per-car traces
    (optional), events and a summary per train."""

    scenario: str
    traces: dict[str, dict[str, np.ndarray]]
    car_traces: dict[str, dict[str, np.ndarray]]
    events: tuple[ReplayEvent, ...]
    summary: dict
    wall_seconds: float

    def write(self, out: str | Path) -> list[Path]:
        """Write ``<train>.csv`` (and ``<train>_cars.csv``), ``events.json`` and
        ``summary.json`` into ``out``, each file atomically. events.json is ``{"units":
        EVENT_UNITS, "events": [...]}``."""
        from .._fs import write_bytes_atomic

        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for name, cols in self.traces.items():
            p = folder / f"{safe_name(name)}.csv"
            write_bytes_atomic(p, _csv(cols, TRACE_COLUMNS).encode())
            written.append(p)
        for name, cols in self.car_traces.items():
            p = folder / f"{safe_name(name)}_cars.csv"
            write_bytes_atomic(p, _csv(cols, CAR_COLUMNS).encode())
            written.append(p)
        events = {"units": EVENT_UNITS, "events": [e.to_dict() for e in self.events]}
        for fname, data in (("events.json", events), ("summary.json", self.summary)):
            p = folder / fname
            write_bytes_atomic(p, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())
            written.append(p)
        return written


def safe_name(name: str) -> str:
    """A train name made safe for a file name."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _csv(cols: dict[str, np.ndarray], order: tuple[str, ...]) -> str:
    keys = [k for k in order if k in cols]
    lines = [",".join(keys)]
    arrays = [cols[k] for k in keys]
    for row in zip(*arrays):
        lines.append(
            ",".join(
                f"{v:.6g}" if isinstance(v, float) else str(v)
                for v in (x.item() if hasattr(x, "item") else x for x in row)
            )
        )
    return "\n".join(lines) + "\n"


# -- setting up -----------------------------------------------------------------------------


def _consist(spec: TrainSpec, route: Route, scenario_dir: Path) -> Consist:
    root = Path(route.install_root)
    # Routes ship their own consists in ROUTE/Consists (any case), as Open Rails reads them.
    folders = (scenario_dir, root / "TRAINS" / "CONSISTS", Path(route.folder) / "CONSISTS", root)
    found = resolve_file(spec.consist, *folders, suffix=".con")
    if found is None:
        raise ReplayError(
            f"train {spec.name!r}: consist {str(spec.consist)!r} not found (looked in "
            + ", ".join(map(str, folders[:3]))
            + ")"
        )
    return read_consist(found)


def _stock_root(consist: Consist, route: Route) -> Path:
    """The install whose TRAINS/TRAINSET holds the consist's stock: the one the .con file
    is in (…/TRAINS/CONSISTS/x.con), else the route's."""
    p = Path(consist.path).resolve()
    if p.parent.name.lower() == "consists" and p.parent.parent.name.lower() == "trains":
        return p.parent.parent.parent
    return Path(route.install_root)


def _line_for(
    spec: TrainSpec, route: Route, scenario_dir: Path, cache: dict
) -> tuple[TrackLine, float | None, tuple]:
    if spec.path is not None:
        pat = resolve_file(
            spec.path, scenario_dir, Path(route.folder) / "PATHS", Path(route.folder), suffix=".pat"
        )
        if pat is None:
            raise ReplayError(f"train {spec.name!r}: path {str(spec.path)!r} not found")
        key = ("path", str(pat), spec.beyond_path)
        if key not in cache:
            res = resolve_path(route, pat)
            if not res.ok:
                raise ReplayError(
                    f"train {spec.name!r}: path {pat.name} does not resolve: " + "; ".join(res.problems)
                )
            line = TrackLine.from_path(route, res, extend=spec.beyond_path + 2000.0)
            end = float(line.path_length) + spec.beyond_path
            cache[key] = (line, min(end, line.length) if line.ends_at_track_end else end)
            cache[("waits",) + key] = path_waits(pat, res, line)
        line, end = cache[key]
        return line, end, key
    st = spec.start
    assert st is not None
    line = TrackLine.from_point(
        route, st.tile_x, st.tile_z, st.x, st.z, backward=st.backward, length=spec.distance
    )
    return line, None, ("point", id(line))


def train_category(spec: TrainSpec, stocks) -> str:  # noqa: ANN001
    """The train's category for the speed posts: the scenario's, else "freight" if any
    car is a freight wagon (as Open Rails decides), else "passenger"."""
    if spec.category is not None:
        return spec.category
    return "freight" if any(getattr(s, "wagon_type", None) == "Freight" for s in stocks) else "passenger"


def path_waits(pat: Path, res, line: TrackLine) -> list[tuple[float, float]]:  # noqa: ANN001
    """The waiting points of a path on its line: (line distance, seconds). A point is
    where its leg starts; only the first part of a path with reversals is replayed, so
    only points on it count. Open Rails' special values (≥ 30000: a clock time or
    coupling orders) are waits of 0 s."""
    from ..formats.pat import read_pat

    pf = read_pat(pat, diagnostics=Diagnostics(strict=False))
    chain = list(pf.main_chain())
    out = []
    s = 0.0
    for leg in res.legs:
        if leg.from_point in res.reversals and leg.from_point > 0:
            break
        if 0 < leg.from_point < len(chain):
            node = pf.nodes[chain[leg.from_point]]
            w = node.wait_seconds
            if w is not None:
                out.append((s, float(w) if w < 30000 else 0.0))
        s += leg.length
    return [(a, w) for a, w in out if a <= line.path_length + 1e-6]


def _driver(
    spec: TrainSpec, line: TrackLine, end_s: float | None, model: forces.CarModel, category: str = "passenger"
):
    if spec.driver == "schedule":
        return ScheduleDriver(spec.schedule, spec.schedule_by)
    vmax = (
        np.nanmin(np.where(model.is_engine, model.max_velocity, np.nan)) if model.is_engine.any() else np.nan
    )
    cap = spec.max_speed if spec.max_speed is not None else None
    if np.isfinite(vmax):
        cap = min(cap, float(vmax)) if cap is not None else float(vmax)
    stop = end_s if end_s is not None else (line.length if line.ends_at_track_end else None)
    limit_s, limit_v = line.limits(category)
    return AutoDriver(limit_s, limit_v, stop, max_speed=cap, deceleration=spec.deceleration)


#: Coupler snatches and buffer impacts slower than this (m/s) are not reported.
MIN_EVENT_SPEED = 0.05

#: Brake build-up time (s, to the full application) by train category when the
#: scenario gives none: UIC brake positions P (passenger) and G (freight), roughly.
BUILD_UP_S = {"passenger": 4.0, "freight": 20.0}
#: Releasing takes this many times the build-up time.
RELEASE_OVER_BUILD_UP = 1.5


def _build_up(t: _Train) -> float:
    b = t.spec.brake_build_up
    return float(b) if b is not None else BUILD_UP_S.get(t.category, 4.0)


def _setup_driver(t: _Train, rep: Replay) -> None:
    """Tell the automatic driver what the replay knows: the train length, the braking it
    can count on in force mode, waiting points, the allowance."""
    d = getattr(t.driver, "inner", t.driver)  # signalled or held trains wrap it
    if not isinstance(d, AutoDriver):
        return
    d.train_length = t.length
    d.train = t.spec.name
    if t.spec.brake_mode == "force":
        # Plan with what the brakes give on the level, with a margin, and start braking
        # half a build-up time earlier (a linear build-up is a dead time of T/2).
        # With brake-shoe friction curves, the least brake force up to the fastest the
        # driver will go (docs/physics.md §3.5).
        m = t.model
        v_top = min(d.max_speed, max(d.limit_v, default=float("inf")))
        brakes = forces.brake_force_floor(m, v_top)
        level = (brakes + float(forces.davis(m, 0.0).sum())) / float(m.inertial_mass.sum())
        d.decel = min(d.decel, 0.9 * level)
        d.brake_delay = 0.5 * _build_up(t)
        d.brake_level = level
        if m.brake_shoe:
            # Braking from the speed of the moment can count on the least force down to
            # standstill; the brakes build up to what they give at that speed.
            davis0, inertia = float(forces.davis(m, 0.0).sum()), float(m.inertial_mass.sum())
            vs, floors = forces.brake_force_floors(m, v_top)
            planned = t.spec.deceleration

            def brakes_at(v: float) -> tuple[float, float]:
                floor = float(np.interp(abs(v), vs, floors))
                full = (float(forces.brake(m, 1.0, v).sum()) + davis0) / inertia
                return min(planned, 0.9 * (floor + davis0) / inertia), full

            d.brakes_at = brakes_at
    for s_at, wait in t.waits:
        if s_at > t.front0 + AutoDriver.ARRIVED_WITHIN:  # not behind the front at the start
            d.stops.append(Stop(s_at, wait, "waiting point"))
    d.stops.sort(key=lambda p: p.s)
    if t.spec.allowance or t.spec.allowance_min_per_100km:
        from .runtime import fit_allowance

        spec = t.spec
        figures, warns = fit_allowance(
            d,
            t.model,
            t.line,
            t.front0,
            adhesion=rep._adhesion,
            percent=spec.allowance,
            min_per_100km=spec.allowance_min_per_100km,
            mode=spec.allowance_mode,
        )
        t.warnings.extend(warns)
        if figures is not None:
            t.allowance = figures


@dataclass(frozen=True, slots=True, eq=False)
class _ControlArrays:
    """The drivers' :class:`Controls` of one step as arrays over all trains."""

    throttle: np.ndarray
    brake: np.ndarray
    deceleration: np.ndarray
    target: np.ndarray  # speed_target, NaN for None
    emergency: np.ndarray  # bool

    @classmethod
    def of(cls, ctrl: list[Controls]) -> _ControlArrays:
        nan = float("nan")
        return cls(
            np.array([c.throttle for c in ctrl], dtype=np.float64),
            np.array([c.brake for c in ctrl], dtype=np.float64),
            np.array([c.deceleration for c in ctrl], dtype=np.float64),
            np.array([nan if c.speed_target is None else c.speed_target for c in ctrl], dtype=np.float64),
            np.array([c.emergency for c in ctrl], dtype=bool),
        )


# (C-level attribute reads for the passes over all trains of each step)
_DRIVER = operator.attrgetter("driver")
_DONE_AT = operator.attrgetter("done_at")
_FINISHED = operator.attrgetter("finished")


def _replaced(before: list, now: list) -> bool:
    """Whether any object of ``now`` is not the one in ``before`` (by identity: a driver
    may compare equal to another)."""
    return len(before) != len(now) or any(map(operator.is_not, before, now))


def _pmax(a, b):  # noqa: ANN001, ANN202
    """Python's ``max(a, b)`` elementwise: ``b`` only where ``b > a`` (so NaN and the
    sign of a zero come out as the scalar code's)."""
    return np.where(b > a, b, a)


def _pmin(a, b):  # noqa: ANN001, ANN202
    """Python's ``min(a, b)`` elementwise."""
    return np.where(b < a, b, a)


#: the compiled per-train controls, imported on first use (None without numba)
_CONTROLS = LazyKernel("_driver_kernel", "controls")


def _taper_factors(force, other, inertia, v, vmax, dt: float) -> np.ndarray:  # noqa: ANN001
    """:func:`forces.taper_factor` over all trains (the same operations per element)."""
    on = (force > 0.0) & (v + dt * (force + other) / inertia > vmax - forces.TAPER_MS)
    if not np.logical_or.reduce(on):  # (no train near its top speed: most steps)
        return np.ones(len(on))
    slope = 1.0 / forces.TAPER_MS
    dv = (other + slope * force * (vmax - v)) / (inertia / dt + slope * force)
    return np.where(on, _pmin(_pmax(slope * (vmax - v - dv), 0.0), 1.0), 1.0)


class _Lines:
    """All trains' lines in one table, so that per-car lookups (elevation under each
    bogie, curvature, world position) are single numpy calls over every car. Line k
    occupies [base[k], base[k] + length] of a global distance."""

    GAP = 10.0

    def __init__(self, lines: list[TrackLine]) -> None:
        self.base = []
        S, Y, X, Z, P1, PC = [], [], [], [], [], []
        base = 0.0
        for ln in lines:
            self.base.append(base)
            S.append(ln.s + base)
            Y.append(ln.y)
            X.append(ln.X)
            Z.append(ln.Z)
            P1.append(ln.piece_s1 + base)
            PC.append(ln.piece_curvature)
            base += ln.length + self.GAP
        self.S, self.Y, self.X, self.Z = (np.concatenate(a) for a in (S, Y, X, Z))
        self.P1, self.PC = np.concatenate(P1), np.concatenate(PC)
        # the piece ends around each searchsorted count i: P1[i − 1] and P1[i]
        self.P1_lo = np.concatenate(([-np.inf], self.P1))
        self.P1_hi = np.concatenate((self.P1, [np.inf]))
        # The node traversals of every line, for the collision checks' broad phase:
        # global end distance and node of each, and where each line's rows start.
        self.SEG0 = np.concatenate([ln.seg_s0 + b for ln, b in zip(lines, self.base)])
        self.SEG1 = np.concatenate([ln.seg_s1 + b for ln, b in zip(lines, self.base)])
        self.SEG_NODE = np.concatenate([ln.seg_node for ln in lines])
        self.SEG_DIR = np.concatenate([ln.seg_dir for ln in lines])
        self.SEG_OFF0 = np.concatenate([ln.seg_off0 for ln in lines])
        self.seg_first = np.cumsum([0] + [len(ln.seg_s1) for ln in lines])
        # each line's own distances, for lookups that give what the line's own give
        self.SL = np.concatenate([ln.s for ln in lines])
        self.SEG1L = np.concatenate([ln.seg_s1 for ln in lines])
        self.pt_first = np.cumsum([0] + [len(ln.s) for ln in lines])
        # np.interp compiled, with each point's table row kept per call site between
        # calls (tdbtools.physics._lookup_kernel; the same numbers), when numba is there
        self._interp = None
        self.boxes_near: Callable | None = None  # (Replay._check_collisions' sweep)
        if compiled_available():
            from ._lookup_kernel import boxes_near, interp

            self._interp = interp
            self.boxes_near = boxes_near
        self._rows: dict[str, np.ndarray] = {}

    def _lookup(self, g: np.ndarray, site: str, f1: np.ndarray, f2: np.ndarray | None = None):
        """``np.interp(g, S, f1)`` (and of ``f2``) for the points of one call ``site``."""
        k = self._interp
        if k is None:
            return np.interp(g, self.S, f1), (None if f2 is None else np.interp(g, self.S, f2))
        g = np.ascontiguousarray(g, dtype=np.float64)
        rows = self._rows.get(site)
        if rows is None or rows.size != g.size:
            rows = self._rows[site] = np.full(g.size, -1, dtype=np.int64)
        o1 = np.empty(g.size)
        o2 = o1 if f2 is None else np.empty(g.size)
        k(g, self.S, f1, f1 if f2 is None else f2, o1, o2, rows, f2 is not None)
        return o1, (None if f2 is None else o2)

    def elevation(self, g: np.ndarray, site: str | None = None) -> np.ndarray:
        if site is None:
            return np.interp(g, self.S, self.Y)
        return self._lookup(g, site, self.Y)[0]

    def curvature(self, g: np.ndarray) -> np.ndarray:
        i = np.searchsorted(self.P1, g, side="left")
        return self.PC[np.minimum(i, len(self.PC) - 1)]

    def world_xz(self, g: np.ndarray, site: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        if site is None:
            return np.interp(g, self.S, self.X), np.interp(g, self.S, self.Z)
        X, Z = self._lookup(g, site, self.X, self.Z)
        assert Z is not None
        return X, Z

    def on_lines(self, line: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, ...]:
        """(node, X, Z, height) at distances ``s`` (within [0, length]) of lines ``line``:
        bit for bit what each line's own ``node_offset``, ``world_xz`` and ``elevation``
        give, for points on many lines in one go. The global table finds each row to
        within rounding; a few steps over the line's own distances make it the line's,
        and the linear interpolation is np.interp's, operation for operation."""
        g = s + np.asarray(self.base)[line]
        # the node traversal: the line's searchsorted(seg_s1, s, "left"), clipped
        f, last = self.seg_first[line], self.seg_first[line + 1] - 1
        i = _settle(
            np.clip(np.searchsorted(self.SEG1, g, side="left"), f, last), f, last, s, self.SEG1L, True
        )
        # the sample row: the last one at or before s (np.interp's)
        p0, p1 = self.pt_first[line], self.pt_first[line + 1] - 1
        j = _settle(np.clip(np.searchsorted(self.S, g, side="right") - 1, p0, p1), p0, p1, s, self.SL, False)
        jn = np.minimum(j + 1, p1)
        sj = self.SL[j]
        den = self.SL[jn] - sj
        den[den == 0.0] = 1.0  # (only at a line's last sample, whose value is taken as it is)
        as_is = (j == p1) | (sj == s)
        left = s < self.SL[p0]
        d = s - sj

        def interp(col: np.ndarray) -> np.ndarray:
            cj = col[j]
            out = np.where(as_is, cj, (col[jn] - cj) / den * d + cj)
            return np.where(left, col[p0], out)

        return self.SEG_NODE[i], interp(self.X), interp(self.Z), interp(self.Y)


@dataclass(slots=True)
class _StepKernel:
    """tdbtools.physics._step_kernel and a replay's fixed arguments to it (see there)."""

    K: Any
    cars: np.ndarray
    consts: np.ndarray
    lines: np.ndarray
    pieces: np.ndarray
    rows: np.ndarray
    work: np.ndarray
    trains: np.ndarray | None  # None: the per-train loop stays in Python (brake-shoe curves)
    bounds: np.ndarray
    engines: np.ndarray | None


def _settle(
    i: np.ndarray, lo: np.ndarray, hi: np.ndarray, s: np.ndarray, table: np.ndarray, left: bool
) -> np.ndarray:
    """Rows ``i`` (within [lo, hi] each) moved until ``table[i - 1] < s <= table[i]``
    (``left``; searchsorted "left") or ``table[i] <= s < table[i + 1]`` (else; "right"
    less one), or a bound is reached: what a search of the row's own stretch gives."""
    while True:
        down = (i > lo) & ((table[np.maximum(i - 1, lo)] >= s) if left else (table[i] > s))
        if not down.any():
            break
        i = i - down
    while True:
        up = (i < hi) & ((table[i] < s) if left else (table[np.minimum(i + 1, hi)] <= s))
        if not up.any():
            break
        i = i + up
    return i


class Replay:
    """A running replay; :func:`replay` runs one to the end."""

    #: From this many trains on, a step works out the traction and brakes of all trains
    #: with numpy calls over all of them, and from BATCH_DRIVERS_MIN_TRAINS on it also
    #: drives the automatic drivers so (the same numbers, docs/running-time.md §2.1);
    #: below, per-train Python is cheaper (measured break-even: ~25 and ~50 trains).
    BATCH_MIN_TRAINS = 24
    BATCH_DRIVERS_MIN_TRAINS = 48
    #: From this many cars on, a step keeps each car's curve resistance until its middle
    #: leaves its curvature piece (below, looking all up is cheaper than the check).
    KEEP_CURVES_MIN_CARS = 256

    def __init__(
        self,
        scenario: Scenario,
        *,
        route: Route | None = None,
        cars_trace: bool = False,
        trace_every: float | None = None,
        signals: object = None,
        lines: dict[str, TrackLine] | None = None,
    ) -> None:
        """``lines``: a prepared line per train name (e.g. :meth:`TrackLine.synthetic`),
        used instead of the train's path or start point; the auto driver stops at its
        end when it ends at a track end."""
        self.scenario = scenario
        self.route = route if route is not None else load_route(scenario.route)
        self.cars_trace = cars_trace
        self.trace_every = trace_every if trace_every is not None else scenario.step
        self.diags = Diagnostics(strict=False)
        sdir = (
            Path(scenario.source).parent
            if scenario.source and not scenario.source.startswith("<")
            else Path(".")
        )
        self.switches = Switches(self.route)
        self.events: list[ReplayEvent] = []
        # The route's signals (None: the route's own if it has any; False: none).
        self.signal_set = signals_for(self.route, signals)  # type: ignore[arg-type]
        given_lines = lines
        cache: dict = {}
        waits_by_name: dict[str, list] = {}
        # Trains of one scenario mostly share consists: each consist file is read, its
        # stock resolved and its car model built once (the models are read-only).
        consists: dict[tuple[str, bool, bool], _ConsistStock] = {}
        line_ids: dict = {}  # trains on the same line object share an engine line
        placed: list[_Placement] = []
        for spec in scenario.trains:
            stand_in = spec.stand_in if spec.stand_in is not None else scenario.stand_in
            ckey = (str(spec.consist), bool(stand_in), spec.turned)
            if ckey not in consists:
                consists[ckey] = self._read_consist(spec, sdir, stand_in)
            stock = consists[ckey]
            key: tuple
            if given_lines and spec.name in given_lines:
                line = given_lines[spec.name]
                end_s, key = None, ("given", id(line))
            else:
                line, end_s, key = _line_for(spec, self.route, sdir, cache)
            waits_by_name[spec.name] = list(cache.get(("waits",) + key, []))
            ekey = self.engine_line_key(spec, key)
            length = float(stock.model.length.sum())
            front0 = spec.start_offset + length
            if front0 > line.length + 1e-6:
                raise ReplayError(
                    f"train {spec.name!r} ({length:.1f} m) does not fit on its line "
                    f"({line.length:.1f} m) from {spec.start_offset:.1f} m"
                )
            if end_s is not None and front0 > end_s + 1e-6:
                # The stopping point would lie behind the train's front: it would "arrive" at once.
                path_len = end_s - spec.beyond_path
                raise ReplayError(
                    f"train {spec.name!r} is {length:.1f} m long but its path ends {path_len - spec.start_offset:.1f} m "
                    f"from where it starts (beyond_path {spec.beyond_path:g} m): it cannot run. Give "
                    f"beyond_path (--beyond-path) of at least {front0 - path_len:.0f} m, or a longer path"
                )
            placed.append(
                _Placement(line_ids.setdefault(ekey, len(line_ids)), front0, spec, stock, line, end_s)
            )
        # the cars of a line front (largest distance) to back
        placed.sort(key=lambda p: (p.line_id, -p.front0))
        self.trains: list[_Train] = []
        masses, lengths, car_line, coupled, slack, x, v = [], [], [], [], [], [], []
        all_stocks: list[Stock] = []
        all_flipped: list[bool] = []
        start = 0
        for p in placed:
            spec, st, line, model = p.spec, p.stock, p.line, p.stock.model
            n = len(model.mass)
            fronts = p.front0 - np.concatenate([[0.0], np.cumsum(model.length[:-1])])
            all_stocks.extend(st.stocks)
            all_flipped.extend(st.flipped)
            masses.append(model.mass)
            lengths.append(model.length)
            car_line.append(np.full(n, p.line_id))
            cp = np.ones(n, dtype=bool)
            cp[-1] = False
            coupled.append(cp)
            slack.append(st.slack)
            x.append(fronts)
            v.append(np.full(n, spec.start_speed))
            sl = slice(start, start + n)
            start += n
            category = train_category(spec, st.stocks)
            drv = wrap_driver(
                _driver(spec, line, p.end_s, model, category), spec.depart, self.signal_set is not None
            )
            t = _Train(
                spec,
                st.consist,
                model,
                line,
                p.line_id,
                sl,
                drv,
                BogieSet.from_model(spec.name, line, fronts, model),
                float(fronts[0]),
                float(model.length.sum()),
                p.end_s,
                warnings=list(st.warnings),
                category=category,
                waits=waits_by_name.get(spec.name, []),
            )
            self.trains.append(t)
        self.model = forces.CarModel.concat([t.model for t in self.trains])
        # The engine moves inertial masses ρ·m (rotating parts included); gravity and
        # the resistances use the mass itself (docs/running-time.md §5).
        self._inertial = self.model.inertial_mass
        self.bodies = Bodies(
            self._inertial,
            np.concatenate(lengths),
            np.concatenate(car_line),
            np.concatenate(coupled),
            np.concatenate(slack),
        )
        self.engine = Engine(self.bodies, np.concatenate(x), np.concatenate(v))
        self._forces = forces.Prepared(self.model)
        self._adhesion = None if scenario.adhesion == "off" else scenario.adhesion
        self._adhesive_g = (
            self.model.adhesive_mass
            if self.model.adhesive_mass is not None
            else np.zeros(len(self.model.mass))
        ) * forces.G
        T = len(self.trains)
        self.train_inertia = np.array([float(t.model.inertial_mass.sum()) for t in self.trains])
        self.train_maxbrake = np.array([max(float(t.model.max_brake.sum()), 1.0) for t in self.trains])
        self.train_vmax = np.array(
            [
                float(np.nanmin(np.where(t.model.is_engine, t.model.max_velocity, np.nan)))
                if (t.model.is_engine & np.isfinite(t.model.max_velocity)).any()
                else np.nan
                for t in self.trains
            ]
        )
        self.train_spec_decel = np.array([t.spec.deceleration for t in self.trains], dtype=np.float64)
        self.train_decel_mode = np.array([t.spec.brake_mode == "deceleration" for t in self.trains])
        self._any_decel_mode = bool(self.train_decel_mode.any())
        self._engines = self._forces.engines
        self._done_overridden = type(self)._done is not Replay._done
        self._end_length = self.bodies.length[[t.cars.stop - 1 for t in self.trains]]
        self._engine_train = np.repeat(np.arange(T), [int(t.model.is_engine.sum()) for t in self.trains])
        self._adhesive_g_eng = self._adhesive_g[self._engines] * (
            1.0 if self._adhesion != "wet" else forces.WET_RAIL_FACTOR
        )
        self._adhesive_g_eng_l = None if self._adhesion is None else self._adhesive_g_eng.tolist()
        self.train_build = np.array([max(_build_up(t), 1e-6) for t in self.trains])
        self.train_release = np.array([max(_build_up(t) * RELEASE_OVER_BUILD_UP, 1e-6) for t in self.trains])
        self.brake_applied = np.zeros(T)
        # Plain lists for the per-train scalar loop of each step.
        self.train_inertia_l = self.train_inertia.tolist()
        self.train_maxbrake_l = self.train_maxbrake.tolist()
        self.train_vmax_l = self.train_vmax.tolist()
        self.train_decel_mode_l = self.train_decel_mode.tolist()
        self.train_build_l = self.train_build.tolist()
        self.train_release_l = self.train_release.tolist()
        self._scale = np.zeros(T)
        self._last_forces = (np.zeros(0),) * 2
        for t in self.trains:
            _setup_driver(t, self)
        # Per-car views of the lines, for vectorised lookups and track-end checks.
        distinct = list({id(t.line): t.line for t in self.trains}.values())
        self.lines = _Lines(distinct)
        index = {id(ln): k for k, ln in enumerate(distinct)}
        counts = [t.cars.stop - t.cars.start for t in self.trains]
        self.train_start = np.array([t.cars.start for t in self.trains], dtype=np.int64)
        self.train_end = np.array([t.cars.stop - 1 for t in self.trains], dtype=np.int64)
        self.car_base = np.repeat([self.lines.base[index[id(t.line)]] for t in self.trains], counts)
        self.car_line_len = np.repeat([t.line.length for t in self.trains], counts)
        self._line_len_tol = self.car_line_len + 1e-9  # a bogie beyond is off the line
        self.car_far_end = np.repeat([t.line.ends_at_track_end for t in self.trains], counts)
        self.car_near_end = np.repeat([t.line.starts_at_track_end for t in self.trains], counts)
        self.car_train = np.repeat(np.arange(len(self.trains)), counts)
        self._train_line_len = np.array([t.line.length for t in self.trains], dtype=np.float64)
        self._train_front0 = np.array([t.front0 for t in self.trains], dtype=np.float64)
        self._trace_rows: list[_TraceRow] = []
        self._running = list(range(len(self.trains)))  # trains not done yet, in order
        # step's table distances: every car's bogies, rear then front from the last car
        # on (each train's points rise along the table, so np.interp finds each next to
        # the last: the numbers do not depend on the order), then the middles of the cars
        pairs = (n := len(self.engine.x)) * 2
        self._len3 = np.concatenate((np.repeat(self.car_line_len, 2)[::-1], self.car_line_len))
        self._base3 = np.concatenate((np.repeat(self.car_base, 2)[::-1], self.car_base))
        self._pairs = pairs
        self._front_bogie = (self.model.length - self.model.bogie_spacing) / 2.0
        self._half_length = self.model.length / 2.0
        # The bogie measures of every train are views into two arrays updated in place
        # each step: the bogies follow their cars along the line (docs/physics.md §5).
        # Both are the columns of one array (front, rear per car), read backwards above.
        self._fbrb = np.empty((n, 2))
        self._fb, self._rb = self._fbrb[:, 0], self._fbrb[:, 1]
        np.subtract(np.asarray(self.engine.x), self._front_bogie, out=self._fb)
        np.subtract(self._fb, self.model.bogie_spacing, out=self._rb)
        # Per car: the curvature piece its middle was in at the last step (the bounds a
        # searchsorted of the piece ends gave) and its curve resistance (None: none yet).
        self._crv_lo = self._crv_hi = self._crv = np.zeros(0)
        self._crv_set = False
        for t in self.trains:
            t.bogies.front = self._fb[t.cars]
            t.bogies.rear = self._rb[t.cars]
        # per car: traction and brake energy, top speed (one array: one kernel argument)
        self._sums = np.zeros((3, n))
        self._trac_car, self._brake_car, self._vmax_car = self._sums
        self._xv: tuple | None = None
        self._ck = self._step_kernel_args(n)
        self._batch: DriverBatch | None = None
        self._inner_of: list = []
        self._inner: list = []
        self._inner_kind: list[int] = []
        self._batch_dt: float | None = None
        self._batch_of: list = []
        self._run_view: tuple | None = None
        # (the keys of the per-step passes over all trains, see _TRAIN_FLAGS)
        self._inner_key: tuple | None = None
        self._batch_key: tuple | None = None
        self._derailed_of: tuple | None = None
        self._done_key: tuple | None = None
        self.occupancy = Occupancy()
        # What the collision checks need per train and car (docs/physics.md §5.4): the
        # trains' line objects (trains of one line never collide here), the positions at
        # the last check and, per train, a function making its TrainPosition from them.
        self._train_line = np.array([index[id(t.line)] for t in self.trains], dtype=np.int64)
        self._names = [t.spec.name for t in self.trains]
        self._car_names: list[tuple[str, int]] | None = None  # (_engine_events)
        self._name_set = set(self._names)
        self._checked = (np.asarray(self.engine.x).copy(), np.asarray(self.engine.v).copy())
        self._position_of = [functools.partial(self._position, k) for k in range(len(self.trains))]
        self.time = 0.0
        self._next_check = 0.0
        self._next_trace = 0.0
        self._pending_switches = list(scenario.events)
        for t in self.trains:
            for w in t.warnings:
                self._event(StandIn(time=0.0, train=t.spec.name, message=w))
        self.signals = ReplaySignals(self, self.signal_set) if self.signal_set is not None else None

    def _read_consist(self, spec: TrainSpec, sdir: Path, stand_in: bool) -> _ConsistStock:
        """A train's consist with its stock, car model and coupler slack."""
        consist = _consist(spec, self.route, sdir)
        if spec.turned:  # after a reversal the rear car leads (docs/activities.md §4.4)
            consist = reverse_consist(consist)
        try:
            import warnings

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                stocks = resolve_stock(
                    consist, _stock_root(consist, self.route), stand_in=stand_in, diagnostics=self.diags
                )
        except RouteError as exc:
            raise ReplayError(
                f"train {spec.name!r}: {exc}\n(use --stand-in, or stand_in = true in the "
                "scenario, to run with generic stock of the same kind)"
            ) from None
        flipped = [c.flipped for c in consist.cars]
        model = forces.CarModel.from_stock(
            stocks, flipped, trailing_loco_factor=True, rotating_mass=self.scenario.rotating_mass
        )
        if consist.max_velocity:
            # The consist's MaxVelocity is a hard limit: no engine pulls beyond it.
            cap = np.where(
                model.is_engine, np.fmin(model.max_velocity, consist.max_velocity), model.max_velocity
            )
            model = dataclasses.replace(model, max_velocity=cap)
        # Coupler free play between buffers touching and coupler taut. Open Rails lets
        # a simple coupler's slack run from -slack2 to +slack2 (docs/formats.md §10.3, docs/physics.md §4), so the
        # whole play is 2·slack2 of the coupler each car uses.
        slack = np.array([2.0 * st.coupler(f).slack2 for st, f in zip(stocks, flipped)], dtype=np.float64)
        return _ConsistStock(
            consist, tuple(stocks), tuple(flipped), model, slack, tuple(str(w.message) for w in caught)
        )

    def _step_kernel_args(self, n: int) -> _StepKernel | None:
        """The compiled arithmetic of a step around the engine (tdbtools.physics.
        _step_kernel, the same numbers) and its fixed arguments; None without numba, or
        when a table is not what the kernel takes for granted (float64, sorted piece ends
        without NaN, one curvature per piece end)."""
        if not compiled_available():
            return None
        cols = self._forces.columns()
        ln = self.lines
        P1, PC = ln.P1, ln.PC
        if (
            cols is None
            or any(a.dtype != np.float64 for a in (ln.S, ln.Y, P1, PC))
            or not PC.size
            or P1.size != PC.size
            or bool(np.isnan(P1).any())
            or not bool((P1[1:] >= P1[:-1]).all())
        ):
            return None
        from . import _step_kernel as K
        from .compiled import load_step_kernels

        load_step_kernels()  # (in the set-up, not in the first step)
        neg_mg, spacing, da, db, dc, start, f0, vm, slope, mg_curve = cols
        per_car = {
            K.C_LINE_LEN: self.car_line_len, K.C_BASE: self.car_base, K.C_HALF: self._half_length,
            K.C_NEG_MG: neg_mg, K.C_SPACING: spacing, K.C_DA: da, K.C_DB: db, K.C_DC: dc, K.C_F0: f0,
            K.C_VM: vm, K.C_SLOPE: slope, K.C_MG_CURVE: mg_curve, K.C_FULL_BRAKE: self.model.max_brake,
            K.C_INERTIAL: self._inertial, K.C_FRONT_BOGIE: self._front_bogie, K.C_LEN_TOL: self._line_len_tol,
        }  # fmt: skip
        cars = np.empty((K.N_CAR_ROWS, n))
        for row, col in per_car.items():
            if np.asarray(col).dtype != np.float64:
                return None
            cars[row] = col
        # the per-train loop's (trains without brake-shoe curves)
        trains = engines = None
        traction_here = False
        if not self._forces.has_shoe_curves:
            per_train = {
                K.T_INERTIA: self.train_inertia, K.T_MAXBRAKE: self.train_maxbrake,
                K.T_DECEL_MODE: self.train_decel_mode, K.T_RELEASE: self.train_release,
                K.T_BUILD: self.train_build, K.T_VMAX: self.train_vmax, K.T_SPEC_DECEL: self.train_spec_decel,
            }  # fmt: skip
            trains = np.empty((K.N_TRAIN_ROWS, len(self.trains)))
            for row, col in per_train.items():
                trains[row] = col
            force, power, has_power, curves = self._forces.engine_table()
            eng = self._engines
            engines = np.empty((K.N_ENGINE_ROWS, len(eng)))
            engines[K.E_ROW], engines[K.E_TRAIN] = eng, self._engine_train
            engines[K.E_FORCE], engines[K.E_POWER], engines[K.E_HAS_POWER] = force, power, has_power
            engines[K.E_ADHESIVE] = 0.0 if self._adhesion is None else self._adhesive_g_eng
            # (as _traction_and_brakes: Prepared.traction_few's operations up to 4 engines)
            traction_here = len(eng) <= 4 and not curves
        return _StepKernel(
            K,
            cars,
            np.array(
                [start, traction_here, self._adhesion is not None, forces.EMERGENCY_FACTOR, forces.TAPER_MS]
            ),
            np.array([ln.S, ln.Y]),
            np.array([P1, PC]),
            np.full(3 * n, -1, dtype=np.int64),
            np.empty(4 * n),
            trains,
            np.append(self.train_start, n),
            engines,
        )

    def _car_forces(self, x: np.ndarray, v: np.ndarray) -> tuple:
        """Per car at positions ``x`` and speeds ``v``, with the bogies where the last step
        left them: gravity, Davis and curve resistance, and their sum (None: not summed)."""
        ck = self._ck
        if ck is not None:
            out = np.empty((4, len(x)))
            ck.K.car_forces(x, v, self._fbrb, ck.cars, ck.consts, ck.lines, ck.pieces, ck.rows, ck.work, out)
            return out[0], out[1], out[2], out[3]
        # _g of three per-car arrays in place: the bogies (the measures the last step
        # left, of these x; backwards, see __init__) and the middle of every car
        g = np.concatenate((self._fbrb.ravel()[::-1], x - self._half_length))
        np.maximum(g, 0.0, out=g)
        np.minimum(g, self._len3, out=g)
        g += self._base3
        y = self.lines.elevation(g[: self._pairs], "bogies")[::-1]  # front, rear of car 0, 1, ...
        pre = self._forces
        crv = self._curve_forces(g[self._pairs :])
        return pre.gravity(y[0::2], y[1::2]), pre.davis(v), crv, None

    def _engine_traction(self, thr: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Per car, the traction without the taper at the trains' throttles ``thr``: the
        engines' only (wagons give 0), and with adhesion at most Curtius–Kniffler's μ(v)
        times the adhesive weight (docs/running-time.md §6). Prepared.traction_few's
        Python floats up to four engines, else Prepared.traction."""
        eng = self._engines
        trac0 = np.zeros(len(v))
        if len(eng) <= 4:
            trac0[eng] = self._forces.traction_few(
                thr[self._engine_train].tolist(), v[eng].tolist(), self._adhesive_g_eng_l
            )
        else:
            trac0[eng] = self._forces.traction(
                thr[self._engine_train], v[eng], None if self._adhesion is None else self._adhesive_g_eng
            )
        return trac0

    def _few_train_forces(
        self, ctrl: list[Controls], x: np.ndarray, v: np.ndarray, dt: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`_car_forces` and :meth:`_traction_and_brakes` for trains without
        brake-shoe curves, compiled (``_step_kernel.few_train_forces``, the same
        operations): traction, brakes, and the engine's drive and opposing forces."""
        ck = self._ck
        assert ck is not None and ck.trains is not None
        n = len(v)
        K = ck.K
        out = np.empty((K.N_OUT_ROWS, n))
        table = np.array(
            [
                (
                    c.speed_target is not None,
                    0.0 if c.speed_target is None else c.speed_target,
                    1.0 if c.speed_target is not None else c.throttle,
                    c.brake,
                    c.deceleration,
                    c.emergency,
                )
                for c in ctrl
            ],
            dtype=np.float64,
        )
        if not ck.consts[1]:  # the engines' traction in Python, as _traction_and_brakes
            out[K.F_TRAC] = self._engine_traction(table[:, 2], v)
        self._scale = np.empty(len(ctrl))
        K.few_train_forces(
            x, v, self._fbrb, table, dt, ck.cars, ck.consts, ck.lines, ck.pieces, ck.rows, ck.work,
            ck.trains, ck.bounds, ck.engines, self.brake_applied, out, self._scale,
        )  # fmt: skip
        self._last_forces = (out[K.F_GRAV], out[K.F_RESIST])
        return out[K.F_TRAC], out[K.F_BRAKE], out[K.F_DRIVE], out[K.F_OPPOSED]

    # -- the loop ---------------------------------------------------------------------------
    def _event(self, e: ReplayEvent) -> None:
        self.events.append(e)

    def _g(self, s: np.ndarray) -> np.ndarray:
        """Global table distance of per-car line distances (clipped onto each line)."""
        return np.minimum(np.maximum(s, 0.0), self.car_line_len) + self.car_base  # (np.clip's ufuncs)

    def step(self) -> None:
        sc = self.scenario
        dt = sc.step
        eng = self.engine
        # Positions and speeds as the last step left them (nothing else moves the cars
        # between steps; the engine's x is rebuilt from its gaps on every read).
        if self._xv is None or self._xv[2] != eng.time:
            self._xv = (eng.x, eng.v, eng.time)
            np.subtract(self._xv[0], self._front_bogie, out=self._fb)
            np.subtract(self._fb, self.model.bogie_spacing, out=self._rb)
        x, v = self._xv[0], self._xv[1]
        starts = self.train_start
        T = len(self.trains)
        batch = T >= self.BATCH_MIN_TRAINS
        if batch and T >= self.BATCH_DRIVERS_MIN_TRAINS:
            ctl = self._drive_batch(x, v, dt)
        else:
            # One Python pass over the trains: the drivers (scalars), fed with the fronts,
            # rears and speeds read out in one go.
            fronts = x[starts].tolist()
            speeds = v[starts].tolist()
            rears = (x[self.train_end] - self._end_length).tolist()
            ctrl = [self._drive(k, fronts[k], speeds[k], rears[k], dt) for k in range(T)]
            if batch:
                ctl = _ControlArrays.of(ctrl)
        m = self.model
        ck = self._ck
        few = not batch and ck is not None and ck.trains is not None
        if not few:
            grav, dav, crv, resist = self._car_forces(x, v)
        drive = None
        if batch:
            trac, brk, self._scale, _frac = self._traction_and_brakes_batch(
                ctl, x, v, v[starts], grav, dav, crv, dt, resist
            )
        elif few:
            trac, brk, drive, opposed = self._few_train_forces(ctrl, x, v, dt)
        else:
            trac, brk, self._scale, _frac = self._traction_and_brakes(
                ctrl, x, v, speeds, grav, dav, crv, dt, resist
            )
        if drive is None:
            grav, resist = self._last_forces  # (resist: dav + crv)
            drive, opposed = trac + grav, resist + brk
        evs = eng.step(dt, drive, opposed)
        if evs:
            self._engine_events(evs)
        self.time += dt
        x1, v1 = eng.x, eng.v  # (new arrays: the engine never changes one handed out)
        self._xv = (x1, v1, eng.time)
        # Energy and top speed per car, in place; summed per train when asked for.
        # Bogies: measures along the line that follow their car. One past a line end
        # that is a track end derails its car (the exact event comes from BogieSet).
        if ck is not None:
            past = ck.K.after_step(x, x1, v1, trac, brk, self._sums, self._fbrb, ck.cars)
            past = past[0] or past[1]
        else:
            dx = x1 - x
            self._trac_car += np.maximum(trac * dx, 0.0)
            self._brake_car += brk * np.abs(dx)
            np.maximum(self._vmax_car, np.abs(v1), out=self._vmax_car)
            np.subtract(x1, self._front_bogie, out=self._fb)
            np.subtract(self._fb, m.bogie_spacing, out=self._rb)
            any_ = np.logical_or.reduce  # ndarray.any without its Python wrapper
            past = any_(self._fb > self._line_len_tol) or any_(self._rb < -1e-9)
        if past:
            over = self._fb > self._line_len_tol
            off = (over & self.car_far_end) | ((self._rb < -1e-9) & self.car_near_end)
            for k in np.unique(self.car_train[off]).tolist():
                for ev in self.trains[k].bogies.check(self.time):
                    self._safety(ev)
            for k in np.unique(self.car_train[over & ~self.car_far_end]).tolist():
                t = self.trains[k]
                if not t.derailed and t.done_at is None:
                    t.done_at = self.time
                    self._event(
                        EndOfLine(
                            time=self.time,
                            train=t.spec.name,
                            message=f"reached the end of the {t.line.length:.0f} m of track built for it",
                        )
                    )
        sig = self.signals
        if sig is not None and self.time + 1e-9 >= sig.next_update:  # (its own test)
            sig.update(self.time, x1[starts].tolist(), v1[starts].tolist())
        if self._running:
            trains = self.trains
            if self._done_overridden:
                due = self._running
            elif not batch:  # (a few trains: cheaper than keeping the cache)
                due = []
                for k in self._running:
                    t = trains[k]
                    drv = getattr(t.driver, "inner", t.driver)
                    if (
                        t.derailed
                        or isinstance(drv, ScheduleDriver)
                        or (isinstance(drv, AutoDriver) and drv.finished)
                    ):
                        due.append(k)
            else:
                # _done does nothing for a train that runs on (saves the speeds)
                due = self._due_batch()
            if due:
                top = np.maximum.reduceat(np.abs(v1), self.train_start).tolist()
                for k in due:
                    self._done(trains[k], dt, top[k])
            if due or not batch or self._done_overridden or self._any_done():
                self._running = [k for k in self._running if trains[k].done_at is None]
        while self._pending_switches and self._pending_switches[0].at <= self.time + 1e-9:
            sw = self._pending_switches.pop(0)
            self.throw_switch(sw.junction, sw.route)
        if self.time + 1e-9 >= self._next_check:
            self._next_check += sc.collision_check_interval
            self._check_collisions()
        if self.time + 1e-9 >= self._next_trace:
            self._next_trace += self.trace_every
            self._trace(trac, brk)

    def _curve_forces(self, gm: np.ndarray) -> np.ndarray:
        """Per car, the curve resistance at table distances ``gm`` of the cars' middles:
        ``forces.Prepared.curve(lines.curvature(gm))``, looked up anew only for the cars
        whose middle left its curvature piece since the last step (an element's value
        depends only on its piece). Kept between steps: do not change the result."""
        lines = self.lines
        if len(gm) < self.KEEP_CURVES_MIN_CARS:  # (a few cars: the lookup costs less than the check)
            return self._forces.curve(lines.curvature(gm))
        if not self._crv_set:
            i = np.searchsorted(lines.P1, gm, side="left")
            self._crv_lo, self._crv_hi = lines.P1_lo[i], lines.P1_hi[i]
            self._crv = self._forces.curve(lines.PC[np.minimum(i, len(lines.PC) - 1)])
            self._crv_set = True
            return self._crv
        # lo < g <= hi: the same count of piece ends below g (a NaN g is looked up)
        same = np.less(self._crv_lo, gm)
        same &= gm <= self._crv_hi
        if not np.logical_and.reduce(same):
            idx = np.flatnonzero(~same)
            i = np.searchsorted(lines.P1, gm[idx], side="left")
            self._crv_lo[idx] = lines.P1_lo[i]
            self._crv_hi[idx] = lines.P1_hi[i]
            self._crv[idx] = self._forces.curve_rows(lines.PC[np.minimum(i, len(lines.PC) - 1)], idx)
        return self._crv

    def _drive(self, k: int, front: float, speed: float, rear: float, dt: float) -> Controls:
        """Train k's driver, called for this step (a derailed train brakes)."""
        t = self.trains[k]
        if t.derailed:
            c = Controls(0.0, 1.0, 0.0)
        else:
            c = t.driver(DriveState(self.time, front - t.front0, speed, front, rear, dt))
            evs = getattr(getattr(t.driver, "inner", t.driver), "events", None)
            if evs:  # waiting points: arrived and waiting, departed
                for e in evs:
                    self._event(e)
                evs.clear()
        t.controls = c
        return c

    def _running_view(self) -> tuple[list, list, bool]:
        """The running trains (``_running``) as their trains and their automatic inner
        drivers, and whether any runs on a schedule; made anew when either changes."""
        inner, kind = self._inner_drivers()
        run = self._running
        got = self._run_view
        if got is None or got[0] is not run or got[1] is not inner:
            trains = self.trains
            got = self._run_view = (
                run,
                inner,
                [trains[k] for k in run],
                [inner[k] for k in run if kind[k] == 2],
                any(kind[k] == 1 for k in run),
            )
        return got[2], got[3], got[4]

    def _due_batch(self) -> list[int]:
        """The running trains :meth:`_done` must look at (derailed, on a schedule, or with
        an automatic driver that finished): most steps none, found by C-level passes over
        the flags before the per-train list (docs/running-time.md §2.1)."""
        run_trains, autos, sched = self._running_view()
        if not sched and not self._derailed()[1] and not any(map(_FINISHED, autos)):
            return []
        inner, kind = self._inner_drivers()
        trains = self.trains
        return [
            k
            for k in self._running
            if trains[k].derailed or kind[k] == 1 or (kind[k] == 2 and inner[k].finished)
        ]

    def _any_done(self) -> bool:
        """Whether a running train has its ``done_at`` set (by this step's end of line,
        the signals or a subclass)."""
        key = (_TRAIN_FLAGS[0], len(self.trains), self._running)
        got = self._done_key
        if got is not None and got[0] == key[:2] and got[1] is key[2]:
            return got[2]
        run_trains = self._running_view()[0]
        done = any(map(operator.is_not, map(_DONE_AT, run_trains), itertools.repeat(None)))
        self._done_key = (key[:2], key[2], done)
        return done

    def _derailed(self) -> tuple[np.ndarray, bool]:
        """Which trains are derailed, and whether any (made anew when a train's flags
        were set)."""
        key = (_TRAIN_FLAGS[0], len(self.trains))
        got = self._derailed_of
        if got is None or got[0] != key:
            arr = np.array([t.derailed for t in self.trains], dtype=bool)
            got = self._derailed_of = (key, arr, bool(arr.any()))
        return got[1], got[2]

    def _inner_drivers(self) -> tuple[list, list[int]]:
        """Per train: its driver out of its wrapper (``inner``), and 1 for a schedule
        driver, 2 for an automatic one, 0 else; made anew when a train's driver is
        replaced (a wrapper's ``inner`` is taken to stay)."""
        if self._inner_key == (_TRAIN_FLAGS[0], len(self.trains)):
            return self._inner, self._inner_kind
        self._inner_key = (_TRAIN_FLAGS[0], len(self.trains))
        drivers = list(map(_DRIVER, self.trains))
        if _replaced(self._inner_of, drivers):
            inner = [getattr(d, "inner", d) for d in drivers]
            self._inner = inner
            self._inner_kind = [
                1 if isinstance(d, ScheduleDriver) else 2 if isinstance(d, AutoDriver) else 0 for d in inner
            ]
            self._inner_of = drivers
        return self._inner, self._inner_kind

    def _driver_batch(self) -> DriverBatch:
        """The batch of automatic drivers of this replay's trains, made anew when a
        train's driver was replaced (an activity's service drivers, a test's wrapper).
        Only plain automatic drivers, alone or in a signal or departure wrapper, are in
        it: any other driver (or one whose constraints were replaced) is called."""
        if self._batch is not None and self._batch_key == (_TRAIN_FLAGS[0], len(self.trains)):
            return self._batch
        self._batch_key = (_TRAIN_FLAGS[0], len(self.trains))
        drivers = list(map(_DRIVER, self.trains))
        if self._batch is None or _replaced(self._batch_of, drivers):
            autos: list[AutoDriver | None] = []
            departs: list[Any] = []
            sigs: list[Any] = []
            for d in drivers:
                a: AutoDriver | None = None
                dep: Any = None
                sig: Any = None
                if type(d) is AutoDriver and "constraints" not in vars(d):
                    a = d
                elif isinstance(d, SignalDriver | DepartDriver) and type(d.inner) is AutoDriver:
                    own = vars(d.inner).get("constraints")
                    if type(d) is SignalDriver and own is d.constraints:
                        a, dep, sig = d.inner, d, d
                    elif type(d) is DepartDriver and own is None:
                        a, dep = d.inner, d
                autos.append(a)
                departs.append(dep)
                sigs.append(sig)
            self._batch = DriverBatch(autos, departs, sigs, CREEP)
            self._batch_of = drivers
        return self._batch

    def _drive_batch(self, x: np.ndarray, v: np.ndarray, dt: float) -> _ControlArrays:
        """The controls of every train: the automatic drivers in the common state in
        numpy calls over all of them (:class:`DriverBatch`), the others by their own
        call, in train order (their events keep it). Trains driven in the batch keep
        the ``controls`` of the last step they were called."""
        front = x[self.train_start]
        speed = v[self.train_start]
        rear = x[self.train_end] - self._end_length
        free = ~self._derailed()[0]
        version = self.signals.version if self.signals is not None else 0
        driven, (thr, brk, dec, tgt, em) = self._driver_batch().drive(
            self.time, dt, front, speed, rear, free, version
        )
        rest = np.flatnonzero(~driven).tolist()
        if rest:
            fl, sl, rl = front[rest].tolist(), speed[rest].tolist(), rear[rest].tolist()
            nan = float("nan")
            for j, k in enumerate(rest):
                c = self._drive(k, fl[j], sl[j], rl[j], dt)
                thr[k], brk[k], dec[k] = c.throttle, c.brake, c.deceleration
                tgt[k] = nan if c.speed_target is None else c.speed_target
                em[k] = c.emergency
        return _ControlArrays(thr, brk, dec, tgt, em)

    def _traction_and_brakes(
        self,
        ctrl: list[Controls],
        x: np.ndarray,
        v: np.ndarray,
        speeds: list,
        grav: np.ndarray,
        dav: np.ndarray,
        crv: np.ndarray,
        dt: float,
        resist: np.ndarray | None = None,
    ):
        """Per-car traction and brake forces from the drivers' controls
        (docs/running-time.md §2–§7): the automatic driver's speed target becomes the
        traction fraction that reaches it by the end of the step (at most full power);
        brakes by the train's brake mode (force: a fraction of the brake force with
        build-up and release; deceleration: the hourly model); then the top-speed taper,
        solved implicitly per train. Per-train work is scalar Python (a few trains, a
        few numbers each: cheaper than numpy calls)."""
        m = self.model
        ct = self.car_train
        thr = [1.0 if c.speed_target is not None else c.throttle for c in ctrl]
        trac0 = self._engine_traction(np.array(thr), v)
        n = len(v)
        if resist is None:
            resist = dav + crv
        self._last_forces = (grav, resist)
        rows = np.concatenate((trac0, grav, resist)).reshape(3, n)
        sums = np.add.reduceat(rows, self.train_start, axis=1).tolist()
        Fs, Gs, Rs = sums
        M = self.train_inertia_l
        # Python floats in the loop: a numpy scalar costs several times more per
        # operation, and the IEEE results are the same.
        applied = self.brake_applied.tolist()
        decel_mode, maxbrake, release = self.train_decel_mode_l, self.train_maxbrake_l, self.train_release_l
        mb_car = self._forces.max_brake(v)  # None: no friction curves, MaxBrakeForce as is
        if mb_car is not None:
            maxbrake = np.maximum(np.add.reduceat(mb_car, self.train_start), 1.0).tolist()
        build, vmax = self.train_build_l, self.train_vmax_l
        emergency_factor = forces.EMERGENCY_FACTOR
        taper_factor = forces.taper_factor
        scale = [0.0] * len(ctrl)
        decel_car = None
        any_decel = False
        for k, c in enumerate(ctrl):
            vk = speeds[k]
            fwd = -1.0 if vk < 0.0 else 1.0
            other = Gs[k] - fwd * Rs[k]
            b_force = 0.0
            hold = 0.0
            if c.speed_target is not None:
                # Brakes to hold the target when even no traction would run over it
                # (a falling grade).
                hold = max(fwd * other - M[k] * (c.speed_target - vk) / dt, 0.0)
            if decel_mode[k]:
                a_b = c.deceleration if c.deceleration > 0 else c.brake * self.trains[k].spec.deceleration
                if hold > 0.0:
                    a_b = hold / M[k] - fwd * other / M[k]
                if a_b > 0:
                    any_decel = True
                    if decel_car is None:
                        decel_car = [0.0] * len(ctrl)
                    decel_car[k] = a_b
                    b_force = max(M[k] * a_b + fwd * other, 0.0)  # what the hourly brake adds
            else:
                if c.emergency:
                    demand = emergency_factor
                elif hold > 0.0:
                    demand = min(hold / maxbrake[k], 1.0)
                elif c.brake > 0 or c.deceleration <= 0:
                    demand = c.brake
                else:
                    demand = min(max((M[k] * c.deceleration + fwd * other) / maxbrake[k], 0.0), 1.0)
                a = applied[k]
                a += min(max(demand - a, -dt / release[k]), dt / build[k])
                a = min(max(a, 0.0), emergency_factor)
                applied[k] = a
                b_force = a * maxbrake[k]
            net = other - fwd * b_force
            F = Fs[k]
            q = 1.0
            if c.speed_target is not None:
                q = min(max((M[k] * (c.speed_target - vk) / dt - net) / F, 0.0), 1.0) if F > 0 else 0.0
            scale[k] = q * taper_factor(F * q, net, M[k], vk, vmax[k], dt) * thr[k]
        self.brake_applied[:] = applied
        applied = self.brake_applied
        sc = np.array(scale)
        # (what np.where(thr > 0, thr, 1) and the division gave, in Python floats)
        ratio = [q / (t if t > 0 else 1.0) for q, t in zip(scale, thr)]
        full = m.max_brake if mb_car is None else mb_car
        if len(ratio) == 1:  # (one train: its factors as scalars, the same products)
            trac = trac0 * ratio[0]
            brk = full * (0.0 if self.train_decel_mode_l[0] else float(applied[0]))
        else:
            trac = trac0 * np.array(ratio, dtype=np.float64)[ct]
            brk = (
                full
                * (applied if not self._any_decel_mode else np.where(self.train_decel_mode, 0.0, applied))[ct]
            )
        if any_decel:
            opp = forces.opposing_resistance(v, dav, crv, grav)
            dc = np.array(decel_car)[ct]
            brk = brk + np.maximum(self._inertial * dc - opp, 0.0) * (dc > 0)
        return trac, brk, sc, applied

    def _traction_and_brakes_batch(
        self,
        ctl: _ControlArrays,
        x: np.ndarray,
        v: np.ndarray,
        vk: np.ndarray,
        grav: np.ndarray,
        dav: np.ndarray,
        crv: np.ndarray,
        dt: float,
        resist: np.ndarray | None = None,
    ):
        """:meth:`_traction_and_brakes` with the per-train part as numpy calls over all
        trains (the controls as arrays): every branch of the scalar loop is an
        ``np.where`` of the same IEEE operations in the same order, so the forces are the
        same bits (docs/running-time.md §2.1). Python's ``min(x, c)`` / ``max(x, c)``
        are ``np.minimum`` / ``np.maximum`` where they agree: both keep a NaN ``x``, and
        they differ only on a tie of two zeros of different sign (``max(-0.0, 0.0)`` is
        −0.0 in Python), so :func:`_pmax` stands where such a zero could reach a result."""
        m = self.model
        ct = self.car_train
        tgt = ctl.target
        has_t = tgt == tgt  # (not NaN: a speed target)
        thr = np.where(has_t, 1.0, ctl.throttle)
        trac0 = self._engine_traction(thr, v)
        n = len(v)
        if resist is None:
            resist = dav + crv
        self._last_forces = (grav, resist)
        rows = np.concatenate((trac0, grav, resist)).reshape(3, n)
        F, Gs, Rs = np.add.reduceat(rows, self.train_start, axis=1)
        M = self.train_inertia
        applied = self.brake_applied
        maxbrake = self.train_maxbrake
        mb_car = self._forces.max_brake(v)
        if mb_car is not None:
            maxbrake = np.maximum(np.add.reduceat(mb_car, self.train_start), 1.0)
        emergency = forces.EMERGENCY_FACTOR
        if self._batch_dt != dt:
            self._batch_dt = dt
            self._release_step = -dt / self.train_release
            self._build_step = dt / self.train_build
        kernel = None if self._any_decel_mode else _CONTROLS()
        if kernel is not None:  # (the same numbers train by train, compiled)
            a, scale, ratio = np.empty(len(vk)), np.empty(len(vk)), np.empty(len(vk))
            kernel(
                vk, Gs, Rs, F, M, tgt, ctl.brake, ctl.deceleration, ctl.emergency, ctl.throttle,
                applied, maxbrake, self._release_step, self._build_step, self.train_vmax, dt,
                emergency, forces.TAPER_MS, a, scale, ratio,
            )  # fmt: skip
            self.brake_applied = a
            trac = trac0 * ratio[ct]
            brk = (m.max_brake if mb_car is None else mb_car) * a[ct]
            return trac, brk, scale, a
        with np.errstate(all="ignore"):  # the branches not taken may divide by 0
            fwd = np.where(vk < 0.0, -1.0, 1.0)
            other = Gs - fwd * Rs
            f_other = fwd * other
            reach_t = M * (tgt - vk) / dt  # (NaN without a target)
            # brakes to hold the target when no traction would run over it (only > 0 counts)
            hold = np.maximum(f_other - reach_t, 0.0)
            held = hold > 0.0
            # force mode: a fraction of the brake force, built up and released (the
            # applied fraction is never −0.0: it starts at +0.0 and only adds steps)
            demand = np.where(
                (ctl.brake > 0) | (ctl.deceleration <= 0),
                ctl.brake,
                np.minimum(np.maximum((M * ctl.deceleration + f_other) / maxbrake, 0.0), 1.0),
            )
            demand = np.where(held, np.minimum(hold / maxbrake, 1.0), demand)
            demand = np.where(ctl.emergency, emergency, demand)
            a = applied + np.minimum(np.maximum(demand - applied, self._release_step), self._build_step)
            a = np.minimum(np.maximum(a, 0.0), emergency)
            b_force = a * maxbrake
            decel_on = None
            if self._any_decel_mode:
                # deceleration mode: the hourly model's deceleration
                dmode = self.train_decel_mode
                a_b = np.where(ctl.deceleration > 0, ctl.deceleration, ctl.brake * self.train_spec_decel)
                a_b = np.where(held, hold / M - f_other / M, a_b)
                decel_on = dmode & (a_b > 0)
                b_dec = np.where(decel_on, _pmax(M * a_b + f_other, 0.0), 0.0)
                a = np.where(dmode, applied, a)
                b_force = np.where(dmode, b_dec, b_force)
            net = other - fwd * b_force
            q = np.where(F > 0, np.minimum(_pmax((reach_t - net) / F, 0.0), 1.0), 0.0)
            q = np.where(has_t, q, 1.0)
            scale = q * _taper_factors(F * q, net, M, vk, self.train_vmax, dt) * thr
            ratio = scale / np.where(thr > 0, thr, 1.0)
        self.brake_applied = a
        trac = trac0 * ratio[ct]
        brk = (m.max_brake if mb_car is None else mb_car) * (
            a if decel_on is None else np.where(self.train_decel_mode, 0.0, a)
        )[ct]
        if decel_on is not None and np.logical_or.reduce(decel_on):
            opp = forces.opposing_resistance(v, dav, crv, grav)
            dc = np.where(decel_on, a_b, 0.0)[ct]
            brk = brk + np.maximum(self._inertial * dc - opp, 0.0) * (dc > 0)
        return trac, brk, scale, a

    def throw_switch(self, junction: int, route: int) -> None:
        """Throw a switch now: cars whose bogies straddle it on a line that takes the
        other route derail (their bogies would take different routes)."""
        self.switches.set(junction, route)
        sig = getattr(self, "signals", None)
        if sig is not None:
            sig.ilk.set_switch(junction, route)  # the interlocking walks the switches as set
        self._event(SwitchThrow(time=self.time, junction=junction, route=route))
        on = self.on_track()  # a train not in the world (yet, or any more) is not under it
        bogies = [t.bogies for k, t in enumerate(self.trains) if on is None or on[k]]
        for ev in throw_switch(bogies, junction, route, self.time):
            self._safety(ev)

    def _done(self, t: _Train, dt: float, speed: float) -> None:
        if t.done_at is not None:
            return
        drv = getattr(t.driver, "inner", t.driver)
        if isinstance(drv, AutoDriver) and drv.finished:
            t.done_at = self.time
            self._event(
                Arrived(
                    time=self.time, train=t.spec.name, distance=float(self.engine.x[t.cars][0] - t.front0)
                )
            )
            return
        if t.derailed:
            if speed < 1e-3:
                t.done_at = self.time
            return
        if isinstance(drv, ScheduleDriver):
            last = drv.at[-1] if drv.at else 0.0
            key = self.time if drv.by == "time" else float(self.engine.x[t.cars][0] - t.front0)
            t.stopped_for = t.stopped_for + dt if speed < 1e-3 else 0.0
            if key >= last and t.stopped_for >= 10.0 and t.controls.throttle == 0.0:
                t.done_at = self.time - t.stopped_for
                self._event(TrainStopped(time=t.done_at, train=t.spec.name))

    def _engine_events(self, evs: list) -> None:
        """The engine's events of one step as replay events; their locations are looked up
        for every line at once (many trains' slack runs out in the same step), and the
        per-event Python is only the records' own making (a burst is thousands)."""
        x = self.engine.x
        # A slack closing at a walking pace (brakes or traction changing by a few per cent
        # per step) is a contact change, not a snatch or an impact; their number would
        # only follow the step (docs/running-time.md §7).
        evs = [
            e
            for e in evs
            if not (e.kind in ("coupler_taut", "impact") and abs(float(e.relative_speed)) < MIN_EVENT_SPEED)
        ]
        if not evs:
            return
        # per car: its train's name and its index in the train, as the events name it
        # (made at the first event: the cars do not change trains)
        pairs = self._car_names
        if pairs is None:
            first = np.asarray(self.train_start)[self.car_train]
            idx = (np.arange(len(self.car_train)) - first).tolist()
            names_of = self._names
            pairs = self._car_names = [(names_of[k], i) for k, i in zip(self.car_train.tolist(), idx)]
        # the events are frozen: their locations are looked up first (every line at once),
        # then they are made
        located = [i for i, e in enumerate(evs) if len(e.cars)]
        where: list[EventLocation | None] = [None] * len(evs)
        if located:
            car = np.array([int(evs[i].cars[0]) for i in located], dtype=np.int64)
            k = self.car_train[car]
            # min(max(x, 0.0), length) as Python's builtins (the same zeros and NaN)
            s = _pmin(_pmax(x[car], 0.0), self._train_line_len[k])
            node, X, Z, y = self.lines.on_lines(self._train_line[k], s)
            tx, tz, lx, lz = normalize_tile(0, 0, X, Z)
            for i, n_, tx_, tz_, x_, y_, z_ in zip(
                located,
                map(int, node.tolist()),
                map(int, tx.tolist()),
                map(int, tz.tolist()),
                map(float, lx.tolist()),
                map(float, y.tolist()),
                map(float, lz.tolist()),
            ):
                where[i] = EventLocation(node=n_, tile_x=tx_, tile_z=tz_, x=x_, y=y_, z=z_)
        event = self._event
        for e, loc in zip(evs, where):
            event(
                CAR_EVENTS[e.kind](
                    time=float(e.time),
                    cars=tuple(map(pairs.__getitem__, e.cars)),
                    relative_speed=float(e.relative_speed),
                    impulse=float(e.impulse),
                    energy_lost=float(e.energy_lost),
                    location=loc,
                )
            )

    def _safety(self, ev: SafetyEvent) -> None:
        loc = ev.location
        self._event(
            SAFETY_EVENTS[ev.kind](
                time=float(ev.time),
                train=str(ev.train),
                cars=tuple(ev.cars),
                node=int(ev.node),
                message=ev.cause,
                location=EventLocation(tile_x=loc.tile_x, tile_z=loc.tile_z, x=loc.x, y=loc.y, z=loc.z),
                other_train=str(ev.other_train) if ev.other_train is not None else None,
                other_cars=tuple(ev.other_cars) if ev.other_train is not None else None,
                closing_speed=float(ev.closing_speed) if ev.closing_speed is not None else None,
            )
        )
        if ev.kind == "derailment":
            for t in self.trains:
                if t.spec.name == ev.train:
                    t.derailed = True

    def engine_line_key(self, spec: TrainSpec, key: object) -> object:
        """Trains with equal keys share one line of the 1-D engine and meet there
        (default: trains on the same path)."""
        return key

    def on_track(self) -> np.ndarray | None:
        """Which trains are on the track now (None: all). Subclasses that start trains
        late or take them off at the end of their run say so here."""
        return None

    #: Pad (m) around the trains' boxes: trains closer than that are watched (the
    #: side-collision clearance and then some; docs/physics.md §5.4).
    CHECK_PAD = 10.0
    #: Above the rounding of a global-table lookup against a line's own (m).
    CHECK_SLOP = 0.01

    def _position(self, k: int) -> TrainPosition:
        """Train ``k``'s position at the last collision check."""
        t = self.trains[k]
        x, v = self._checked
        sl = t.cars
        return TrainPosition(t.spec.name, t.line, x[sl], self.bodies.length[sl], v[sl])

    def _check_collisions(self) -> None:
        """Track occupancy and side collisions (docs/physics.md §5.4). The trains whose
        boxes come close are watched (the occupancy's trains: one box per train, over
        every car's front and rear); of those, the exact checks take only the trains that
        may collide with, or touch the side of, a train on another line."""
        if len(self.trains) < 2:
            return
        x = np.array(self.engine.x)
        self._checked = (x, np.array(self.engine.v))
        length = self.bodies.length
        # Every car's rear and front (clipped onto its line) in one lookup per
        # coordinate: the cars backwards, so that each train's points rise along the
        # table and np.interp finds each next to the last (the numbers do not depend
        # on the order).
        lo = np.minimum(np.maximum(x - length, 0.0), self.car_line_len)
        hi = np.minimum(np.maximum(x, 0.0), self.car_line_len)
        g = np.stack([lo, hi], axis=1)
        g += self.car_base[:, None]
        X, Z = self.lines.world_xz(g[::-1].reshape(-1), "car ends")
        rx, fx = X.reshape(-1, 2)[::-1].T
        rz, fz = Z.reshape(-1, 2)[::-1].T
        starts = self.train_start
        lo_x = np.minimum(np.minimum.reduceat(fx, starts), np.minimum.reduceat(rx, starts))
        hi_x = np.maximum(np.maximum.reduceat(fx, starts), np.maximum.reduceat(rx, starts))
        lo_z = np.minimum(np.minimum.reduceat(fz, starts), np.minimum.reduceat(rz, starts))
        hi_z = np.maximum(np.maximum.reduceat(fz, starts), np.maximum.reduceat(rz, starts))
        pad = self.CHECK_PAD
        active = self.on_track()
        near_mask = np.zeros(len(self.trains), dtype=bool)
        on = None if active is None else np.flatnonzero(active)  # (off the track: meet nothing)
        box = (lo_x, hi_x, lo_z, hi_z) if on is None else (lo_x[on], hi_x[on], lo_z[on], hi_z[on])
        sweep = self.lines.boxes_near
        if sweep is not None:  # (the same trains, compiled)
            near_on = sweep(*box, pad, np.argsort(box[0], kind="stable"))
            near_mask[near_on if on is None else on[near_on]] = True
        else:
            ii, jj = box_pairs(*box, pad)
            if on is not None:
                ii, jj = on[ii], on[jj]
            near_mask[ii] = True
            near_mask[jj] = True
        near = np.flatnonzero(near_mask).tolist()
        occ = self.occupancy
        names = self._names
        near_names = {names[k] for k in near}
        for name in occ.watched():
            if name in self._name_set and name not in near_names:
                occ.remove(name)
        for k in near:
            occ.update_lazy(names[k], self._position_of[k])
        if len(near) < 2:
            return
        collide, side = self._close_trains(near_mask, x, g, (rx, fx, rz, fz))
        for ev in occ.check_among(self.time, collide, side):
            self._safety(ev)

    def _close_trains(self, near: np.ndarray, x: np.ndarray, g: np.ndarray, ends: tuple) -> tuple[set, set]:
        """Of the watched trains (``near``), those that may collide with a watched train
        on another line, and those that may touch one side by side: conservative supersets
        of the trains in the events of :func:`~tdbtools.physics.safety.collisions` and
        :func:`~tdbtools.physics.safety.side_collisions` (docs/physics.md §5.4). ``g``:
        every car's rear and front on the global table, ``ends``: their world X and Z
        (rear X, front X, rear Z, front Z)."""
        names = self._names
        cars = np.flatnonzero(near[self.car_train])
        # the cars' middles (of the part on the line, as side_collisions takes them)
        mx, mz = self.lines.world_xz(((g[cars, 0] + g[cars, 1]) / 2.0)[::-1], "car middles")
        rx, fx, rz, fz = (c[cars] for c in ends)
        X = np.stack([rx, mx[::-1], fx], axis=1)
        Z = np.stack([rz, mz[::-1], fz], axis=1)
        return (
            {names[k] for k in self._sharing_a_node(np.flatnonzero(near), x)},
            {names[k] for k in self._side_by_side(cars, X, Z)},
        )

    def _sharing_a_node(self, trains: np.ndarray, x: np.ndarray) -> list[int]:
        """Trains that pass a track node a train on another line passes between its rear
        and front: the node traversals of :meth:`TrackLine.occupancy`, found on the global
        table, one more at each end for the rounding of the global distance."""
        lines = self.lines
        slop = self.CHECK_SLOP
        shared, line_shares = self._shared_rows()
        # only a node on two lines can be passed by trains of two lines: the others'
        # traversals make no pair (the same pairs, fewer rows)
        trains = trains[line_shares[self._train_line[trains]]]
        if len(trains) < 2:
            return []
        ln = self._train_line[trains]
        base = np.asarray(lines.base)[ln]
        front = x[self.train_start[trains]]
        rear = x[self.train_end[trains]] - self.bodies.length[self.train_end[trains]]
        L = self._train_line_len[trains]
        a = np.maximum(np.minimum(front, rear), 0.0)
        b = np.minimum(np.maximum(front, rear), L)
        on = a <= b  # else the train is off its line: no interval
        first, last = lines.seg_first[ln], lines.seg_first[ln + 1] - 1
        i0 = np.maximum(np.searchsorted(lines.SEG1, a + base, side="right") - 1, first)
        i1 = np.minimum(np.searchsorted(lines.SEG1, b + base, side="left") + 1, last)
        i0, i1 = np.minimum(i0, last), np.maximum(i1, first)
        cnt = np.where(on, i1 - i0 + 1, 0)
        tot = int(cnt.sum())
        if not tot:
            return []
        who = np.repeat(np.arange(len(trains)), cnt)
        row = np.repeat(i0, cnt) + (np.arange(tot) - np.repeat(np.cumsum(cnt) - cnt, cnt))
        # the node interval each traversal holds (as occupancy works it out, on global
        # distances): traversals the rounding allowance added fall away here
        lo = np.maximum(np.repeat(a + base, cnt), lines.SEG0[row])
        hi = np.minimum(np.repeat(b + base, cnt), lines.SEG1[row])
        keep = hi >= lo - slop
        keep &= shared[row]
        row, who, lo, hi = row[keep], who[keep], lo[keep], hi[keep]
        sg = np.where(lines.SEG_DIR[row] == 1, 1.0, -1.0)
        o_lo = lines.SEG_OFF0[row] + sg * (lo - lines.SEG0[row])
        o_hi = lines.SEG_OFF0[row] + sg * (hi - lines.SEG0[row])
        o_lo, o_hi = np.minimum(o_lo, o_hi), np.maximum(o_lo, o_hi)
        node = lines.SEG_NODE[row]
        tot = len(node)
        order = np.lexsort((who, node))
        node, who, o_lo, o_hi = node[order], who[order], o_lo[order], o_hi[order]
        end = np.searchsorted(node, node, side="right")
        c = end - np.arange(tot) - 1  # later entries on the same node
        m = int(c.sum())
        if not m:
            return []
        p = np.repeat(np.arange(tot), c)
        q = p + 1 + (np.arange(m) - np.repeat(np.cumsum(c) - c, c))
        ta, tb = trains[who[p]], trains[who[q]]
        other = self._train_line[ta] != self._train_line[tb]
        other &= np.minimum(o_hi[p], o_hi[q]) - np.maximum(o_lo[p], o_lo[q]) > -slop  # overlapping
        return np.union1d(ta[other], tb[other]).tolist()

    def _shared_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Which node traversals of the global table (rows) are on a node that another
        line also passes, and which lines have any (made once: the lines do not change)."""
        lines = self.lines
        got = self.__dict__.get("_shared")
        if got is not None and got[0] is lines:
            return got[1], got[2]
        n_lines = len(lines.seg_first) - 1
        row_line = np.repeat(np.arange(n_lines), np.diff(lines.seg_first))
        node_line = np.unique(np.stack([lines.SEG_NODE.astype(np.int64), row_line], axis=1), axis=0)
        nodes, count = np.unique(node_line[:, 0], return_counts=True)
        shared = np.isin(lines.SEG_NODE, nodes[count > 1])
        line_shares = np.zeros(n_lines, dtype=bool)
        line_shares[row_line[shared]] = True
        self.__dict__["_shared"] = (lines, shared, line_shares)
        return shared, line_shares

    def _side_by_side(self, cars: np.ndarray, X: np.ndarray, Z: np.ndarray) -> list[int]:
        """Trains with a car whose chord (rear → middle → front, the points
        side_collisions takes: the car clipped onto its line; ``X``, ``Z`` of ``cars``)
        comes within the clearance of a car on another line."""
        owner = self.car_train[cars]
        ii, jj = chords_within(
            np.stack([X, Z], axis=2), DEFAULT_CLEARANCE_M + self.CHECK_SLOP, self._train_line[owner], owner
        )
        if not len(ii):
            return []
        return np.union1d(owner[ii], owner[jj]).tolist()

    def _trace(self, trac: np.ndarray, brk: np.ndarray) -> None:
        """Record one trace row of every train: the state columns now, in one go over all
        trains; the columns that depend only on the position along the line (node,
        offset, world location, grade) are looked up per train at the end (_columns)."""
        x, v = self.engine.x, self.engine.v
        starts = self.train_start
        xf = x[starts]
        s_front = np.minimum(np.maximum(xf, 0.0), self._train_line_len)
        speed = v[starts]
        # what the traction and the brakes gave: a fraction of full traction and of the
        # train's brake force
        throttle = np.array(self._scale, dtype=np.float64)
        brake = (
            np.minimum(np.add.reduceat(brk, starts) / self.train_maxbrake, 1.0)
            if len(brk)
            else np.zeros(len(starts))
        )
        prev = self._trace_rows[-1] if self._trace_rows else None
        if prev is not None and self.time > prev.time:
            acc = (speed - prev.speed) / (self.time - prev.time)
        else:
            acc = np.zeros(len(starts))
        self._trace_rows.append(
            _TraceRow(self.time, xf - self._train_front0, speed, acc, throttle, brake, s_front)
        )
        if self.cars_trace:
            # gap[i] is the joint behind car i (n − 1 of them): the last car of a
            # train has none towards the next train.
            gap_all = np.append(self.engine.gap, np.nan)
            for t in self.trains:
                sl = t.cars
                gaps = gap_all[sl].copy()
                gaps[-1] = np.nan
                for i in range(sl.stop - sl.start):
                    t.car_rows.append(
                        (
                            self.time,
                            i,
                            float(x[sl][i]),
                            float(v[sl][i]),
                            float(gaps[i]),
                            float(trac[sl][i] - brk[sl][i]),
                        )
                    )

    def _columns(self) -> dict[str, dict[str, np.ndarray]]:
        """The trace columns of every train (TRACE_COLUMNS) from the recorded rows."""
        rows = self._trace_rows
        if not rows:
            return {t.spec.name: {k: np.array([]) for k in TRACE_COLUMNS} for t in self.trains}
        times = np.array([r.time for r in rows], dtype=np.float64)
        stack = {f: np.stack([getattr(r, f) for r in rows]) for f in _TraceRow.PER_TRAIN}
        # the trains of one line looked up in one call (TrackLine.at is elementwise)
        of_line: dict[int, list[int]] = {}
        for k, t in enumerate(self.trains):
            of_line.setdefault(id(t.line), []).append(k)
        ats: list[dict] = [{}] * len(self.trains)
        R = len(times)
        for ks in of_line.values():
            both = self.trains[ks[0]].line.at(stack["s_front"][:, ks].T.ravel())
            for j, k in enumerate(ks):
                ats[k] = {c: a[j * R : (j + 1) * R] for c, a in both.items()}
        out = {}
        for k, t in enumerate(self.trains):
            at = ats[k]
            out[t.spec.name] = {
                "time": times,
                "distance": stack["distance"][:, k],
                "speed": stack["speed"][:, k],
                "acceleration": stack["acceleration"][:, k],
                "throttle": stack["throttle"][:, k],
                "brake": stack["brake"][:, k],
                "node": np.asarray(at["node"], dtype=np.int64),
                "offset": np.asarray(at["offset"], dtype=np.float64),
                "tile_x": np.asarray(at["tile_x"], dtype=np.int64),
                "tile_z": np.asarray(at["tile_z"], dtype=np.int64),
                "x": np.asarray(at["x"], dtype=np.float64),
                "y": np.asarray(at["y"], dtype=np.float64),
                "z": np.asarray(at["z"], dtype=np.float64),
                "grade_permille": 1000.0 * np.asarray(at["grade"], dtype=np.float64),
            }
        return out

    def finished(self) -> bool:
        return all(t.done_at is not None for t in self.trains)

    def run(self, progress: Callable[[float], None] | None = None) -> ReplayResult:
        wall = _time.perf_counter()
        with _older_objects_frozen():
            self._trace(np.zeros(len(self.engine.x)), np.zeros(len(self.engine.x)))
            self._next_trace = self.trace_every
            self._check_collisions()
            self._next_check = self.scenario.collision_check_interval
            last_report = 0.0
            while self.time < self.scenario.duration - 1e-9 and not self.finished():
                self.step()
                if progress is not None and self.time - last_report >= 1.0:
                    progress(self.time)
                    last_report = self.time
            return self._result(_time.perf_counter() - wall)

    def _result(self, wall: float) -> ReplayResult:
        cars: dict[str, dict[str, np.ndarray]] = {}
        trains_summary: dict[str, dict] = {}
        summary: dict = {
            "scenario": self.scenario.source,
            "route": self.route.name,
            "simulated_seconds": round(self.time, 6),
            "wall_seconds": round(wall, 3),
            "trains": trains_summary,
        }
        summary["realtime_factor"] = round(self.time / wall, 1) if wall > 0 else None
        traces = self._columns()
        # every event's kind under each train it names (one pass over the events)
        kinds_of: dict[str, list[str]] = {}
        for e in self.events:
            train = getattr(e, "train", None)
            named = dict.fromkeys([train] if train is not None else [])
            if isinstance(e, CarEvent):
                for c in e.cars:
                    named[c[0]] = None
            for name in named:
                kinds_of.setdefault(name, []).append(e.kind)
        if self.signals is not None:
            summary["signalling"] = self.signals.summary()
        for t in self.trains:
            sl = t.cars
            t.traction_j = float(self._trac_car[sl].sum())
            t.braking_j = float(self._brake_car[sl].sum())
            t.max_speed = float(self._vmax_car[sl].max())
            if self.cars_trace and t.car_rows:
                cc = list(zip(*t.car_rows))
                cars[t.spec.name] = {k: np.array(c) for k, c in zip(CAR_COLUMNS, cc)}
            kinds = kinds_of.get(t.spec.name, [])
            summary["trains"][t.spec.name] = {
                "consist": t.consist.name,
                "cars": t.cars.stop - t.cars.start,
                "category": t.category,
                "mass_t": round(float(t.model.mass.sum()) / 1000.0, 3),
                "length_m": round(t.length, 3),
                "running_time_s": round(t.done_at if t.done_at is not None else self.time, 3),
                "finished": t.done_at is not None,
                "derailed": t.derailed,
                "distance_m": round(float(self.engine.x[t.cars][0] - t.front0), 3),
                "max_speed_kmh": round(t.max_speed * 3.6, 3),
                "traction_energy_kwh": round(t.traction_j / 3.6e6, 4),
                "braking_energy_kwh": round(t.braking_j / 3.6e6, 4),
                "events": {k: kinds.count(k) for k in sorted(set(kinds))},
            }
            if t.allowance is not None:
                trains_summary[t.spec.name]["allowance"] = t.allowance
        return ReplayResult(self.scenario.source, traces, cars, tuple(self.events), summary, wall)


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


__all__ = ["Replay", "ReplayError", "ReplayResult", "replay"]
