"""Train physics: forces per car, car-to-car interaction by momentum transfer, and
replays of consists over imported routes (``docs/physics.md``).

What belongs here: anything that moves trains over a route's track in time
(scenarios, drivers, forces, the engine, derailment and collision checks, replay
results); nothing that draws or writes other formats.

From a notebook::

    from tdbtools.physics import replay, read_scenario
    result = replay("scenario.toml")            # or a Scenario built in Python, or an .act
    result = replay("scenario.toml", step=0.05, beyond_path=500)   # the command's options
    result.traces["IC3"]["speed"]               # numpy columns per train
    result.summary, result.events              # typed records (docs/physics.md §6)
    result.write("out/")                        # the CSV/JSON files the CLI writes
"""

from . import events
from .activity import (
    ActivityError,
    ActivityPlan,
    ActivityReplay,
    ActivityResult,
    plan_activity,
    replay_activity,
)
from .compiled import compile_kernels, compiled_available, kernels_cached
from .driver import AutoDriver, Controls, ScheduleDriver
from .engine import Bodies, Engine, Event
from .events import *  # noqa: F403  (the typed replay events: their list is events.__all__)
from .forces import BrakeMode, CarModel
from .interaction import clash_time, stopping_time
from .replay import Replay, ReplayError, ReplayResult
from .run import is_activity, replay
from .scenario import (
    Command,
    Scenario,
    ScenarioError,
    StartPoint,
    SwitchEvent,
    TrainSpec,
    one_train_scenario,
    read_scenario,
    with_settings,
)
from .trackline import TrackLine

__all__ = [
    "ActivityError",
    "ActivityPlan",
    "ActivityReplay",
    "ActivityResult",
    "AutoDriver",
    "Bodies",
    "BrakeMode",
    "CarModel",
    "Command",
    "Controls",
    "Engine",
    "Event",
    "Replay",
    "ReplayError",
    "ReplayResult",
    "Scenario",
    "ScenarioError",
    "ScheduleDriver",
    "StartPoint",
    "SwitchEvent",
    "TrackLine",
    "TrainSpec",
    "clash_time",
    "compile_kernels",
    "compiled_available",
    "is_activity",
    "kernels_cached",
    "one_train_scenario",
    "plan_activity",
    "read_scenario",
    "replay",
    "replay_activity",
    "stopping_time",
    "with_settings",
]
# The typed replay events (docs/physics.md §6): every record class of events.__all__, so
# a new event is exported here without a second list to keep in step.
__all__ += [n for n in events.__all__ if isinstance(getattr(events, n), type)]
