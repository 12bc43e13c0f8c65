"""Train physics: forces per car, car-to-car interaction by momentum transfer, and
replays of consists over imported routes (seeds 000, 003, 004; spec §14).

From a notebook::

    from tdbtools.physics import replay, read_scenario
    result = replay("scenario.toml")            # or a Scenario built in Python
    result.traces["IC3"]["speed"]               # numpy columns per train
    result.summary, result.events
    result.write("out/")                        # the CSV/JSON files the CLI writes
"""
from .driver import AutoDriver, Controls, ScheduleDriver
from .engine import Bodies, Engine, Event
from .forces import BrakeMode, CarModel
from .interaction import clash_time, stopping_time
from .replay import Replay, ReplayError, ReplayResult, replay
from .scenario import Command, Scenario, ScenarioError, StartPoint, SwitchEvent, TrainSpec, read_scenario
from .trackline import TrackLine

__all__ = [
    "AutoDriver", "Bodies", "BrakeMode", "CarModel", "Command", "Controls", "Engine", "Event", "Replay",
    "ReplayError", "ReplayResult", "Scenario", "ScenarioError", "ScheduleDriver", "StartPoint",
    "SwitchEvent", "TrackLine", "TrainSpec", "clash_time", "read_scenario", "replay", "stopping_time",
]
