"""A service's whole path in an activity replay: its parts, their stops and waiting
points, and how far the train got (docs/activities.md §4.4, §4.5, §5).

An activity service whose path has reversal points runs as one train of the physics
replay per part of its path (:mod:`.reversal`): part 1 keeps the service's name,
part k is ``"<name> [k]"``. A later part waits off the track until the part before it
has stopped at its reversal, stands :data:`~.reversal.REVERSAL_S` seconds and then
enters where that one stood, facing the other way. Booked stops are matched in order
to the platforms of the parts; waiting points to the parts they lie on.

Paths without reversals run as before (one train on the replay's own line).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Diagnostics, TdbToolsError
from ..formats.activity import StopItem
from ..formats.consist import resolve_stock
from ..formats.pat import read_pat
from ..formats.route import Route
from ..track.pathnodes import check_path, node_error, wait_order
from ..track.paths import ResolvedPath
from . import forces
from .reversal import PartPlan, ReversalError, plan_parts
from .scenario import TrainSpec, resolve_file

__all__ = [
    "ServicePart",
    "assign_stops",
    "part_name",
    "part_waits",
    "service_parts",
]


def part_name(service: str, k: int) -> str:
    """The replay train of part ``k`` (from 0) of a service."""
    return service if k == 0 else f"{service} [{k + 1}]"


@dataclass(slots=True)
class ServicePart:
    """One replay train of a service: its spec and (for a path with reversals) its plan."""

    service: str
    spec: TrainSpec
    plan: PartPlan | None
    #: (line distance, seconds, clock time to wait until or None) of its waiting points
    waits: list[tuple[float, float, int | None]] = field(default_factory=list)
    #: what the replay tolerates on this service's path (waiting-point orders it does not carry out)
    notes: list[str] = field(default_factory=list)

    @property
    def index(self) -> int:
        return 0 if self.plan is None else self.plan.part

    @property
    def last(self) -> bool:
        return self.plan is None or self.plan.last


def _train_length(consist_name: Path, route: Route, sdir: Path, stand_in: bool) -> float | None:
    """The consist's length in metres (None when it cannot be read: the replay then says why)."""
    from .stages.setup import _consist, _stock_root

    try:
        spec = TrainSpec(name="-", consist=consist_name)
        consist = _consist(spec, route, sdir)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            stocks = resolve_stock(
                consist,
                _stock_root(consist, route),
                stand_in=stand_in,
                diagnostics=Diagnostics(strict=False),
            )
    except TdbToolsError:
        return None
    model = forces.CarModel.from_stock(stocks, [c.flipped for c in consist.cars])
    return float(model.length.sum())


def part_waits(pat: Path, res: ResolvedPath) -> list[list[tuple[float, float, int | None]]]:
    """The waiting points of each part of a path: (line distance on its part, seconds,
    clock time to wait until or None), read as Open Rails reads them
    (:func:`~tdbtools.track.pathnodes.wait_order`). A point is where its leg starts
    (docs/activities.md §4.5)."""
    pf = read_pat(pat, diagnostics=Diagnostics(strict=False))
    chain = list(pf.main_chain())
    out: list[list[tuple[float, float, int | None]]] = [[]]
    s = 0.0
    for k, leg in enumerate(res.legs):
        if k > 0 and k in res.reversals:
            out.append([])
            s = 0.0
        if 0 < leg.from_point < len(chain):
            w = pf.nodes[chain[leg.from_point]].wait_seconds
            if w is not None:
                order = wait_order(w)
                out[-1].append((s, order.seconds, order.until))
        s += leg.length
    return out


