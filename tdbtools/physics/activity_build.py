"""Writing a whole activity into a route: paths (built with :mod:`tdbtools.track.pathbuild`),
services, the traffic file with the booked times, and the ``.act`` (docs/activities.md §7)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..formats.activity import (
    ActivityHeader,
    ServiceRef,
    StopItem,
    TrafficService,
    make_activity,
    make_service,
    make_traffic,
    write_stf_file,
)
from ..formats.route import Route
from ..track.pathbuild import build_path, platforms, write_path
from .activity import ActivityError


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    """One train of an activity to write.

    ``path`` is ``(from, to, via...)`` places for :func:`~tdbtools.track.pathbuild.build_path`
    (a new ``.pat`` is written), or the name of a path the route has. ``stops`` are
    ``(platform or station name, booked arrival, booked departure)`` in seconds since
    midnight; a station name picks its platform on the path.
    """

    name: str
    consist: str
    start: int
    path: tuple[str, ...] | str
    stops: tuple[tuple[str, int | None, int | None], ...] = ()
    player: bool = False
    efficiency: float = 0.9


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def write_activity_files(
    route: Route,
    name: str,
    services: Sequence[ServiceSpec],
    *,
    description: str = "",
    duration: int = 3600,
    reversals: bool = False,
) -> Path:
    """Write the files of an activity into ``route``'s folder and return the ``.act``."""
    folder = Path(route.folder)
    players = [s for s in services if s.player]
    if len(players) != 1:
        raise ActivityError(f"an activity needs exactly one player service, got {len(players)}")
    for sub in ("PATHS", "SERVICES", "TRAFFIC", "ACTIVITIES"):
        (folder / sub).mkdir(exist_ok=True)
    plats = platforms(route)
    refs: dict[str, ServiceRef] = {}
    traffic: list[TrafficService] = []
    for spec in services:
        if isinstance(spec.path, str):
            path_id = spec.path
            nodes: set[int] | None = None
        else:
            path_id = _safe(f"{name}_{spec.name}")
            built = build_path(
                route,
                spec.path[0],
                spec.path[1],
                list(spec.path[2:]),
                reversals=reversals,
                name=f"{spec.name}",
            )
            write_path(route, built, folder / "PATHS" / f"{path_id}.pat")
            nodes = {t.node for t in built.traversals}
        srv_name = _safe(f"{name}_{spec.name}")
        items = []
        for where, arr, dep in spec.stops:
            key = where.casefold()
            cands = [
                (i, p)
                for i, p in plats.items()
                if key in (p[3].platform_name.casefold(), p[3].station.casefold())
            ]
            if nodes is not None:
                cands = [c for c in cands if c[1][0] in nodes] or cands
            if not cands:
                raise ActivityError(f"service {spec.name!r}: no platform or station {where!r}")
            items.append(
                StopItem(cands[0][0], arr, dep, 0, 0.0, spec.efficiency if not spec.player else None)
            )
        srv = make_service(
            spec.name,
            spec.consist,
            path_id,
            efficiency=spec.efficiency,
            platform_ids=[i.platform_id for i in items],
        )
        write_stf_file(srv, folder / "SERVICES" / f"{srv_name}.srv")
        if spec.player:
            refs[spec.name] = ServiceRef(srv_name, spec.start, 0, tuple(items))
        else:
            refs[spec.name] = ServiceRef(
                srv_name,
                spec.start,
                None,
                tuple(StopItem(i.platform_id, None, None, 0, 0.0, i.efficiency) for i in items),
            )
            traffic.append(
                TrafficService(
                    srv_name,
                    spec.start,
                    tuple(StopItem(i.platform_id, i.arrival, i.depart, 0, 0.0) for i in items),
                )
            )
    trf_name = _safe(name)
    write_stf_file(make_traffic(trf_name, traffic), folder / "TRAFFIC" / f"{trf_name}.trf")
    player = refs[players[0].name]
    header = ActivityHeader(
        route_id=Path(route.folder).name,
        name=name,
        description=description,
        start_time=player.time,
        duration=duration,
        path_id=players[0].name,
    )
    ai = [refs[s.name] for s in services if not s.player]
    act = make_activity(header, player, trf_name, ai)
    return write_stf_file(act, folder / "ACTIVITIES" / f"{_safe(name)}.act")


__all__ = ["ServiceSpec", "write_activity_files"]
