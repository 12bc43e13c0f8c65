"""Reading sweep specifications and expanding them into combinations (one replay each).

The validation reuses the scenario reader: every combination is turned into the
``[[train]]`` table of a scenario and read by
:func:`tdbtools.physics.scenario.scenario_from_dict`, so a bad value in the spec is the
same located :class:`~tdbtools.physics.scenario.ScenarioError` a scenario file gives.
"""

from __future__ import annotations

import fnmatch
import hashlib
import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..physics.scenario import (
    TRAIN_KEYS,
    Scenario,
    ScenarioError,
    TomlSource,
    check_keys,
    load_toml,
    read_toml_text,
    scenario_from_dict,
)

#: Top-level keys of a sweep spec.
SPEC_KEYS = {
    "route",
    "paths",
    "consists",
    "step",
    "duration",
    "stand_in",
    "collision_check_interval",
    "traces",
    "train",
    "grid",
    "activities",
}
#: ``[grid]`` keys of an activity sweep (ActivityReplay's settings).
ACTIVITY_PARAMS = {"step", "stuck_after", "deceleration", "duration"}
#: ``[train]`` / ``[grid]`` keys: a scenario's ``[[train]]`` keys but the ones the sweep sets.
PARAM_KEYS = TRAIN_KEYS - {"name", "consist", "path", "start", "distance"}
#: Scenario-level keys passed through to every replay.
_SCENARIO_KEYS = ("step", "duration", "stand_in", "collision_check_interval")
TRAIN_NAME = "train"
#: A spec may expand to at most this many replays unless the caller raises the limit
#: (``max_combinations=``, ``sweep --max-combinations``): they are counted before any
#: is built (docs/security.md §2).
MAX_COMBINATIONS = 10_000


class TooManyCombinations(ScenarioError):
    """A sweep spec that expands to more replays than the limit allows."""


@dataclass(frozen=True, slots=True)
class Combination:
    """One replay of a sweep: a path, a consist and one value per grid parameter."""

    key: str  # stable hash of everything that defines the replay
    path: str  # file name in the route's PATHS
    consist: str  # as written in the spec
    params: dict[str, Any]  # grid parameter -> value as written in the spec
    scenario: Scenario
    activity: Path | None = None  # an activity sweep: the .act file (path = its name)


@dataclass(frozen=True, slots=True)
class SweepSpec:
    """A parsed sweep spec (see the :mod:`tdbtools.sweep` docstring for the format)."""

    source: str
    route: Path
    paths: tuple[str, ...]  # file names found in PATHS, sorted, no duplicates
    consists: tuple[str, ...]
    grid: dict[str, tuple[Any, ...]]  # in spec order
    fixed: dict[str, Any]  # the [train] table
    settings: dict[str, Any]  # step, duration, stand_in, collision_check_interval (given ones)
    traces: bool
    combinations: tuple[Combination, ...]

    @property
    def grid_keys(self) -> tuple[str, ...]:
        return tuple(self.grid)


def read_sweep_spec(path: str | Path, *, max_combinations: int = MAX_COMBINATIONS) -> SweepSpec:
    """Read a sweep spec TOML file; every mistake is a located :class:`ScenarioError`."""
    p = Path(path)
    text = read_toml_text(p, "sweep spec")
    return sweep_spec_from_text(
        text, str(p.resolve()), base=p.resolve().parent, max_combinations=max_combinations
    )


def sweep_spec_from_text(
    text: str, path: str = "<sweep>", base: Path | None = None, *, max_combinations: int = MAX_COMBINATIONS
) -> SweepSpec:
    """Parse the text of a sweep spec (``path`` names it in errors; ``base`` is the folder
    relative names are taken from)."""
    return sweep_spec_from_dict(
        load_toml(text, path), TomlSource(path, text), base or Path("."), max_combinations=max_combinations
    )


