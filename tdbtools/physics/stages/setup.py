"""The set-up stage of a replay: the trains placed on their lines, their consists read,
their drivers made, and the shared layout (cars, lines, bogies) every other stage reads.

Nothing here runs per step. :func:`build` places the trains and makes the 1-D engine;
:class:`Layout` holds what the stages share about where every car and train is in the
engine's arrays and on the global line table (docs/development.md §2).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import Diagnostics, RouteError, TdbToolsError
from ...formats.consist import Consist, read_consist, resolve_stock
from ...formats.route import Route
from ...formats.stock import Stock
from ...track.pathnodes import PathNodeError, check_path, wait_order
from .. import forces, kernels
from ..driver import AutoDriver, Controls, DriveState, ScheduleDriver, Stop
from ..engine import Bodies, Engine
from ..reversal import reverse_consist
from ..safety import BogieSet
from ..scenario import Scenario, TrainSpec, resolve_file
from ..signalling import SignalDriver, wrap_driver
from ..trackline import TrackLine
from .linetable import LineTable
from .policy import ReplayPolicy


class ReplayError(TdbToolsError, ValueError):
    """A replay that cannot start (no consist, no path, a train that does not fit)."""


class Changes:
    """A replay's count of the changes to its trains' drivers and their derailed and done
    flags: the driving stage re-reads those of all trains only when it moved
    (docs/running-time.md §2.1). Only :class:`Train`'s methods bump it."""

    __slots__ = ("version",)

    def __init__(self) -> None:
        self.version = 0


@dataclass(slots=True, eq=False)
class Train:
    """One train of a replay. Its driver and its derailed and done flags are read-only
    properties, set through :meth:`replace_driver`, :meth:`derail` and :meth:`finish`:
    each bumps the replay's :class:`Changes` (a plain assignment is an error, not a
    stale cache)."""

    spec: TrainSpec
    consist: Consist
    model: forces.CarModel
    line: TrackLine
    line_id: int
    cars: slice  # this train's rows in the engine arrays
    _driver: Callable[[DriveState], Controls]
    bogies: BogieSet
    front0: float
    length: float
    end_s: float | None  # where the path ends on the line (auto driver stops there)
    changes: Changes
    auto: AutoDriver | None = None  # the automatic driver inside the driver, if any
    signal_driver: SignalDriver | None = None  # the wrapper the signals steer, if any
    controls: Controls = field(default_factory=Controls)
    traction_j: float = 0.0
    braking_j: float = 0.0
    max_speed: float = 0.0
    _done_at: float | None = None
    _derailed: bool = False
    stopped_for: float = 0.0
    warnings: list = field(default_factory=list)
    category: str = "passenger"
    waits: list = field(default_factory=list)  # (line distance, seconds): waiting points
    allowance: dict | None = None  # what the running-time allowance did
    stocks: tuple[Stock, ...] = ()  # the cars' stock, front to back (the Open Rails profile reads it)
    #: the Open Rails profile's brake plan (``orts/auto_brakes.brake_plan``), made once
    #: for the automatic driver and the brakes (None: not made)
    orts_plan: Any = None

    @property
    def driver(self) -> Callable[[DriveState], Controls]:
        return self._driver

    @property
    def done_at(self) -> float | None:
        """When the train finished (arrived, stopped for good, stuck, taken off)."""
        return self._done_at

    @property
    def derailed(self) -> bool:
        return self._derailed

    def replace_driver(self, driver: Callable[[DriveState], Controls]) -> None:
        self._driver = driver
        self.changes.version += 1

    def finish(self, at: float) -> None:
        self._done_at = at
        self.changes.version += 1

    def derail(self) -> None:
        self._derailed = True
        self.changes.version += 1


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
            try:
                res, _notes = check_path(route, pat)
            except PathNodeError as exc:
                raise PathNodeError(
                    f"train {spec.name!r}: {exc.message}", exc.location, exc.snippet
                ) from None
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


