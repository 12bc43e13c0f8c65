"""One train on one path, run whole: what ``replay --route R --consist C --path P`` runs
when the path has reversal points (docs/activities.md §4.4).

The train is the player service of an activity made in memory (nothing is written into
the route): it starts at clock 00:00:00 and runs every part of its path, turning at each
reversal as an activity's trains do. A path without reversals keeps the plain one-train
replay (:func:`~tdbtools.physics.scenario.one_train_scenario`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..formats.activity import ActivityHeader, ServiceRef, make_activity, make_service
from ..formats.route import Route
from ..track.paths import resolve_path
from .activity import ActivityError, ActivityPlan, ActivityReplay, ActivityResult, PlannedTrain
from .scenario import resolve_file

__all__ = ["path_reversals", "replay_path_whole"]


def _strip(p: str | Path, suffix: str) -> str:
    s = str(p)
    return s[: -len(suffix)] if s.lower().endswith(suffix) else s


def path_reversals(route: Route, path: str | Path) -> int:
    """How many reversal points the path (a file, or a name in the route's PATHS) has;
    0 when it cannot be found or resolved (the replay then says why)."""
    pat = resolve_file(Path(path), Path.cwd(), Path(route.folder) / "PATHS", suffix=".pat")
    if pat is None:
        return 0
    res = resolve_path(route, pat)
    return len(res.reversals) if res.ok else 0


def replay_path_whole(
    route: Route,
    consist: str | Path,
    path: str | Path,
    *,
    stand_in: bool = False,
    step: float = 0.1,
    duration: float = 86400.0,
    signals: bool | None = None,
) -> ActivityResult:
    """Run one train (named after the consist) along the whole path, reversals included.
    Relative consist and path names resolve as in ``replay --route`` (the working
    directory, then the install's consists and the route's paths)."""
    pat = resolve_file(Path(path), Path.cwd(), Path(route.folder) / "PATHS", suffix=".pat")
    if pat is None:
        raise ActivityError(
            f"path {str(path)!r} not found (looked in {Path.cwd()}, {Path(route.folder) / 'PATHS'})"
        )
    name = Path(consist).stem
    srv = make_service(name, _strip(consist, ".con"), _strip(pat.resolve(), ".pat"), efficiency=1.0)
    act = make_activity(
        ActivityHeader(
            route_id=Path(route.folder).name, name=f"{name} on {pat.stem}", start_time=0, duration=0
        ),
        ServiceRef(name, 0, 0),
        "",
        [],
    )
    # The made-up activity "lives" in the working directory, so names resolve from there.
    act = dataclasses.replace(act, path=str(Path.cwd() / "<command line>"), traffic_name=None)
    plan = ActivityPlan(act, Path(route.folder), (PlannedTrain(name, srv, 0, (), True, True),))
    return ActivityReplay(
        plan, route=route, stand_in=stand_in, step=step, duration=duration, signals=signals
    ).run()
