"""Train physics: forces per car, car-to-car interaction by momentum transfer, and
replays of consists over imported routes (``docs/physics.md``).

What belongs here: anything that moves trains over a route's track in time
(scenarios, drivers, forces, the engine, derailment and collision checks, replay
results); nothing that draws or writes other formats.

From a notebook::

    from tdbtools.physics import replay, read_scenario
    result = replay("scenario.toml")            # or a Scenario built in Python
    result.traces["IC3"]["speed"]               # numpy columns per train
    result.summary, result.events              # typed records (docs/physics.md §6)
    result.write("out/")                        # the CSV/JSON files the CLI writes
"""

from .driver import AutoDriver, Controls, ScheduleDriver
from .engine import Bodies, Engine, Event
from .events import (
    Arrived,
    AspectSeen,
    CarEvent,
    CarsStarted,
    CarsStopped,
    Collision,
    CouplerSnatch,
    Deadlock,
    DepartedPoint,
    Derailment,
    EndOfLine,
    EventLocation,
    Impact,
    NotAtEnd,
    PathChanged,
    ReplayEvent,
    SafetyRecord,
    ServiceStarted,
    SetupWarning,
    SideCollision,
    SignalAspect,
    SignalWait,
    Spad,
    StandIn,
    StartDelayed,
    Stuck,
    SwitchThrow,
    TrainStopped,
    WaitingAtPoint,
)
from .forces import BrakeMode, CarModel
from .interaction import clash_time, stopping_time
from .replay import Replay, ReplayError, ReplayResult, replay
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
    "one_train_scenario",
    "read_scenario",
    "replay",
    "stopping_time",
    "with_settings",
    # typed replay events (docs/physics.md §6)
    "Arrived",
    "AspectSeen",
    "CarEvent",
    "CarsStarted",
    "CarsStopped",
    "Collision",
    "CouplerSnatch",
    "Deadlock",
    "DepartedPoint",
    "Derailment",
    "EndOfLine",
    "EventLocation",
    "Impact",
    "NotAtEnd",
    "PathChanged",
    "ReplayEvent",
    "SafetyRecord",
    "ServiceStarted",
    "SetupWarning",
    "SideCollision",
    "SignalAspect",
    "SignalWait",
    "Spad",
    "StandIn",
    "StartDelayed",
    "Stuck",
    "SwitchThrow",
    "TrainStopped",
    "WaitingAtPoint",
]