def path_waits(pat: Path, res, line: TrackLine) -> list[tuple[float, float, int | None]]:  # noqa: ANN001
    """The waiting points of a path on its line: (line distance, seconds, clock time to
    wait until or None), read as Open Rails reads them (:func:`~tdbtools.track.pathnodes.wait_order`).
    A point is where its leg starts; only the first part of a path with reversals counts
    here (an activity runs the later parts: :mod:`~tdbtools.physics.wholepath`)."""
    from ...formats.pat import read_pat

    pf = read_pat(pat, diagnostics=Diagnostics(strict=False))
    chain = list(pf.main_chain())
    out = []
    s = 0.0
    for leg in res.legs:
        if leg.from_point in res.reversals and leg.from_point > 0:
            break
        if 0 < leg.from_point < len(chain):
            w = pf.nodes[chain[leg.from_point]].wait_seconds
            if w is not None:
                order = wait_order(w)
                out.append((s, order.seconds, order.until))
        s += leg.length
    return [x for x in out if x[0] <= line.path_length + 1e-6]


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


#: scenario gives none: UIC brake positions P (passenger) and G (freight), roughly.
BUILD_UP_S = {"passenger": 4.0, "freight": 20.0}
#: Releasing takes this many times the build-up time.
RELEASE_OVER_BUILD_UP = 1.5


def build_up(t: Train) -> float:
    b = t.spec.brake_build_up
    return float(b) if b is not None else BUILD_UP_S.get(t.category, 4.0)


#: The share of a full-service application's deceleration the automatic driver plans
#: with under the Open Rails profile (the rest is its margin for the build-up it cannot
#: see exactly: the cars' valves do not all apply together).
ORTS_PLAN_SHARE = 0.75
#: Under the Open Rails profile a train standing this close before its stopping point
#: (m) has arrived: its brakes lag too much for the last metre (docs/physics.md §7.9).
ORTS_ARRIVED_WITHIN = 5.0


def _plan_orts_brakes(t: Train, d: AutoDriver) -> None:
    """The Open Rails profile's brakes lag (pipe, valves, cylinders: about 70 s to full
    with AirSinglePipe's default 0.9 psi/s) and their force follows the shoes' friction
    curve: the driver starts braking the measured lag earlier and plans at each speed
    with a share of the full-service deceleration there (docs/physics.md §7.9)."""
    from ..orts.auto_brakes import StopGain, brake_plan

    plan = t.orts_plan = brake_plan(t.stocks)
    m = t.model
    davis0, inertia = float(forces.davis(m, 0.0).sum()), float(m.inertial_mass.sum())
    planned = t.spec.deceleration
    d.brake_delay = plan.lag_s
    full0 = (plan.full_force(0.0) + davis0) / inertia
    d.brake_level = full0
    d.decel = min(planned, ORTS_PLAN_SHARE * full0)

    def brakes_at(v: float) -> tuple[float, float]:
        full = (plan.full_force(v) + davis0) / inertia
        return min(planned, ORTS_PLAN_SHARE * full), full

    d.brakes_at = brakes_at
    d.ARRIVED_WITHIN = ORTS_ARRIVED_WITHIN
    d.lap_brakes = True
    d.stop_gain = StopGain(plan, davis0, inertia)
    d.release_over_build = plan.release_over_build


def setup_driver(t: Train, adhesion: str | None, physics: str = "engineering") -> None:
    """Tell the automatic driver what the replay knows: the train length, the braking it
    can count on in force mode (``physics="openrails"``: the Open Rails brakes'), waiting
    points, the allowance."""
    d = t.auto
    if d is None:
        return
    d.train_length = t.length
    d.train = t.spec.name
    if physics == "openrails":
        _plan_orts_brakes(t, d)
    elif t.spec.brake_mode == "force":
        # Plan with what the brakes give on the level, with a margin, and start braking
        # half a build-up time earlier (a linear build-up is a dead time of T/2).
        # With brake-shoe friction curves, the least brake force up to the fastest the
        # driver will go (docs/physics.md §3.5).
        m = t.model
        v_top = min(d.max_speed, max(d.limit_v, default=float("inf")))
        brakes = forces.brake_force_floor(m, v_top)
        level = (brakes + float(forces.davis(m, 0.0).sum())) / float(m.inertial_mass.sum())
        d.decel = min(d.decel, 0.9 * level)
        d.brake_delay = 0.5 * build_up(t)
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
    for s_at, wait, until in t.waits:
        if s_at > t.front0 + AutoDriver.ARRIVED_WITHIN:  # not behind the front at the start
            d.stops.append(Stop(s_at, wait, "waiting point", until=until))
    d.stops.sort(key=lambda p: p.s)
    if t.spec.allowance or t.spec.allowance_min_per_100km:
        from ..runtime import fit_allowance

        spec = t.spec
        figures, warns = fit_allowance(
            d,
            t.model,
            t.line,
            t.front0,
            adhesion=adhesion,
            percent=spec.allowance,
            min_per_100km=spec.allowance_min_per_100km,
            mode=spec.allowance_mode,
        )
        t.warnings.extend(warns)
        if figures is not None:
            t.allowance = figures


