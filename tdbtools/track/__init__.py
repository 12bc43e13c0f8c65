"""Track geometry and topology built on the typed route readers.

What belongs here: where things are on the track of a loaded route (section
geometry, world points, the traveller that walks the network, switch positions,
track items along nodes), paths resolved through the network, profiles along them,
and the route's consistency audit. Nothing here moves trains (that is
:mod:`tdbtools.physics`) or draws (:mod:`tdbtools.render`).

The names below are the public API; the modules hold more for specialised use
(:mod:`~tdbtools.track.geometry`'s vectorised helpers, :mod:`~tdbtools.track.spatial`'s
index and caches, the finding tables of :mod:`~tdbtools.track.audit`).
Coordinates and conventions: ``docs/formats.md``.
"""

from .audit import AuditFinding, AuditReport, audit_paths, audit_route
from .geometry import TILE_SIZE, SectionGeometry, WorldPoint, point_at, section_geometry
from .items import ItemPosition, PassedItem, item_positions
from .locate import TrackLocation, WorldPointError, locate_point, parse_world_point
from .network import BACKWARD, FORWARD, Pose, TravellerError
from .pathbuild import BuiltPath, PathBuildError, build_path, check_pat_target, write_path
from .paths import PathError, ResolvedPath, find_path_file, resolve_path, resolve_route_paths
from .polylines import sample_route
from .profile import Profile, profile_from, profile_path
from .spatial import nearest_track
from .switches import Switches
from .traveller import Located, Traveller

__all__ = [
    "BACKWARD",
    "FORWARD",
    "TILE_SIZE",
    "AuditFinding",
    "AuditReport",
    "BuiltPath",
    "PathBuildError",
    "WorldPointError",
    "build_path",
    "check_pat_target",
    "find_path_file",
    "parse_world_point",
    "write_path",
    "ItemPosition",
    "Located",
    "PassedItem",
    "PathError",
    "Pose",
    "Profile",
    "ResolvedPath",
    "SectionGeometry",
    "Switches",
    "TrackLocation",
    "Traveller",
    "TravellerError",
    "WorldPoint",
    "audit_paths",
    "audit_route",
    "item_positions",
    "locate_point",
    "nearest_track",
    "point_at",
    "profile_from",
    "profile_path",
    "resolve_path",
    "resolve_route_paths",
    "sample_route",
    "section_geometry",
]
