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
