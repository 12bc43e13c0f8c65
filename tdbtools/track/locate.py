"""The track at one world point, as one record (what ``tdbtools locate`` prints)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import TdbToolsError, truncate_value
from ..formats.route import Route
from .traveller import MAX_CENTERLINE_OFFSET, Traveller

__all__ = ["TrackLocation", "WorldPointError", "locate_point", "parse_world_point"]


@dataclass(frozen=True, slots=True)
class TrackLocation:
    """Where a world point lies on the track, facing the node's own direction.

    ``section`` is the section's position in its node, ``section_id`` its tsection.dat
    id; ``offset`` metres from the node start; ``lateral`` metres right of the centre
    line; ``tile_x`` … ``z`` the point on the centre line; ``pitch`` and ``curvature``
    as in :class:`~tdbtools.track.Pose`; ``radius`` None on straight track."""

    node: int
    node_kind: str
    section: int
    section_id: int
    offset: float
    node_length: float
    direction: int
    lateral: float
    tile_x: int
    tile_z: int
    x: float
    y: float
    z: float
    heading_deg: float
    pitch: float
    grade_permille: float
    curvature: float
    radius: float | None

    def to_json(self) -> dict:
        """The record ``tdbtools locate --json`` prints."""
        return {
            "node": self.node,
            "node_kind": self.node_kind,
            "section": self.section,
            "section_id": self.section_id,
            "offset": self.offset,
            "node_length": self.node_length,
            "direction": self.direction,
            "lateral": self.lateral,
            "location": {"tile_x": self.tile_x, "tile_z": self.tile_z, "x": self.x, "y": self.y, "z": self.z},
            "heading_deg": self.heading_deg,
            "pitch": self.pitch,
            "grade_permille": self.grade_permille,
            "curvature": self.curvature,
            "radius": self.radius,
        }


def locate_point(
    route: Route, tile_x: int, tile_z: int, x: float, z: float, *, tolerance: float = MAX_CENTERLINE_OFFSET
) -> TrackLocation:
    """The track at the world point (tile_x, tile_z, x, z) by the rule of
    :meth:`Traveller.at`, within ``tolerance`` metres of the centre line (Open Rails'
    2.5 m by default); raises :class:`~tdbtools.track.TravellerError` (with the
    distance to the nearest track) when no track is close enough."""
    found = Traveller.locate_many(route, [tile_x], [tile_z], [x], [z], max_lateral=tolerance)
    if not found.found[0]:
        Traveller.at(route, tile_x, tile_z, x, z, max_lateral=tolerance)  # raises with the nearest distance
    t = found.traveller(0)
    p = t.pose()
    return TrackLocation(
        node=t.node_index,
        node_kind=type(t.node).__name__,
        section=t.section_index,
        section_id=int(route.tdb.sections.section_index[t.section_row]),
        offset=t.offset,
        node_length=t.track_node_length,
        direction=t.direction,
        lateral=float(found.lateral[0]),
        tile_x=p.tile_x,
        tile_z=p.tile_z,
        x=p.x,
        y=p.y,
        z=p.z,
        heading_deg=math.degrees(p.heading),
        pitch=p.pitch,
        grade_permille=p.grade * 1000.0,
        curvature=p.curvature,
        radius=1.0 / abs(p.curvature) if p.curvature else None,
    )


#: Tiles beyond this are not on any route (MSTS tiles are numbered within ±16384).
MAX_TILE = 1 << 20
#: Metres from a tile's centre: a point in a tile is within ±1024 m; a little more is allowed.
MAX_IN_TILE = 1e6


def parse_world_point(text: str) -> tuple[int, int, float, float]:
    """A world point as every command writes it: ``TX,TZ,X,Z`` (tile x, tile z, then
    metres east and north of the tile's centre), e.g. ``-5631,15116,-43,-364.7``.
    Spaces around the commas are allowed. Raises :class:`ValueError` (a
    :class:`~tdbtools.errors.TdbToolsError`) for anything else."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        if len(parts) != 4:
            raise ValueError
        tx, tz = int(parts[0]), int(parts[1])
        x, z = float(parts[2]), float(parts[3])
    except ValueError:
        raise WorldPointError(
            f"{truncate_value(text)} is not a world point TX,TZ,X,Z (two whole tile numbers, then "
            "two coordinates in metres, e.g. -5631,15116,-43,-364.7)"
        ) from None
    if not (
        abs(tx) <= MAX_TILE
        and abs(tz) <= MAX_TILE
        and all(math.isfinite(v) and abs(v) <= MAX_IN_TILE for v in (x, z))
    ):
        raise WorldPointError(f"{truncate_value(text)}: coordinates out of range")
    return tx, tz, x, z


class WorldPointError(TdbToolsError, ValueError):
    """Text that is not a world point ``TX,TZ,X,Z``."""