def service_parts(
    name: str,
    consist: Path,
    path: Path,
    route: Route,
    sdir: Path,
    stand_in: bool,
    clearance,  # noqa: ANN001  (junction -> metres)
) -> list[ServicePart]:
    """The replay trains of one service: one, or one per part when its path reverses.
    Every node of the path is checked as Open Rails reads it: a node the train cannot
    follow (off the track, no way on, an unknown flag, a reversal it cannot make) is a
    located :class:`~tdbtools.track.pathnodes.PathNodeError`, never a shorter run."""
    base = TrainSpec(name=name, consist=consist, path=path, driver="auto", start_speed=0.0)
    pat = resolve_file(path, sdir, Path(route.folder) / "PATHS", Path(route.folder), suffix=".pat")
    if pat is None:
        return [ServicePart(name, base, None)]  # (the replay says the path is missing)
    res, notes = check_path(route, pat)
    if not res.reversals:
        return [ServicePart(name, base, None, notes=notes)]
    length = _train_length(consist, route, sdir, stand_in)
    if length is None:
        return [ServicePart(name, base, None, notes=notes)]  # (the replay says why)
    try:
        plans = plan_parts(route, res, length, start_offset=0.0, clearance=clearance)
    except ReversalError as exc:
        chain = list(read_pat(pat, diagnostics=Diagnostics(strict=False)).main_chain())
        node = chain[exc.point] if exc.point is not None and 0 <= exc.point < len(chain) else None
        raise node_error(pat, node, f"service {name!r}: {exc}") from None
    waits = part_waits(pat, res)
    out = []
    for p in plans:
        spec = TrainSpec(
            name=part_name(name, p.part),
            consist=consist,
            path=path,
            driver="auto",
            start_speed=0.0,
            start_offset=p.start_offset,
            turned=p.turned,
        )
        w = waits[p.part] if p.part < len(waits) else []
        out.append(ServicePart(name, spec, p, w, notes if p.part == 0 else []))
    return out


def _platform_span(line, p) -> list[tuple[float, float]]:  # noqa: ANN001
    spans = []
    for sa in line.locate(p.node, p.near):
        for sb in line.locate(p.node, p.far):
            lo, hi = sorted((float(sa), float(sb)))
            if abs((hi - lo) - p.length) < 1.0:
                spans.append((lo, hi))
    return spans


def assign_stops(
    parts: Sequence[tuple[Any, float, float]],  # (line, front0, end_s) per part
    train_length: float,
    booked: tuple[StopItem, ...],
    plats: dict,
    place,  # noqa: ANN001  (activity.place_stops)
    make_stop,  # noqa: ANN001  (activity.Stop)
) -> tuple[list[list], list[str], list[bool]]:
    """Booked stops matched in order to the platforms of the parts (docs/activities.md
    §5): per part its stops, the warnings, and per part whether its first stop is an
    *origin stop* (the train starts at the platform: it stands there until its booked
    departure). A platform is looked for on the current part after the last stop, then
    on the later parts."""
    per: list[list] = [[] for _ in parts]
    origin = [False] * len(parts)
    warns: list[str] = []
    cur = 0
    after = [front0 - 1e-6 for _line, front0, _end in parts]
    for n, item in enumerate(booked):
        p = plats.get(item.platform_id)
        if p is None:
            warns.append(f"platform id {item.platform_id} is not a platform of the route")
            continue
        found = False
        if n == 0 and cur == 0:
            line, front0, end = parts[0]
            # Open Rails: a train placed at its first booked platform makes that stop there.
            for lo, hi in _platform_span(line, p):
                if lo - 1e-6 <= front0 and front0 - train_length <= hi + 1e-6:
                    per[0].append(make_stop(p, item, front0))
                    origin[0] = True
                    after[0] = front0
                    found = True
                    break
        if found:
            continue
        for q in range(cur, len(parts)):
            line, _front0, end = parts[q]
            got, _w = place(line, after[q] + 1e-6, train_length, (item,), plats)
            if got and got[0].stop_s <= end + 1e-6:
                st = got[0]
                if q < len(parts) - 1:  # before the reversal: the stop is made, then the turn
                    st.stop_s = min(st.stop_s, end - 1.0)
                per[q].append(st)
                after[q] = st.stop_s
                cur = q
                found = True
                break
        if not found:
            warns.append(f"platform {p.name!r} (id {item.platform_id}) is not on the path")
    return per, warns, origin


def distance_run(x_front: float, front0: float) -> float:
    """Metres a part's front moved forward from where it started."""
    return max(float(x_front) - float(front0), 0.0) if math.isfinite(x_front) else 0.0


def path_length_of(end_s: float, front0: float) -> float:
    """Metres a part has to run: from its front at the start to its stopping place."""
    return max(float(end_s) - float(front0), 0.0)
