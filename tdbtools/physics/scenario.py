"""Replay scenarios: which route, which trains (consist, start, driver), step and duration.

A scenario is a TOML file (or the same structure built in Python)::

    route = "../shared/routes/DK24/ROUTES/OR_DK24"  # relative to this file
    step = 0.1                 # s
    duration = 3600            # s, at most
    stand_in = true            # missing .eng/.wag: generic stock of the same kind
    rotating_mass = true       # rotating-mass factors 1.15 engines, 1.05 other cars
                               # (default: the engineers' profile's, none in Open Rails')
    adhesion = "dry"           # traction limited by adhesion: "dry", "wet" or "off"
    physics = "engineering"    # or "openrails": Open Rails' laws (docs/physics.md §7);
                               # default: openrails when every car's stock comes from
                               # its .eng/.wag file, engineering with stand-in stock

    [[train]]
    name = "IC3"
    consist = "DSB IC3 VIA x1"          # a .con in TRAINS/CONSISTS, or a path
    path = "10.pat"                     # a .pat in the route's PATHS, or a path
    beyond_path = 3000                  # run on this far past the end of the path
    driver = "auto"                     # keep to the limits, stop at the end of the path
    max_speed = "160km/h"               # optional cap for the automatic driver
    category = "passenger"              # which speed-post values apply ("freight");
                                        # default: freight if any car is a freight wagon
    brake_mode = "force"                # or "deceleration" (the hourly model)
    brake_build_up = 4                  # s; default 4 (passenger), 20 (freight)
    allowance = 5                       # running-time allowance, % (and/or
    allowance_min_per_100km = 3         # minutes per 100 km), met by
    allowance_mode = "eco"              # coasting ("linear": lower speeds)
    # or a schedule, by time (s) or by distance (m) from the start:
    # [[train.schedule]]
    # at = 0
    # throttle = 1.0
    # brake = 0.0

    [[train]]
    name = "freight"
    consist = "sample_freight"
    start = { tile = [-5631, 15116], pos = [-212.95, -380.18], backward = false }
    distance = 3000                     # metres of track ahead to drive on
    schedule = [ { at = 0, throttle = 0.6 }, { at = 120, throttle = 0, brake = 0.5 } ]

    [[event]]                            # throw a switch during the replay
    at = 40.0
    junction = 3
    route = 1

Quantities may be numbers in SI (m, s, m/s) or strings with a unit (``"160km/h"``).
Every mistake is a :class:`ScenarioError` with the file, line and column.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import Location, SourceError, caret_snippet, truncate_value
from ..stf.units import parse_quantity

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


class ScenarioError(SourceError):
    """A scenario file that cannot be used: bad TOML, unknown keys, bad values."""


#: Limits on the work a replay may ask for (docs/security.md §2). The physics is
#: integrated at one step per ``step`` (larger steps are not stable without sub-steps).
MIN_STEP = 1e-4
MAX_STEP = 1.0
#: About 11.6 days of simulated time.
MAX_DURATION = 1e6
#: At most this many steps per replay (``duration / step``): a day at 0.01 s.
MAX_STEPS = 10_000_000


def run_limits_problem(step: object, duration: object) -> tuple[str, str] | None:
    """``(key, message)`` if ``step`` or ``duration`` (seconds) is outside the limits,
    else None. The one check for TOML keys, ``replay --step/--duration`` and Python."""
    for key, v in (("step", step), ("duration", duration)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return key, f"{key}: expected a number of seconds, got {truncate_value(v)}"
        if not math.isfinite(v):
            return key, f"{key}: must be finite, got {v!r}"
    assert isinstance(step, (int, float)) and isinstance(duration, (int, float))
    if not MIN_STEP <= step <= MAX_STEP:
        return "step", (
            f"step: {step:g} s is outside [{MIN_STEP:g}, {MAX_STEP:g}] s (the physics "
            "takes one step at a time and is not stable beyond 1 s)"
        )
    if not 0 < duration <= MAX_DURATION:
        return "duration", f"duration: {duration:g} s is outside (0, {MAX_DURATION:g}] s"
    steps = duration / step
    if steps > MAX_STEPS:
        return "duration", (
            f"duration {duration:g} s at step {step:g} s is {steps:.3g} steps, over the "
            f"limit of {MAX_STEPS:,}: use a shorter duration or a larger step"
        )
    return None


@dataclass(frozen=True, slots=True)
class Command:
    """From ``at`` (seconds, or metres when the schedule is by distance) on: throttle
    and brake fractions in [0, 1]; ``dynamic``: the dynamic-brake handle in [0, 1]
    (``physics = "openrails"`` only, docs/physics.md §7.2)."""

    at: float
    throttle: float = 0.0
    brake: float = 0.0
    dynamic: float = 0.0


@dataclass(frozen=True, slots=True)
class StartPoint:
    tile_x: int
    tile_z: int
    x: float
    z: float
    backward: bool = False


@dataclass(frozen=True, slots=True)
class TrainSpec:
    name: str
    consist: Path
    path: Path | None = None
    start: StartPoint | None = None
    distance: float = 5000.0  # with a start point: metres of track to use
    start_offset: float = 0.0  # metres along the path where the rear starts
    beyond_path: float = 0.0  # metres to run on past the end of the path
    driver: str = "auto"  # "auto" | "schedule"
    schedule: tuple[Command, ...] = ()
    schedule_by: str = "time"  # "time" | "distance"
    max_speed: float | None = None  # m/s, cap for the automatic driver
    start_speed: float = 0.0  # m/s
    brake_mode: str = "force"  # "force" | "deceleration"
    deceleration: float = 0.5  # m/s², the automatic driver's planned braking
    stand_in: bool | None = None  # overrides the scenario's setting
    category: str | None = None  # "passenger" | "freight"; None: from the consist
    brake_build_up: float | None = None  # s to a full application; None: by category
    allowance: float = 0.0  # running-time allowance, % of the minimum
    allowance_min_per_100km: float = 0.0  # and minutes per 100 km
    allowance_mode: str = "linear"  # "linear" (lower speeds) | "eco" (coasting)
    depart: float = 0.0  # s: the train stands (full brake) until then
    turned: bool = False  # the consist runs back to front (a path part after a reversal)
    #: stop at the path's waiting points (a timetable's trains do not: Open Rails ignores
    #: them in timetable mode, docs/timetables.md §5.1)
    waiting_points: bool = True


@dataclass(frozen=True, slots=True)
class SwitchEvent:
    at: float
    junction: int
    route: int


@dataclass(frozen=True, slots=True)
class Scenario:
    route: Path
    trains: tuple[TrainSpec, ...]
    step: float = 0.1
    duration: float = 3600.0
    stand_in: bool = False
    events: tuple[SwitchEvent, ...] = ()
    source: str = "<scenario>"
    collision_check_interval: float = 0.5  # s between occupancy/side-collision checks
    #: default rotating-mass factors (running-time.md §5); None: the profile's default
    #: (the engineers' profile has them, Open Rails' has none)
    rotating_mass: bool | None = None
    adhesion: str = "dry"  # "dry" | "wet" | "off"
    #: "engineering" (docs/running-time.md) or "openrails" (docs/physics.md §7); None:
    #: chosen by the stock (:meth:`profile`)
    physics: str | None = None

    def __post_init__(self) -> None:
        # Also when built in Python or changed with dataclasses.replace (replay --step).
        bad = run_limits_problem(self.step, self.duration)
        if bad is not None:
            raise ScenarioError(bad[1], Location(self.source, 1, 1))

    def profile(self, stand_ins: bool) -> tuple[str, bool]:
        """The physics profile and whether rotating-mass factors apply, for a replay
        whose stock is (``stand_ins``: partly) generic: the profile given, else Open
        Rails' when every car comes from its .eng/.wag file and the engineers' with
        stand-ins (their values are the engineers' estimates, not a file's); the factors
        given, else the profile's (Open Rails' diesel and electric models have none)."""
        physics = self.physics or default_physics() or ("engineering" if stand_ins else "openrails")
        rotating = self.rotating_mass if self.rotating_mass is not None else physics == "engineering"
        return physics, rotating


#: The physics profiles a scenario may choose (docs/physics.md §7).
PHYSICS_PROFILES = ("engineering", "openrails")
#: The environment variable that sets the profile of replays that choose none, instead
#: of the choice by the stock (the test suite sets it to the engineers' profile for the
#: tests written for its laws; docs/physics.md §7).
PHYSICS_ENV = "TDBTOOLS_PHYSICS"


def default_physics() -> str | None:
    """The profile ``TDBTOOLS_PHYSICS`` names (None: unset or not a profile)."""
    value = os.environ.get(PHYSICS_ENV, "").strip().lower()
    return value if value in PHYSICS_PROFILES else None


_TOP = {
    "route",
    "step",
    "duration",
    "stand_in",
    "train",
    "event",
    "collision_check_interval",
    "rotating_mass",
    "adhesion",
    "physics",
}
#: The keys of a ``[[train]]`` table.
TRAIN_KEYS = {
    "name",
    "consist",
    "path",
    "start",
    "distance",
    "start_offset",
    "beyond_path",
    "driver",
    "schedule",
    "schedule_by",
    "max_speed",
    "start_speed",
    "brake_mode",
    "deceleration",
    "stand_in",
    "depart",
    "category",
    "brake_build_up",
    "allowance",
    "allowance_min_per_100km",
    "allowance_mode",
}
_START = {"tile", "pos", "backward"}
_COMMAND = {"at", "throttle", "brake", "dynamic"}
_EVENT = {"at", "junction", "route"}


class TomlSource:
    """The text of a TOML file (scenario or sweep spec) and its name: makes
    :class:`ScenarioError` s located at the line of a key.

    :meth:`entry` narrows the search to one ``[[table]]`` entry, so an error in the
    second train points at the second train's key, not the first one's."""

    def __init__(self, path: str, text: str, scope: tuple[str, int] | None = None) -> None:
        self.path = path
        self.text = text
        self.scope = scope

    def entry(self, table: str, index: int) -> TomlSource:
        """The source narrowed to entry ``index`` (0-based) of ``[[table]]``; the entry
        is found only when an error needs it (:meth:`_entry`)."""
        return TomlSource(self.path, self.text, (table, index))

    def _entry(self) -> tuple[int, int, int] | None:
        """(start of the header's ``[``, start, end of the body) of the scope's entry;
        None when there is no scope or the entries are not written as ``[[table]]``
        headers (an inline array)."""
        if self.scope is None:
            return None
        table, index = self.scope
        t = re.escape(table)
        heads = list(re.finditer(rf"^[ \t]*(\[)\[[ \t]*{t}[ \t]*\]\]", self.text, re.M))
        if index >= len(heads):
            return None
        begin = heads[index].end()
        # The entry ends at the next table header of any name that is not one of its
        # sub-tables ([[table.schedule]] belongs to the entry before it).
        nxt = re.compile(rf"^[ \t]*\[(?!\[?[ \t]*{t}\.)", re.M).search(self.text, begin)
        return heads[index].start(1), begin, nxt.start() if nxt else len(self.text)

    def _at(self, offset: int) -> Location:
        before = self.text[:offset]
        return Location(self.path, before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1)

    def error(self, message: str, key: str | None = None) -> ScenarioError:
        entry = self._entry()
        loc = Location(self.path, 1, 1) if entry is None else self._at(entry[0])
        if key:
            k = re.escape(key)
            # The caret goes on the key itself, also inside an inline table ("{ a = 1, key = 2 }").
            pats = (
                re.compile(rf"(?:^|[{{,])\s*(?P<at>{k})\s*=", re.M),
                re.compile(rf"^\s*(?P<at>\[)\[?\s*{k}\s*\]", re.M),
            )
            # Within an entry only: a key the entry lacks is its header's fault, not that
            # of the same key in another entry.
            lo, hi = (0, len(self.text)) if entry is None else entry[1:]
            m = pats[0].search(self.text, lo, hi) or pats[1].search(self.text, lo, hi)
            if m:
                loc = self._at(m.start("at"))
        return ScenarioError(message, loc, caret_snippet(self.text, loc.line, loc.column))


def check_keys(ctx: TomlSource, d: dict, allowed: set[str], where: str) -> None:
    """Raise a located :class:`ScenarioError` for the first key of ``d`` not in ``allowed``."""
    for k in d:
        if k not in allowed:
            raise ctx.error(f"{where}: unknown key {k!r} (known: {', '.join(sorted(allowed))})", k)


def _num(
    ctx: TomlSource, v: Any, key: str, family: str | None, *, lo: float | None = None, hi: float | None = None
) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        what = "a number or a quantity like '160km/h'" if family else "a number"
        raise ctx.error(f"{key}: expected {what}, got {type(v).__name__}", key)
    if isinstance(v, str):
        if family is None:
            raise ctx.error(f"{key}: expected a number, got {truncate_value(v)}", key)
        try:
            x = parse_quantity(v.replace(" ", ""), family)
        except (ValueError, SourceError) as exc:
            raise ctx.error(f"{key}: {getattr(exc, 'message', exc)}", key) from None
    else:
        try:
            x = float(v)
        except OverflowError:  # a TOML integer beyond the float range
            digits = str(v)
            raise ctx.error(f"{key}: {digits[:12]}… ({len(digits)} digits) is too large", key) from None
    if not math.isfinite(x):
        raise ctx.error(f"{key}: must be finite, got {truncate_value(v)}", key)
    if lo is not None and x < lo or hi is not None and x > hi:
        raise ctx.error(
            f"{key}: {x:g} is outside [{lo if lo is not None else '-inf'}, "
            f"{hi if hi is not None else 'inf'}]",
            key,
        )
    return x


def read_toml_text(path: str | Path, what: str = "scenario") -> str:
    """The text of a UTF-8 TOML file; a missing file or a byte that is not UTF-8 is a
    :class:`ScenarioError` pointing at it."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise ScenarioError(f"{what} file not found", Location(str(p), 0, 0)) from None
    except OSError as exc:
        raise ScenarioError(f"cannot read {what}: {exc}", Location(str(p), 0, 0)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Point at the offending byte (TOML files are UTF-8).
        good = data[: exc.start].decode("utf-8", errors="replace")
        line = good.count("\n") + 1
        col = len(good) - (good.rfind("\n") + 1) + 1
        shown = good + data[exc.start :].decode("cp1252", errors="replace")  # as typed in Windows
        raise ScenarioError(
            f"{what} is not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} ({exc.reason})",
            Location(str(p), line, col),
            caret_snippet(shown, line, col),
        ) from None


def read_scenario(path: str | Path) -> Scenario:
    """A scenario TOML file. An activity (``.act``) is not a scenario: it is replayed by
    :func:`tdbtools.physics.replay` or :func:`tdbtools.physics.replay_activity`."""
    p = Path(path)
    if p.suffix.lower() in (".act", ".srv", ".trf"):
        raise ScenarioError(
            f"{str(p)!r} is an MSTS activity file, not a scenario: replay it with "
            "tdbtools.physics.replay (or replay_activity)",
            Location(str(p), 1, 1),  # the file's kind, told from its name: its first character
        )
    return scenario_from_text(read_toml_text(p), str(p), base=p.parent)


def one_train_scenario(
    route: str | Path,
    consist: str | Path,
    path: str | Path,
    *,
    stand_in: bool = False,
    beyond_path: float | None = None,
    max_speed: float | None = None,
) -> Scenario:
    """A scenario of one train (named after the consist, automatic driver) without a
    file: what ``tdbtools replay --route R --consist C --path P`` runs. Relative consist
    and path names resolve as in a scenario file in the working directory.
    ``beyond_path`` (m) and ``max_speed`` (m/s) as in :func:`with_settings`."""
    sc = Scenario(
        Path(route).resolve(),
        (TrainSpec(name=Path(consist).stem, consist=Path(consist), path=Path(path), driver="auto"),),
        stand_in=stand_in,
        source=str(Path.cwd() / "<command line>"),
    )
    return with_settings(sc, beyond_path=beyond_path, max_speed=max_speed)


def with_settings(
    scenario: Scenario,
    *,
    stand_in: bool | None = None,
    step: float | None = None,
    duration: float | None = None,
    beyond_path: float | None = None,
    max_speed: float | None = None,
    physics: str | None = None,
) -> Scenario:
    """``scenario`` with the settings that are not None replaced: the replay command's
    ``--stand-in``, ``--step`` (s), ``--duration`` (s) and ``--physics`` (which also
    brings the profile's rotating-mass default: none in Open Rails, the engineers' factors),
    and for every train ``--beyond-path`` (metres run on past the end of its path) and
    ``--max-speed`` (here in m/s, the automatic driver's top speed; the command takes
    km/h)."""
    for name, value, low, high in (
        ("beyond_path", beyond_path, 0.0, 1e6),
        ("max_speed", max_speed, 0.01, 300.0),
    ):
        if value is not None and not (low <= value <= high):
            raise ScenarioError(f"{name} must be in {low:g}..{high:g}, not {value!r}")
    changes: dict[str, Any] = {
        k: v for k, v in (("stand_in", stand_in), ("step", step), ("duration", duration)) if v is not None
    }
    if physics is not None:
        if physics not in PHYSICS_PROFILES:
            raise ValueError(f"physics must be one of {PHYSICS_PROFILES}, not {physics!r}")
        changes["physics"] = physics
        changes["rotating_mass"] = None
    train_changes: dict[str, Any] = {
        k: v for k, v in (("beyond_path", beyond_path), ("max_speed", max_speed)) if v is not None
    }
    if train_changes:
        changes["trains"] = tuple(dataclasses.replace(t, **train_changes) for t in scenario.trains)
    return dataclasses.replace(scenario, **changes) if changes else scenario


def load_toml(text: str, path: str) -> dict:
    """Parse TOML text; a syntax error is a :class:`ScenarioError` at its line and column."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        line, col = (int(m.group(1)), int(m.group(2))) if m else (1, 1)
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        raise ScenarioError(
            f"invalid TOML: {msg}", Location(path, line, col), caret_snippet(text, line, col)
        ) from None


def scenario_from_text(text: str, path: str = "<scenario>", base: Path | None = None) -> Scenario:
    return scenario_from_dict(load_toml(text, path), TomlSource(path, text), base or Path("."))


def scenario_from_dict(data: dict, ctx: TomlSource | None = None, base: Path | None = None) -> Scenario:
    ctx = ctx or TomlSource("<scenario>", "")
    base = base or Path(".")
    check_keys(ctx, data, _TOP, "scenario")
    if "route" not in data or not isinstance(data["route"], str):
        raise ctx.error("scenario: 'route' (the route folder …/ROUTES/NAME) is required", "route")
    route = (base / data["route"]).resolve() if not Path(data["route"]).is_absolute() else Path(data["route"])
    step = _num(ctx, data.get("step", 0.1), "step", "time")
    duration = _num(ctx, data.get("duration", 3600.0), "duration", "time")
    bad = run_limits_problem(step, duration)
    if bad is not None:
        raise ctx.error(bad[1], bad[0])
    stand_in = data.get("stand_in", False)
    if not isinstance(stand_in, bool):
        raise ctx.error("stand_in: expected true or false", "stand_in")
    trains_raw = data.get("train", [])
    if not isinstance(trains_raw, list) or not trains_raw:
        raise ctx.error("scenario: at least one [[train]] is required", "train")
    trains = tuple(_train(ctx, t, i, base) for i, t in enumerate(trains_raw))
    names = [t.name for t in trains]
    if len(set(names)) != len(names):
        raise ctx.error(f"train names must be unique: {names}", "name")
    events = []
    for j, e in enumerate(data.get("event", [])):
        ectx = ctx.entry("event", j)
        if not isinstance(e, dict):
            raise ectx.error("[[event]] entries must be tables", "event")
        check_keys(ectx, e, _EVENT, "event")
        for k in ("at", "junction", "route"):
            if k not in e:
                raise ectx.error(f"event: '{k}' is required", "event")
        events.append(
            SwitchEvent(
                _num(ectx, e["at"], "at", "time", lo=0.0),
                int(_num(ectx, e["junction"], "junction", None, lo=1)),
                int(_num(ectx, e["route"], "route", None, lo=0, hi=1)),
            )
        )
    cci = _num(
        ctx,
        data.get("collision_check_interval", max(0.5, step)),
        "collision_check_interval",
        "time",
        lo=step,
        hi=60.0,
    )
    physics = data.get("physics")
    if physics is not None and physics not in PHYSICS_PROFILES:
        raise ctx.error(f'physics must be "engineering" or "openrails", got {physics!r}', "physics")
    # (absent: the profile's default, Scenario.profile)
    rotating = data.get("rotating_mass")
    if rotating is not None and not isinstance(rotating, bool):
        raise ctx.error("rotating_mass: expected true or false", "rotating_mass")
    adhesion = data.get("adhesion", "dry")
    if adhesion not in ("dry", "wet", "off"):
        raise ctx.error(f'adhesion must be "dry", "wet" or "off", got {adhesion!r}', "adhesion")
    return Scenario(
        route,
        trains,
        step,
        duration,
        stand_in,
        tuple(sorted(events, key=lambda e: e.at)),
        ctx.path,
        cci,
        rotating,
        adhesion,
        physics,
    )


def _train(ctx: TomlSource, t: Any, i: int, base: Path) -> TrainSpec:
    ctx = ctx.entry("train", i)
    if not isinstance(t, dict):
        raise ctx.error("[[train]] entries must be tables", "train")
    check_keys(ctx, t, TRAIN_KEYS, f"train {i + 1}")
    name = str(t.get("name", f"train{i + 1}"))
    if "consist" not in t or not isinstance(t["consist"], str):
        raise ctx.error(f"train {name!r}: 'consist' is required", "consist")
    path = start = None
    if "path" in t:
        if not isinstance(t["path"], str):
            raise ctx.error(f"train {name!r}: 'path' must be a file name", "path")
        path = Path(t["path"])
    if "start" in t:
        s = t["start"]
        if not isinstance(s, dict):
            raise ctx.error(
                f"train {name!r}: 'start' must be a table {{ tile = [TX, TZ], pos = [X, Z] }}", "start"
            )
        check_keys(ctx, s, _START, f"train {name!r} start")
        tile, pos = s.get("tile"), s.get("pos")
        if not (isinstance(tile, list) and len(tile) == 2 and isinstance(pos, list) and len(pos) == 2):
            raise ctx.error(f"train {name!r}: start needs tile = [TX, TZ] and pos = [X, Z]", "tile")
        start = StartPoint(
            int(_num(ctx, tile[0], "tile", None)),
            int(_num(ctx, tile[1], "tile", None)),
            _num(ctx, pos[0], "pos", None),
            _num(ctx, pos[1], "pos", None),
            bool(s.get("backward", False)),
        )
    if (path is None) == (start is None):
        raise ctx.error(
            f"train {name!r}: give either 'path' or 'start'",
            "path" if path else "start" if start else "train",
        )
    sched_raw = t.get("schedule", [])
    if not isinstance(sched_raw, list):
        raise ctx.error(f"train {name!r}: 'schedule' must be a list of tables", "schedule")
    cmds = []
    for c in sched_raw:
        if not isinstance(c, dict):
            raise ctx.error(f"train {name!r}: schedule entries must be tables", "schedule")
        check_keys(ctx, c, _COMMAND, f"train {name!r} schedule")
        cmds.append(
            Command(
                _num(ctx, c.get("at", 0.0), "at", None, lo=0.0),
                _num(ctx, c.get("throttle", 0.0), "throttle", None, lo=0.0, hi=1.0),
                _num(ctx, c.get("brake", 0.0), "brake", None, lo=0.0, hi=1.0),
                _num(ctx, c.get("dynamic", 0.0), "dynamic", None, lo=0.0, hi=1.0),
            )
        )
    driver = t.get("driver", "schedule" if cmds else "auto")
    if driver not in ("auto", "schedule"):
        raise ctx.error(f'train {name!r}: driver must be "auto" or "schedule", got {driver!r}', "driver")
    if driver == "schedule" and not cmds:
        raise ctx.error(f"train {name!r}: a schedule driver needs [[train.schedule]] entries", "driver")
    by = t.get("schedule_by", "time")
    if by not in ("time", "distance"):
        raise ctx.error(f'train {name!r}: schedule_by must be "time" or "distance"', "schedule_by")
    mode = t.get("brake_mode", "force")
    if mode not in ("force", "deceleration"):
        raise ctx.error(f'train {name!r}: brake_mode must be "force" or "deceleration"', "brake_mode")
    category = t.get("category")
    if category is not None and category not in ("passenger", "freight"):
        raise ctx.error(
            f'train {name!r}: category must be "passenger" or "freight", got {category!r}', "category"
        )
    amode = t.get("allowance_mode", "linear")
    if amode not in ("linear", "eco"):
        raise ctx.error(
            f'train {name!r}: allowance_mode must be "linear" or "eco", got {amode!r}', "allowance_mode"
        )
    stand_in = t.get("stand_in")
    if stand_in is not None and not isinstance(stand_in, bool):
        raise ctx.error("stand_in: expected true or false", "stand_in")
    return TrainSpec(
        name=name,
        consist=Path(t["consist"]),
        path=path,
        start=start,
        distance=_num(ctx, t.get("distance", 5000.0), "distance", "distance", lo=1.0, hi=1e7),
        start_offset=_num(ctx, t.get("start_offset", 0.0), "start_offset", "distance", lo=0.0),
        beyond_path=_num(ctx, t.get("beyond_path", 0.0), "beyond_path", "distance", lo=0.0, hi=1e6),
        driver=driver,
        schedule=tuple(sorted(cmds, key=lambda c: c.at)),
        schedule_by=by,
        max_speed=(
            _num(ctx, t["max_speed"], "max_speed", "speed", lo=0.1, hi=300.0) if "max_speed" in t else None
        ),
        start_speed=_num(ctx, t.get("start_speed", 0.0), "start_speed", "speed", lo=0.0, hi=300.0),
        brake_mode=mode,
        deceleration=_num(ctx, t.get("deceleration", 0.5), "deceleration", None, lo=0.05, hi=3.0),
        stand_in=stand_in,
        category=category,
        depart=_num(ctx, t.get("depart", 0.0), "depart", "time", lo=0.0, hi=1e7),
        brake_build_up=(
            _num(ctx, t["brake_build_up"], "brake_build_up", "time", lo=0.0, hi=120.0)
            if "brake_build_up" in t
            else None
        ),
        allowance=_num(ctx, t.get("allowance", 0.0), "allowance", None, lo=0.0, hi=100.0),
        allowance_min_per_100km=_num(
            ctx, t.get("allowance_min_per_100km", 0.0), "allowance_min_per_100km", None, lo=0.0, hi=60.0
        ),
        allowance_mode=amode,
    )


def resolve_file(name: Path, *folders: Path, suffix: str) -> Path | None:
    """``name`` as given (absolute or relative to the first folder), else looked up in
    the folders with ``suffix`` added, ignoring case."""
    from .._fs import is_file
    from ..stf import resolve_case_insensitive

    cands = [name] if name.is_absolute() else []
    for f in folders:
        cands.append(f / name)
        if not name.suffix:
            cands.append(f / (name.name + suffix))
    for c in cands:
        r = resolve_case_insensitive(c)
        if is_file(r):
            return r
    return None


__all__ = [
    "TRAIN_KEYS",
    "Command",
    "Scenario",
    "ScenarioError",
    "StartPoint",
    "SwitchEvent",
    "TomlSource",
    "TrainSpec",
    "check_keys",
    "load_toml",
    "read_toml_text",
    "one_train_scenario",
    "read_scenario",
    "resolve_file",
    "scenario_from_dict",
    "scenario_from_text",
    "with_settings",
]
