"""An activity's plan as records: the player service and the AI services it names, with
their booked stops and start times (docs/activities.md §3); :func:`~tdbtools.physics.activity.plan_activity`
reads them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import TdbToolsError
from ..formats.activity import (
    ActivityFile,
    ServiceFile,
    StopItem,
)

#: Boarding: 10 s per waiting passenger per passenger car, at least 20 s (docs §5).


class ActivityError(TdbToolsError, ValueError):
    """An activity that cannot be replayed (missing service, path or consist)."""


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