def read_consist_stock(
    spec: TrainSpec, route: Route, sdir: Path, stand_in: bool, scenario: Scenario, diags: Diagnostics
) -> _ConsistStock:
    """A train's consist with its stock, car model and coupler slack."""
    consist = _consist(spec, route, sdir)
    if spec.turned:  # after a reversal the rear car leads (docs/activities.md §4.4)
        consist = reverse_consist(consist)
    try:
        import warnings

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            stocks = resolve_stock(consist, _stock_root(consist, route), stand_in=stand_in, diagnostics=diags)
    except RouteError as exc:
        raise ReplayError(
            f"train {spec.name!r}: {exc}\n(use --stand-in, or stand_in = true in the "
            "scenario, to run with generic stock of the same kind)"
        ) from None
    flipped = [c.flipped for c in consist.cars]
    model = forces.CarModel.from_stock(
        stocks, flipped, trailing_loco_factor=True, rotating_mass=bool(scenario.rotating_mass)
    )
    if consist.max_velocity:
        # The consist's MaxVelocity is a hard limit: no engine pulls beyond it.
        cap = np.where(model.is_engine, np.fmin(model.max_velocity, consist.max_velocity), model.max_velocity)
        model = dataclasses.replace(model, max_velocity=cap)
    # Coupler free play between buffers touching and coupler taut. Open Rails lets
    # a simple coupler's slack run from -slack2 to +slack2 (docs/formats.md §10.3, docs/physics.md §4), so the
    # whole play is 2·slack2 of the coupler each car uses.
    slack = np.array([2.0 * st.coupler(f).slack2 for st, f in zip(stocks, flipped)], dtype=np.float64)
    return _ConsistStock(
        consist, tuple(stocks), tuple(flipped), model, slack, tuple(str(w.message) for w in caught)
    )


def _orts_starting_resistance(placed: list[_Placement]) -> list[_Placement]:
    """Under the Open Rails profile every car starts against Open Rails' low-speed
    resistance (docs/physics.md §7.5, ``orts/resistance.py``), not only a file's, and
    weighs what Open Rails makes of its freight animations (``orts/mass.py``)."""
    from ..orts.mass import orts_mass
    from ..orts.resistance import starting_terms

    redone: dict[int, _ConsistStock] = {}
    for cs in (p.stock for p in placed):
        if id(cs) not in redone:
            f0, vm = starting_terms(cs.stocks)
            mass = np.array([orts_mass(s) for s in cs.stocks])
            model = dataclasses.replace(cs.model, starting_resistance=f0, merge_speed=vm, mass=mass)
            redone[id(cs)] = dataclasses.replace(cs, model=model)
    return [dataclasses.replace(p, stock=redone[id(p.stock)]) for p in placed]


def _place(
    scenario: Scenario,
    route: Route,
    sdir: Path,
    given_lines: dict[str, TrackLine] | None,
    policy: ReplayPolicy,
    diags: Diagnostics,
) -> tuple[list[_Placement], dict[str, list]]:
    """Every train on its engine line, the cars of a line front (largest distance) to back."""
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
            consists[ckey] = read_consist_stock(spec, route, sdir, stand_in, scenario, diags)
        stock = consists[ckey]
        key: tuple
        if given_lines and spec.name in given_lines:
            line = given_lines[spec.name]
            end_s, key = None, ("given", id(line))
        else:
            line, end_s, key = _line_for(spec, route, sdir, cache)
        waits_by_name[spec.name] = list(cache.get(("waits",) + key, [])) if spec.waiting_points else []
        ekey = policy.engine_line_key(spec, key)
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
        placed.append(_Placement(line_ids.setdefault(ekey, len(line_ids)), front0, spec, stock, line, end_s))
    placed.sort(key=lambda p: (p.line_id, -p.front0))
    return placed, waits_by_name


