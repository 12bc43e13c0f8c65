"""Whole paths with reversal points: where a train turns, and how it turns
(docs/activities.md §4.4).

A path with reversal points is cut into reversal-free *parts*
(:meth:`~tdbtools.physics.trackline.TrackLine.path_parts`). This module decides, for a
train of a given length, where on each part it stops to change direction and where
the next part takes it up:

* at a reversal whose next part leaves the way it came at a junction (the *diverging*
  junction), the train runs until its whole length is past that junction's clearance
  point, or to the reversal point if that comes first (Open Rails' rule, §4.4);
* at a reversal on plain track (the next part goes back the way the train came), it
  runs up to the reversal point.

The direction change itself turns the consist round (:func:`reverse_consist`): the
cars in the opposite order, each car flipped, so the former rear car leads. The
physics replay runs each part as a train of its own on the part's line; the next part
enters where the train stands, facing the other way, once the previous part has
stopped (``activity.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import TdbToolsError
from ..formats.consist import Consist
from ..formats.route import Route
from ..track.paths import ResolvedPath
from .trackline import TrackLine

__all__ = ["REVERSAL_S", "PartPlan", "ReversalError", "plan_parts", "reverse_consist"]

#: Seconds a train stands at a reversal point between stopping and moving off the other
#: way (the driver changing ends). Open Rails' AI has no fixed figure for activities; its
#: timetable mode delays a restart by a configurable time: a simplification.
REVERSAL_S = 10.0
#: Metres the train clears the diverging junction's clearance point by.
CLEAR_MARGIN_M = 1.0


class ReversalError(TdbToolsError):
    """A reversal the train cannot make (the part is too short, the next part does not fit).
    ``point``: the reversal's position in the path's main chain (None if unknown)."""

    def __init__(self, message: str, point: int | None = None) -> None:
        super().__init__(message)
        self.point = point


def reverse_consist(consist: Consist) -> Consist:
    """The consist after a change of direction: cars back to front, each turned round."""
    cars = tuple(dataclasses.replace(c, flipped=not c.flipped) for c in reversed(consist.cars))
    return dataclasses.replace(consist, cars=cars)


@dataclass(frozen=True, slots=True, eq=False)
class PartPlan:
    """One part of a train's path as the train runs it.

    ``start_offset``: where its rear starts on the part's line (the first part: the
    path's; later parts: where the previous part stopped). ``end_s``: the line distance
    where its front stops (a reversal, or the path end for the last part). ``turned``:
    the consist runs reversed on this part (odd parts). ``diverge``: the junction the
    next part leaves by (None: plain track or the last part); ``reversal_s``: the
    reversal point on this part's line."""

    part: int
    line: TrackLine
    start_offset: float
    end_s: float
    reversal_s: float
    turned: bool
    diverge: int | None

    @property
    def last(self) -> bool:
        return self.part == self.line.parts - 1


def _divergence(here: TrackLine, nxt: TrackLine) -> tuple[float, int | None]:
    """Metres along ``nxt`` (from the reversal point) to where it leaves the track
    ``here`` came on, and the junction there (None: it never does within ``here``)."""
    L = float(here.path_length)
    span = min(L, float(nxt.path_length))
    if span <= 0.0:
        return 0.0, None
    x = np.arange(0.25, span, 0.5)
    a, _, _ = nxt.node_offset(x)
    b, _, _ = here.node_offset(L - x)
    off = np.flatnonzero(a != b)
    if len(off) == 0:
        return span, None
    at = float(x[off[0]])
    js = np.flatnonzero(nxt.junction_s <= at + 1e-6)
    if len(js) == 0:
        return at, None
    j = int(js[-1])
    return float(nxt.junction_s[j]), int(nxt.junction_node[j])


def plan_parts(
    route: Route,
    res: ResolvedPath,
    train_length: float,
    *,
    start_offset: float,
    clearance: Callable[[int], float],
    extend: float = 2000.0,
) -> list[PartPlan]:
    """Where a train of ``train_length`` m runs each part of the path ``res`` (module
    docstring). ``clearance(junction)``: metres from a junction's switch point to its
    clearance point. Raises :class:`ReversalError` naming the path and the reversal
    point when a reversal cannot be made."""
    lines = TrackLine.path_parts(route, res, extend=extend)
    plans: list[PartPlan] = []
    offset = float(start_offset)
    for k, line in enumerate(lines):
        L = float(line.path_length)
        front0 = offset + train_length
        if k == len(lines) - 1:
            plans.append(PartPlan(k, line, offset, L, L, k % 2 == 1, None))
            break
        point = res.reversals[k] if k < len(res.reversals) else -1
        d, junction = _divergence(line, lines[k + 1])
        if junction is not None:
            stop = min(L, L - d + clearance(junction) + CLEAR_MARGIN_M + train_length)
        else:
            stop = L
        if stop < front0 - 1e-6:
            raise ReversalError(
                f"path {res.path}: the train ({train_length:.0f} m) starts past its reversal at "
                f"path point {point} (part {k}: front at {front0:.1f} m, reversal at {stop:.1f} m)",
                point,
            )
        stop = max(stop, front0)
        plans.append(PartPlan(k, line, offset, stop, L, k % 2 == 1, junction))
        offset = L - stop  # the former front is the new rear, `L - stop` from the reversal point
        nxt = lines[k + 1]
        if offset + train_length > nxt.length + 1e-6:
            raise ReversalError(
                f"path {res.path}: after its reversal at path point {point} the train "
                f"({train_length:.0f} m) does not fit on the track ({nxt.length:.0f} m)",
                point,
            )
    return plans
