"""Track geometry and topology built on the typed route readers (spec §11, §6.4)."""
from .geometry import (TILE_SIZE, Adjacency, Closure, Polylines, SectionGeometry, TrackPoint,
                       absolute_xz, adjacency, closure, connected_components, locate_in_section,
                       node_lengths, normalize_tile, point_at, sample_node, sample_route,
                       section_end, section_geometry, to_tile, wrap_angle)

__all__ = [
    "TILE_SIZE", "Adjacency", "Closure", "Polylines", "SectionGeometry", "TrackPoint",
    "absolute_xz", "adjacency", "closure", "connected_components", "locate_in_section",
    "node_lengths", "normalize_tile", "point_at", "sample_node", "sample_route",
    "section_end", "section_geometry", "to_tile", "wrap_angle",
]

# The traveller (spec §12) and the spatial index of sections.
from .spatial import SectionGrid, clear_route_cache, section_grid, track_geometry  # noqa: E402
from .traveller import (BACKWARD, FORWARD, INIT_ERROR_MARGIN, MAX_CENTERLINE_OFFSET,  # noqa: E402
                        MIN_MOVE, ItemPosition, Located, PassedItem, Pose, Switches, Traveller,
                        TravellerError, WorldLocation, item_positions, nearest_track)

__all__ += [
    "SectionGrid", "clear_route_cache", "section_grid", "track_geometry",
    "BACKWARD", "FORWARD", "INIT_ERROR_MARGIN", "MAX_CENTERLINE_OFFSET", "MIN_MOVE",
    "ItemPosition", "Located", "PassedItem", "Pose", "Switches", "Traveller", "TravellerError",
    "WorldLocation", "item_positions", "nearest_track",
]

# Paths, profiles and the route audit.
from .audit import AuditFinding, AuditReport, audit_paths, audit_route  # noqa: E402
from .paths import Leg, PathError, Place, ResolvedPath, Traversal, resolve_path, resolve_route_paths  # noqa: E402
from .profile import Profile, profile_from, profile_path  # noqa: E402

__all__ += [
    "AuditFinding", "AuditReport", "audit_paths", "audit_route", "Leg", "PathError", "Place",
    "ResolvedPath", "Traversal", "resolve_path", "resolve_route_paths", "Profile", "profile_from",
    "profile_path",
]