@dataclass(slots=True, eq=False)
class Layout:
    """What every stage reads about the trains and cars: the trains, the engine and its
    bodies, the global line table, and per car or per train where it sits in the
    engine's arrays and on the table. Built once; only the bogie measures (``fbrb``,
    ``fb``, ``rb``, views of one array) change, each step, as the cars move."""

    trains: list[Train]
    model: forces.CarModel  # every car of every train, in the engine's order
    inertial: np.ndarray  # the masses the engine moves (ρ·m: rotating parts included)
    bodies: Bodies
    engine: Engine
    lines: LineTable
    train_start: np.ndarray  # first car of each train
    train_end: np.ndarray  # last car of each train
    end_length: np.ndarray  # the length of each train's last car
    car_train: np.ndarray  # per car: its train
    car_base: np.ndarray  # per car: where its line starts on the table
    car_line_len: np.ndarray
    line_len_tol: np.ndarray  # a bogie beyond this is off its line
    car_far_end: np.ndarray  # per car: its line ends at a track end
    car_near_end: np.ndarray  # per car: its line starts at a track end
    train_line: np.ndarray  # per train: its line in the table
    train_line_len: np.ndarray
    train_front0: np.ndarray
    names: list[str]
    front_bogie: np.ndarray  # per car: its front bogie behind its front (m)
    half_length: np.ndarray
    # The bogie measures of every car, front and rear (the columns of fbrb): the
    # trains' BogieSets are views into them, updated in place each step.
    fbrb: np.ndarray
    fb: np.ndarray
    rb: np.ndarray
    # the replay's choice of code (kernels.replay_compiled): the kernels, or the numpy
    # reference they stand for (the same numbers)
    compiled: bool
    #: the physics profile the replay runs (Scenario.profile: by the stock if not given)
    physics: str = "engineering"
    rotating_mass: bool = True

    def bogies_at(self, x: np.ndarray) -> None:
        """Move every car's bogies to follow its front at ``x`` (docs/physics.md §5)."""
        np.subtract(x, self.front_bogie, out=self.fb)
        np.subtract(self.fb, self.model.bogie_spacing, out=self.rb)

    def g(self, s: np.ndarray) -> np.ndarray:
        """Global table distance of per-car line distances (clipped onto each line)."""
        return np.minimum(np.maximum(s, 0.0), self.car_line_len) + self.car_base  # (np.clip's ufuncs)