def _str_list(ctx: TomlSource, data: dict, key: str) -> list[str]:
    v = data.get(key)
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
        raise ctx.error(f"sweep: {key!r} must be a non-empty list of names", key)
    return v


def _paths_folder(route: Path) -> Path | None:
    from ..stf import resolve_case_insensitive

    p = resolve_case_insensitive(route / "PATHS")
    return p if p.is_dir() else None


def sweep_spec_from_dict(
    data: dict,
    ctx: TomlSource | None = None,
    base: Path | None = None,
    *,
    max_combinations: int = MAX_COMBINATIONS,
) -> SweepSpec:
    ctx = ctx or TomlSource("<sweep>", "")
    base = base or Path(".")
    check_keys(ctx, data, SPEC_KEYS, "sweep")
    if not isinstance(data.get("route"), str):
        raise ctx.error("sweep: 'route' (the route folder …/ROUTES/NAME) is required", "route")
    route = Path(data["route"])
    route = route if route.is_absolute() else (base / route).resolve()
    if "activities" in data:
        return _activity_spec(data, ctx, route, max_combinations)
    folder = _paths_folder(route)
    if folder is None:
        raise ctx.error(f"route: no PATHS folder in {route}", "route")
    names = sorted(f.name for f in folder.iterdir() if f.is_file())
    paths: list[str] = []
    for pattern in _str_list(ctx, data, "paths"):
        hits = [n for n in names if fnmatch.fnmatchcase(n.lower(), pattern.lower())]
        if not hits:
            raise ctx.error(f"paths: {pattern!r} matches no file in {folder}", "paths")
        paths.extend(h for h in hits if h not in paths)
    paths.sort()
    consists = list(dict.fromkeys(_str_list(ctx, data, "consists")))
    traces = data.get("traces", False)
    if not isinstance(traces, bool):
        raise ctx.error("traces: expected true or false", "traces")
    fixed = data.get("train", {})
    if not isinstance(fixed, dict):
        raise ctx.error("train: expected a table of train options ([train])", "train")
    check_keys(ctx, fixed, PARAM_KEYS, "[train]")
    grid_raw = data.get("grid", {})
    if not isinstance(grid_raw, dict):
        raise ctx.error("grid: expected a table of parameter = [values]", "grid")
    check_keys(ctx, grid_raw, PARAM_KEYS, "[grid]")
    grid: dict[str, tuple[Any, ...]] = {}
    for k, v in grid_raw.items():
        if k in fixed:
            raise ctx.error(f"grid: {k!r} is also fixed in [train]", k)
        if k == "schedule":
            # One schedule is a list of tables; a grid of schedules is a list of those.
            values = [v] if isinstance(v, list) and v and all(isinstance(c, dict) for c in v) else v
        else:
            values = v if isinstance(v, list) else [v]
        if not isinstance(values, list) or not values:
            raise ctx.error(f"grid: {k!r} needs a non-empty list of values", k)
        grid[k] = tuple(values)
    settings = {k: data[k] for k in _SCENARIO_KEYS if k in data}
    count = len(paths) * len(consists)
    for values in grid.values():
        count *= len(values)
    if count > max_combinations:
        sizes = " x ".join(
            [f"{len(paths)} paths", f"{len(consists)} consists", *(f"{len(v)} {k}" for k, v in grid.items())]
        )
        raise TooManyCombinations(
            f"sweep: {sizes} = {count:,} combinations, over the limit of {max_combinations:,}; "
            "narrow the spec or raise the limit (sweep --max-combinations N)",
            ctx.error("", "grid" if grid else "paths").location,
        )
    combos = []
    seen = set()
    for path, consist in itertools.product(paths, consists):
        for values in itertools.product(*grid.values()):
            params = dict(zip(grid, values))
            train = {"name": TRAIN_NAME, "consist": consist, "path": path, **fixed, **params}
            scenario = scenario_from_dict({"route": str(route), **settings, "train": [train]}, ctx, base)
            ident = {
                "route": str(route),
                "path": path,
                "consist": consist,
                "train": {**fixed, **params},
                "settings": settings,
            }
            key = hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:20]
            if key in seen:  # the same replay twice (e.g. a value repeated in a grid)
                continue
            seen.add(key)
            combos.append(Combination(key, path, consist, params, scenario))
    return SweepSpec(
        ctx.path, route, tuple(paths), tuple(consists), grid, dict(fixed), settings, traces, tuple(combos)
    )


