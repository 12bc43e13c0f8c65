"""Typed readers for the route files: tdb/rdb, tsection.dat, trk, .pat, consists and
rolling stock, activities (.act/.srv/.trf), sigcfg.dat and world files; route loading.

What belongs here: turning one file type's generic STF tree into typed, frozen
records and numpy columns (and finding the files of a route), with located errors;
no geometry or topology beyond what the file says (that is :mod:`tdbtools.track`).
"""

from .activity import (
    ActivityFile,
    ServiceFile,
    TrafficFile,
    find_activity_file,
    read_activity,
    read_service,
    read_traffic,
)
from .consist import CarEntry, Consist, read_consist, resolve_stock
from .pat import PathFile, TrackPDP, TrPathNode, read_pat
from .route import Route, RouteFiles, find_route_files, load_route
from .sigcfg import SignalConfig, find_sigcfg, load_sigcfg, read_sigcfg
from .stock import Coupler, Stock, read_stock
from .tdb import (
    CarSpawnerItem,
    CrossoverItem,
    EmptyItem,
    EndNode,
    HazzardItem,
    JunctionNode,
    LevelCrItem,
    PickupItem,
    PlatformItem,
    SidingItem,
    SignalItem,
    SoundRegionItem,
    SpeedPostItem,
    TrackDB,
    TrItem,
    TrPin,
    UiD,
    VectorNode,
    VectorSections,
    read_tdb,
)
from .trk import RouteFile, read_trk
from .tsection import ShapePath, TrackSection, TrackShape, TSection, read_tsection, read_tsection_file
from .world import SignalWorld, WorldFile, load_signal_world, read_world, world_files

__all__ = [
    "ActivityFile",
    "ServiceFile",
    "SignalConfig",
    "SignalWorld",
    "TrafficFile",
    "WorldFile",
    "find_activity_file",
    "find_sigcfg",
    "load_sigcfg",
    "load_signal_world",
    "read_activity",
    "read_service",
    "read_sigcfg",
    "read_traffic",
    "read_world",
    "world_files",
    "CarEntry",
    "Consist",
    "Coupler",
    "PathFile",
    "Stock",
    "TrPathNode",
    "TrackPDP",
    "read_consist",
    "read_pat",
    "read_stock",
    "resolve_stock",
    "CarSpawnerItem",
    "CrossoverItem",
    "EmptyItem",
    "EndNode",
    "HazzardItem",
    "JunctionNode",
    "LevelCrItem",
    "PickupItem",
    "PlatformItem",
    "Route",
    "RouteFile",
    "RouteFiles",
    "ShapePath",
    "SidingItem",
    "SignalItem",
    "SoundRegionItem",
    "SpeedPostItem",
    "TSection",
    "TrItem",
    "TrPin",
    "TrackDB",
    "TrackSection",
    "TrackShape",
    "UiD",
    "VectorNode",
    "VectorSections",
    "find_route_files",
    "load_route",
    "read_tdb",
    "read_trk",
    "read_tsection",
    "read_tsection_file",
]