def build(
    scenario: Scenario,
    route: Route,
    *,
    given_lines: dict[str, TrackLine] | None,
    policy: ReplayPolicy,
    signalled: bool,
    adhesion: str | None,
    diags: Diagnostics,
) -> Layout:
    """Place the trains, read their consists, make their drivers and the 1-D engine."""
    sdir = (
        Path(scenario.source).parent if scenario.source and not scenario.source.startswith("<") else Path(".")
    )
    placed, waits_by_name = _place(scenario, route, sdir, given_lines, policy, diags)
    physics, rotating = scenario.profile(any(p.stock.warnings for p in placed))
    if physics != "openrails":
        for p in placed:
            if any(c.dynamic > 0 for c in p.spec.schedule):
                raise ReplayError(
                    f"train {p.spec.name!r}: the schedule asks for the dynamic brake, which only "
                    'physics = "openrails" has (docs/physics.md §7.2)'
                )
    if rotating != bool(scenario.rotating_mass):
        # the models were read before the profile was known (it depends on the stock)
        redone: dict[int, _ConsistStock] = {}
        for cs in (p.stock for p in placed):
            if id(cs) not in redone:
                m = cs.model
                factors = np.where(m.is_engine, forces.ROTATING_MASS_ENGINE, forces.ROTATING_MASS_CAR)
                redone[id(cs)] = dataclasses.replace(
                    cs, model=dataclasses.replace(m, rotating_mass=factors if rotating else np.ones(len(m)))
                )
        placed = [dataclasses.replace(p, stock=redone[id(p.stock)]) for p in placed]
    if physics == "openrails":
        placed = _orts_starting_resistance(placed)
    trains: list[Train] = []
    changes = Changes()
    masses, lengths, car_line, coupled, slack, x, v = [], [], [], [], [], [], []
    start = 0
    for p in placed:
        spec, st, line, model = p.spec, p.stock, p.line, p.stock.model
        n = len(model.mass)
        fronts = p.front0 - np.concatenate([[0.0], np.cumsum(model.length[:-1])])
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
        inner = _driver(spec, line, p.end_s, model, category)
        default = wrap_driver(inner, spec.depart, signalled)
        auto = inner if isinstance(inner, AutoDriver) else None
        t = Train(
            spec,
            st.consist,
            model,
            line,
            p.line_id,
            sl,
            default,
            BogieSet.from_model(spec.name, line, fronts, model),
            float(fronts[0]),
            float(model.length.sum()),
            p.end_s,
            changes,
            auto=auto,
            signal_driver=default if isinstance(default, SignalDriver) else None,
            warnings=list(st.warnings),
            category=category,
            waits=waits_by_name.get(spec.name, []),
            stocks=st.stocks,
        )
        # the automatic driver told what the replay knows first, then the policy's
        # driver around it (an activity's service driver changes its top speed)
        setup_driver(t, adhesion, physics)
        t._driver = policy.driver(spec, auto, default, t)
        trains.append(t)
    model = forces.CarModel.concat([t.model for t in trains])
    # The engine moves inertial masses ρ·m (rotating parts included); gravity and
    # the resistances use the mass itself (docs/running-time.md §5).
    inertial = model.inertial_mass
    bodies = Bodies(
        inertial,
        np.concatenate(lengths),
        np.concatenate(car_line),
        np.concatenate(coupled),
        np.concatenate(slack),
    )
    # compiled kernels or the numpy reference, once for the whole replay
    compiled = kernels.replay_compiled(len(inertial), scenario.duration / scenario.step)
    engine = Engine(bodies, np.concatenate(x), np.concatenate(v), compiled=compiled)
    # Per-car views of the lines, for vectorised lookups and track-end checks.
    distinct = list({id(t.line): t.line for t in trains}.values())
    table = LineTable(distinct, compiled=compiled)
    index = {id(ln): k for k, ln in enumerate(distinct)}
    counts = [t.cars.stop - t.cars.start for t in trains]
    car_line_len = np.repeat([t.line.length for t in trains], counts)
    n = len(engine.x)
    fbrb = np.empty((n, 2))
    lay = Layout(
        trains=trains,
        model=model,
        inertial=inertial,
        bodies=bodies,
        engine=engine,
        lines=table,
        train_start=np.array([t.cars.start for t in trains], dtype=np.int64),
        train_end=np.array([t.cars.stop - 1 for t in trains], dtype=np.int64),
        end_length=bodies.length[[t.cars.stop - 1 for t in trains]],
        car_train=np.repeat(np.arange(len(trains)), counts),
        car_base=np.repeat([table.base[index[id(t.line)]] for t in trains], counts),
        car_line_len=car_line_len,
        line_len_tol=car_line_len + 1e-9,
        car_far_end=np.repeat([t.line.ends_at_track_end for t in trains], counts),
        car_near_end=np.repeat([t.line.starts_at_track_end for t in trains], counts),
        train_line=np.array([index[id(t.line)] for t in trains], dtype=np.int64),
        train_line_len=np.array([t.line.length for t in trains], dtype=np.float64),
        train_front0=np.array([t.front0 for t in trains], dtype=np.float64),
        names=[t.spec.name for t in trains],
        front_bogie=(model.length - model.bogie_spacing) / 2.0,
        half_length=model.length / 2.0,
        fbrb=fbrb,
        fb=fbrb[:, 0],
        rb=fbrb[:, 1],
        compiled=compiled,
        physics=physics,
        rotating_mass=rotating,
    )
    lay.bogies_at(np.asarray(engine.x))
    for t in trains:
        t.bogies.front = lay.fb[t.cars]
        t.bogies.rear = lay.rb[t.cars]
    return lay


__all__ = ["Changes", "Layout", "ReplayError", "Train", "build", "setup_driver"]