def _activity_spec(data: dict, ctx: TomlSource, route: Path, max_combinations: int) -> SweepSpec:
    """A sweep whose unit of work is a whole activity (docs/activities.md §8)."""
    from ..stf import resolve_case_insensitive

    for k in ("paths", "consists", "train"):
        if k in data:
            raise ctx.error(
                f"sweep: {k!r} does not go with 'activities' (an activity names its own trains)", k
            )
    folder = resolve_case_insensitive(route / "ACTIVITIES")
    if not folder.is_dir():
        raise ctx.error(f"route: no ACTIVITIES folder in {route}", "route")
    names = sorted(f.name for f in folder.iterdir() if f.is_file() and f.suffix.lower() == ".act")
    acts: list[str] = []
    for pattern in _str_list(ctx, data, "activities"):
        hits = [n for n in names if fnmatch.fnmatchcase(n.lower(), pattern.lower())]
        if not hits:
            raise ctx.error(f"activities: {pattern!r} matches no .act file in {folder}", "activities")
        acts.extend(h for h in hits if h not in acts)
    traces = data.get("traces", False)
    if not isinstance(traces, bool):
        raise ctx.error("traces: expected true or false", "traces")
    grid_raw = data.get("grid", {})
    if not isinstance(grid_raw, dict):
        raise ctx.error("grid: expected a table of parameter = [values]", "grid")
    check_keys(ctx, grid_raw, ACTIVITY_PARAMS, "[grid] of an activity sweep")
    grid: dict[str, tuple[Any, ...]] = {}
    for k, v in grid_raw.items():
        given = v if isinstance(v, list) else [v]
        if not given or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 for x in given
        ):
            raise ctx.error(f"grid: {k!r} needs a non-empty list of positive numbers", k)
        grid[k] = tuple(given)
    count = len(acts)
    for vals in grid.values():
        count *= len(vals)
    if count > max_combinations:
        raise TooManyCombinations(
            f"sweep: {len(acts)} activities x {' x '.join(str(len(v)) for v in grid.values()) or '1'} = "
            f"{count:,} combinations, over the limit of {max_combinations:,}",
            ctx.error("", "grid" if grid else "activities").location,
        )
    settings = {k: data[k] for k in ("step", "duration", "stand_in") if k in data}
    if "stand_in" in settings and not isinstance(settings["stand_in"], bool):
        raise ctx.error("stand_in: expected true or false", "stand_in")
    combos = []
    for act in sorted(acts):
        for values in itertools.product(*grid.values()):
            params = dict(zip(grid, values))
            ident = {"route": str(route), "activity": act, "params": params, "settings": settings}
            key = hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:20]
            merged = {**settings, **params}
            sc = Scenario(
                route,
                (),
                step=float(merged.get("step", 0.5)),
                duration=float(merged.get("duration", 86400.0)),
                stand_in=bool(settings.get("stand_in")),
                source=ctx.path,
            )
            combos.append(Combination(key, act, "", params, sc, folder / act))
    return SweepSpec(ctx.path, route, tuple(sorted(acts)), (), grid, {}, settings, traces, tuple(combos))


__all__ = [
    "Combination",
    "MAX_COMBINATIONS",
    "PARAM_KEYS",
    "TooManyCombinations",
    "SPEC_KEYS",
    "SweepSpec",
    "read_sweep_spec",
    "sweep_spec_from_dict",
    "sweep_spec_from_text",
]
