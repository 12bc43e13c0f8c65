"""One entry point for every kind of replay the command line runs: what
``tdbtools replay`` does, from Python.

``replay(x)`` takes what the command takes: a :class:`~tdbtools.physics.scenario.Scenario`,
a scenario TOML file, or an MSTS activity (``.act``, replayed with its services by
:func:`~tdbtools.physics.activity.replay_activity`), and the command's options as
keywords (``stand_in``, ``step``, ``duration``, ``beyond_path``, ``max_speed``,
``signals``, ``cars_trace``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import TdbToolsError
from ..formats.route import Route
from .activity import ActivityResult, replay_activity
from .replay import Replay, ReplayResult
from .scenario import Scenario, read_scenario, with_settings

#: The step an activity replay takes unless told (s): what `tdbtools replay X.act` uses.
ACTIVITY_STEP = 0.5


def is_activity(source: object) -> bool:
    """Whether ``source`` names an MSTS activity file (``.act``, any case)."""
    return isinstance(source, (str, Path)) and Path(source).suffix.lower() == ".act"


def replay(
    scenario: Scenario | str | Path,
    *,
    route: Route | None = None,
    cars_trace: bool = False,
    progress: Callable[[float], None] | None = None,
    signals: object = None,
    stand_in: bool | None = None,
    step: float | None = None,
    duration: float | None = None,
    beyond_path: float | None = None,
    max_speed: float | None = None,
) -> ReplayResult | ActivityResult:
    """Run a scenario (a :class:`Scenario` or a TOML file) or an activity (``.act``) to
    its end, as ``tdbtools replay`` does.

    ``signals``: None uses the route's signals when it has them, False runs without
    (docs/signals.md §5). The other keywords override the scenario as the command's
    options do (``max_speed`` in m/s). An activity gives an :class:`ActivityResult`
    (its ``.replay`` is the :class:`ReplayResult`, with the timetable beside it); it
    takes no ``cars_trace``, ``beyond_path`` or ``max_speed``.
    """
    if is_activity(scenario):
        assert isinstance(scenario, (str, Path))
        if cars_trace or beyond_path is not None or max_speed is not None:
            raise TdbToolsError("an activity replay takes no cars_trace, beyond_path or max_speed")
        return replay_activity(
            scenario,
            route=route,
            stand_in=bool(stand_in),
            step=ACTIVITY_STEP if step is None else step,
            duration=duration,
            progress=progress,
            signals=False if signals is False else None,
        )
    sc = scenario if isinstance(scenario, Scenario) else read_scenario(scenario)
    sc = with_settings(
        sc, stand_in=stand_in, step=step, duration=duration, beyond_path=beyond_path, max_speed=max_speed
    )
    return Replay(sc, route=route, cars_trace=cars_trace, signals=signals).run(progress)


__all__ = ["ACTIVITY_STEP", "is_activity", "replay"]
