"""Typed readers for the route files: tdb/rdb, tsection.dat, trk, .pat, consists and
rolling stock; route loading.

What belongs here: turning one file type's generic STF tree into typed, frozen
records and numpy columns (and finding the files of a route), with located errors;
no geometry or topology beyond what the file says (that is :mod:`tdbtools.track`).
"""

from .consist import CarEntry, Consist, read_consist, resolve_stock
from .pat import PathFile, TrackPDP, TrPathNode, read_pat
from .route import Route, RouteFiles, find_route_files, load_route
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

__all__ = [
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
