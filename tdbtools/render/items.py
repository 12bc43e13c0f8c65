"""Which marker layer each track item belongs to, as Open Rails' TrackViewer separates
them (docs/render.md §1): a speed post that marks a distance is a milepost, not a speed
post; crossovers, level crossings, sound regions and (from the road database) car
spawners are layers of their own. numpy only; no drawing here."""

from __future__ import annotations

from dataclasses import dataclass

from ..formats.tdb import (
    CarSpawnerItem,
    CrossoverItem,
    LevelCrItem,
    PlatformItem,
    SidingItem,
    SignalItem,
    SoundRegionItem,
    SpeedPostItem,
    TrItem,
)


@dataclass(frozen=True, slots=True)
class MarkerKind:
    """One marker layer: its legend name, glyph colour and size (pixels), and its label
    priority (higher labels are placed first; 0: the layer's names are not drawn in the
    picture, only in the page's hover and a click's pick)."""

    kind: str
    name: str
    color: str
    px: int
    priority: int


#: In drawing and legend order. Priorities: findings 9 (scene.py), then stations,
#: signals, speed limits, sidings, mileposts (docs/render.md §4).
KINDS: tuple[MarkerKind, ...] = (
    MarkerKind("junction", "junction", "#e6a800", 6, 0),
    MarkerKind("end", "end of track", "#505050", 5, 0),
    MarkerKind("signal", "signal", "#1a9e3f", 7, 6),
    MarkerKind("speedpost", "speed post", "#8c564b", 6, 5),
    MarkerKind("milepost", "milepost", "#7a7a00", 6, 2),
    MarkerKind("platform", "platform", "#0095d9", 9, 8),
    MarkerKind("siding", "siding", "#9b4dca", 7, 4),
    MarkerKind("crossover", "crossover", "#6b6b6b", 4, 0),
    MarkerKind("levelcr", "level crossing", "#ff5fa2", 7, 0),
    MarkerKind("soundregion", "sound region", "#17becf", 5, 0),
    MarkerKind("carspawner", "car spawner", "#ff7f0e", 6, 0),
)
BY_KIND = {k.kind: k for k in KINDS}
#: Layers whose items come from the road database (.rdb), not the track database.
ROAD_KINDS = ("carspawner",)


def item_kind(it: TrItem, *, road: bool = False) -> str | None:
    """The marker layer of a track (or, ``road``, a road database) item; None: not drawn
    (empty items, hazards, pickups, a road's own level crossings)."""
    if road:
        return "carspawner" if isinstance(it, CarSpawnerItem) else None
    if isinstance(it, SpeedPostItem):
        return "milepost" if it.is_milepost else "speedpost"
    for cls, kind in (
        (SignalItem, "signal"),
        (PlatformItem, "platform"),
        (SidingItem, "siding"),
        (CrossoverItem, "crossover"),
        (LevelCrItem, "levelcr"),
        (SoundRegionItem, "soundregion"),
    ):
        if isinstance(it, cls):
            return kind
    return None


def item_label(it: TrItem, *, milepost_km: bool = True) -> str:
    """The label of an item: a speed limit in its own unit, a milepost's distance with
    the route's milepost unit, a platform's or siding's name, a signal's type."""
    if isinstance(it, SpeedPostItem):
        if it.value is None:
            return ""
        if it.is_milepost:
            return f"{'km' if milepost_km else 'mile'} {it.value:g}"
        if it.is_resume:
            return ""
        return f"{it.value:g}{' mph' if it.in_mph else ''}"
    if isinstance(it, PlatformItem):
        return it.platform_name or it.station
    if isinstance(it, SidingItem):
        return it.siding_name
    if isinstance(it, SignalItem):
        return it.signal_type
    return ""


__all__ = ["BY_KIND", "KINDS", "MarkerKind", "ROAD_KINDS", "item_kind", "item_label"]
