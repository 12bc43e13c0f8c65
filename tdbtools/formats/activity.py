"""Activities (``.act``), services (``.srv``) and traffic (``.trf``) (docs/activities.md §3).

Each file is read into a frozen record of the fields a replay uses, and keeps the
parsed STF tree it came from: writing gives that tree back, so a read–write round
trip is lossless (blocks the record does not model — events, activity objects,
restricted zones, Open Rails overrides — are kept untouched). New files are made with
the ``make_*`` builders, which build the tree and read it back, so a record's fields
and its tree never disagree.

Times are integer seconds since midnight. Booked stop items have no brackets of their
own: a run of ``ArrivalTime``/``DepartTime``/``SkipCount``/``DistanceDownPath``/
``Efficiency`` is completed each time ``PlatformStartID`` appears, earlier values
carrying over (docs/activities.md §3.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import Diagnostics
from ..stf import parse_file, resolve_case_insensitive
from ..stf.parser import parse_text
from ..stf.tree import Block, Item, QStr
from ._read import Reader, to_float, to_int

__all__ = [
    "ActivityFile",
    "ActivityHeader",
    "ServiceFile",
    "ServiceRef",
    "StopItem",
    "TrafficFile",
    "TrafficService",
    "find_activity_file",
    "make_activity",
    "make_service",
    "make_traffic",
    "read_activity",
    "read_service",
    "read_traffic",
    "write_stf_file",
]

ACT_SIGNATURE = "SIMISA@@@@@@@@@@JINX0a0t______"
SRV_SIGNATURE = "SIMISA@@@@@@@@@@JINX0v0t______"
TRF_SIGNATURE = "SIMISA@@@@@@@@@@JINX0f0t______"
#: Bound on booked stops and services read from one file.
MAX_ENTRIES = 100_000


@dataclass(frozen=True, slots=True)
class StopItem:
    """A booked stop: the platform (either of its two TDB item ids) and the times
    (seconds since midnight, None when the file gives none)."""

    platform_id: int
    arrival: int | None = None
    depart: int | None = None
    skip_count: int | None = None
    distance_down_path: float | None = None
    efficiency: float | None = None


@dataclass(frozen=True, slots=True)
class ServiceRef:
    """A service started by an activity: ``SERVICES/<name>.srv`` at ``time``."""

    name: str
    time: int
    uid: int | None
    stops: tuple[StopItem, ...] = ()


@dataclass(frozen=True, slots=True)
class ActivityHeader:
    route_id: str = ""
    name: str = ""
    description: str = ""
    briefing: str = ""
    start_time: int = 10 * 3600
    duration: int = 3600
    season: int = 1
    weather: int = 0
    difficulty: int = 0
    mode: int = 2
    path_id: str = ""
    starting_speed: float = 0.0


@dataclass(frozen=True, slots=True, eq=False)
class ActivityFile:
    path: str
    serial: int | None
    header: ActivityHeader
    player: ServiceRef | None
    traffic_name: str | None
    services: tuple[ServiceRef, ...]
    events: int  # number of events (kept in the tree)
    tree: Block = field(repr=False)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ActivityFile) and self.tree == other.tree


@dataclass(frozen=True, slots=True, eq=False)
class ServiceFile:
    path: str
    serial: int | None
    name: str
    train_config: str
    path_id: str
    max_wheel_acceleration: float | None
    efficiency: float | None
    starting_speed: float
    ending_speed: float | None
    platform_ids: tuple[int, ...]  # StationStop PlatformStartIDs (OR ignores them)
    tree: Block = field(repr=False)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ServiceFile) and self.tree == other.tree


@dataclass(frozen=True, slots=True)
class TrafficService:
    name: str
    time: int
    stops: tuple[StopItem, ...]


@dataclass(frozen=True, slots=True, eq=False)
class TrafficFile:
    path: str
    name: str
    serial: int | None
    services: tuple[TrafficService, ...]
    tree: Block = field(repr=False)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TrafficFile) and self.tree == other.tree

    def entry(self, name: str, time: int) -> TrafficService | None:
        """The entry of an activity's AI service: same name (exact case) and same start
        time (docs/activities.md §3.4); None when there is none."""
        for s in self.services:
            if s.name == name and s.time == time:
                return s
        return None


# -- reading ------------------------------------------------------------------------------


def _items_of(rd: Reader, blk: Block, start: int) -> tuple[list[StopItem], int | None]:
    """The stop items in ``blk.items[start:]`` and the UiD, if any."""
    cur: dict = {}
    stops: list[StopItem] = []
    uid = None
    for it in blk.items[start:]:
        if it.__class__ is not Block:
            continue
        k = it.key
        if k == "uid":
            uid = rd.value(it, 0, to_int, 0, "UiD")
        elif k == "arrivaltime":
            cur["arrival"] = int(rd.quantity(it, 0, "time", default=0.0))
        elif k == "departtime":
            cur["depart"] = int(rd.quantity(it, 0, "time", default=0.0))
        elif k == "skipcount":
            cur["skip_count"] = rd.value(it, 0, to_int, 0, "skip count")
        elif k == "distancedownpath":
            cur["distance_down_path"] = rd.value(it, 0, to_float, 0.0, "distance")
        elif k == "efficiency":
            cur["efficiency"] = rd.value(it, 0, to_float, 0.0, "efficiency")
        elif k == "platformstartid":
            if len(stops) >= MAX_ENTRIES:
                rd.problem(it, f"more than {MAX_ENTRIES} stop items")
                break
            stops.append(StopItem(rd.value(it, 0, to_int, 0, "platform id"), **cur))
    return stops, uid


def _service_ref(rd: Reader, blk: Block) -> ServiceRef:
    name = rd.string(blk, 0)
    t = rd.value(blk, 1, to_int, 0, "start time")
    stops, uid = _items_of(rd, blk, 2)
    return ServiceRef(name, t, uid, tuple(stops))


def _text(rd: Reader, blk: Block | None, default: str = "") -> str:
    if blk is None or not blk.items:
        return default
    return " ".join(str(v) for v in blk.items if v.__class__ is not Block)


def _doc(path: str | Path, diags: Diagnostics) -> Block:
    return parse_file(path, diagnostics=diags)


def read_activity(
    path: str | Path, *, strict: bool = True, diagnostics: Diagnostics | None = None
) -> ActivityFile:
    """Read an ``.act`` file."""
    diags = diagnostics if diagnostics is not None else Diagnostics(strict=strict)
    return activity_from_tree(_doc(path, diags), diags, str(path))


def activity_from_tree(doc: Block, diags: Diagnostics, path: str = "") -> ActivityFile:
    rd = Reader(diags)
    root = rd.require(doc, "Tr_Activity")
    if root is None:
        return ActivityFile(path, None, ActivityHeader(), None, None, (), 0, doc)
    serial = None
    s = root.find("Serial")
    if s is not None:
        serial = rd.value(s, 0, to_int, 0, "serial")
    hdr = ActivityHeader()
    h = root.find("Tr_Activity_Header")
    if h is not None:
        vals: dict = {}
        for b in h.blocks():
            k = b.key
            if k in ("routeid", "name", "description", "briefing", "pathid"):
                vals[{"routeid": "route_id", "pathid": "path_id"}.get(k, k)] = _text(rd, b)
            elif k == "starttime":
                hh, mm, ss = (rd.value(b, i, to_int, 0, "time") for i in range(3))
                vals["start_time"] = hh * 3600 + mm * 60 + ss
            elif k == "duration":
                hh, mm = (rd.value(b, i, to_int, 0, "duration") for i in range(2))
                vals["duration"] = hh * 3600 + mm * 60
            elif k in ("season", "weather", "difficulty", "mode"):
                vals[k] = rd.value(b, 0, to_int, 0, k)
            elif k == "startingspeed":
                vals["starting_speed"] = rd.quantity(b, 0, "speed", default=0.0)
        hdr = ActivityHeader(**vals)
    player = None
    traffic_name = None
    services: list[ServiceRef] = []
    events = 0
    f = root.find("Tr_Activity_File")
    if f is not None:
        for b in f.blocks():
            k = b.key
            if k == "player_service_definition":
                name = rd.string(b, 0)
                ptd = b.find("Player_Traffic_Definition")
                t0 = 0
                stops: list[StopItem] = []
                if ptd is not None:
                    t0 = int(rd.quantity(ptd, 0, "time", default=0.0))
                    stops, _ = _items_of(rd, ptd, 1)
                uid_blk = b.find("UiD")
                uid = rd.value(uid_blk, 0, to_int, 0, "UiD") if uid_blk is not None else None
                player = ServiceRef(name, t0, uid, tuple(stops))
            elif k == "traffic_definition":
                traffic_name = rd.string(b, 0)
                for sd in b.blocks("Service_Definition"):
                    if len(services) >= MAX_ENTRIES:
                        rd.problem(sd, f"more than {MAX_ENTRIES} services")
                        break
                    services.append(_service_ref(rd, sd))
            elif k == "events":
                events = sum(1 for _ in b.blocks())
    return ActivityFile(path, serial, hdr, player, traffic_name, tuple(services), events, doc)


def read_service(
    path: str | Path, *, strict: bool = True, diagnostics: Diagnostics | None = None
) -> ServiceFile:
    """Read a ``.srv`` file."""
    diags = diagnostics if diagnostics is not None else Diagnostics(strict=strict)
    return service_from_tree(_doc(path, diags), diags, str(path))


def service_from_tree(doc: Block, diags: Diagnostics, path: str = "") -> ServiceFile:
    rd = Reader(diags)
    root = rd.require(doc, "Service_Definition")
    vals: dict = {
        "serial": None,
        "name": "",
        "train_config": "",
        "path_id": "",
        "max_wheel_acceleration": None,
        "efficiency": None,
        "starting_speed": 0.0,
        "ending_speed": None,
        "platform_ids": (),
    }
    if root is not None:
        for b in root.blocks():
            k = b.key
            if k == "serial":
                vals["serial"] = rd.value(b, 0, to_int, 0, "serial")
            elif k == "name":
                vals["name"] = _text(rd, b)
            elif k == "train_config":
                vals["train_config"] = _text(rd, b)
            elif k == "pathid":
                vals["path_id"] = _text(rd, b)
            elif k == "maxwheelacceleration":
                vals["max_wheel_acceleration"] = rd.value(b, 0, to_float, 0.0, "acceleration")
            elif k == "efficiency":
                vals["efficiency"] = rd.value(b, 0, to_float, 0.0, "efficiency")
            elif k == "timetable":
                ids: list[int] = []
                for t in b.blocks():
                    if t.key == "startingspeed":
                        vals["starting_speed"] = rd.quantity(t, 0, "speed", default=0.0)
                    elif t.key == "endingspeed":
                        vals["ending_speed"] = rd.quantity(t, 0, "speed", default=0.0)
                    elif t.key == "stationstop":
                        p = t.find("PlatformStartID")
                        if p is not None and len(ids) < MAX_ENTRIES:
                            ids.append(rd.value(p, 0, to_int, 0, "platform id"))
                vals["platform_ids"] = tuple(ids)
    if root is not None and not vals["train_config"]:
        rd.problem(root, "Service_Definition: no Train_Config (the consist)")
    if root is not None and not vals["path_id"]:
        rd.problem(root, "Service_Definition: no PathID")
    return ServiceFile(path, tree=doc, **vals)


def read_traffic(
    path: str | Path, *, strict: bool = True, diagnostics: Diagnostics | None = None
) -> TrafficFile:
    """Read a ``.trf`` file."""
    diags = diagnostics if diagnostics is not None else Diagnostics(strict=strict)
    return traffic_from_tree(_doc(path, diags), diags, str(path))


def traffic_from_tree(doc: Block, diags: Diagnostics, path: str = "") -> TrafficFile:
    rd = Reader(diags)
    root = rd.require(doc, "Traffic_Definition")
    if root is None:
        return TrafficFile(path, "", None, (), doc)
    name = rd.string(root, 0)
    serial = None
    services: list[TrafficService] = []
    for b in root.blocks():
        if b.key == "serial":
            serial = rd.value(b, 0, to_int, 0, "serial")
        elif b.key == "service_definition":
            if len(services) >= MAX_ENTRIES:
                rd.problem(b, f"more than {MAX_ENTRIES} services")
                break
            ref = _service_ref(rd, b)
            services.append(TrafficService(ref.name, ref.time, ref.stops))
    return TrafficFile(path, name, serial, tuple(services), doc)


def find_activity_file(route_folder: str | Path, kind: str, name: str) -> Path | None:
    """``ACTIVITIES/<name>.act``, ``SERVICES/<name>.srv`` or ``TRAFFIC/<name>.trf`` of a
    route, any case; None when absent. ``name`` must be a plain file name."""
    folder, ext = {"act": ("ACTIVITIES", ".act"), "srv": ("SERVICES", ".srv"), "trf": ("TRAFFIC", ".trf")}[
        kind
    ]
    if not name or "/" in name or "\\" in name or name in (".", ".."):
        return None
    p = resolve_case_insensitive(Path(route_folder) / folder / f"{name}{ext}")
    return p if p.is_file() else None


# -- writing and building -----------------------------------------------------------------


def write_stf_file(record: ActivityFile | ServiceFile | TrafficFile, out: str | Path) -> Path:
    """Write a record's tree as an MSTS file (UTF-16LE with BOM, CRLF), atomically."""
    from ..stf.writer import format_stf, write_text_atomic

    sig = {ActivityFile: ACT_SIGNATURE, ServiceFile: SRV_SIGNATURE, TrafficFile: TRF_SIGNATURE}[type(record)]
    target = Path(out)
    write_text_atomic(target, format_stf(record.tree, signature=getattr(record.tree, "signature", "") or sig))
    return target


def _b(name: str, *items: Item | int | float) -> Block:
    return Block(name, [i if isinstance(i, (str, Block)) else _num(i) for i in items])


def _num(v: float) -> str:
    if isinstance(v, int) or float(v).is_integer():
        return str(int(v))
    return f"{v:.6f}".rstrip("0").rstrip(".")


def _stop_blocks(stops: Sequence[StopItem], times: bool) -> list[Item]:
    out: list[Item] = []
    for s in stops:
        if s.efficiency is not None:
            out.append(_b("Efficiency", s.efficiency))
        if times and s.arrival is not None:
            out.append(_b("ArrivalTime", s.arrival))
        if times and s.depart is not None:
            out.append(_b("DepartTime", s.depart))
        if s.skip_count is not None:
            out.append(_b("SkipCount", s.skip_count))
        if s.distance_down_path is not None:
            out.append(_b("DistanceDownPath", s.distance_down_path))
        out.append(_b("PlatformStartID", s.platform_id))
    return out


def _reparse(root: Block, signature: str) -> Block:
    from ..stf.writer import format_stf

    return parse_text(format_stf(root, signature=signature))


def make_activity(
    header: ActivityHeader, player: ServiceRef, traffic_name: str, services: Sequence[ServiceRef]
) -> ActivityFile:
    """A new activity: a player service and AI services (with per-stop efficiencies)."""
    h = header
    hb = Block(
        "Tr_Activity_Header",
        [
            _b("RouteID", QStr(h.route_id)),
            _b("Name", QStr(h.name)),
            _b("Description", QStr(h.description)),
            _b("Briefing", QStr(h.briefing)),
            _b("CompleteActivity", 1),
            _b("Type", 0),
            _b("Mode", h.mode),
            _b("StartTime", h.start_time // 3600, h.start_time // 60 % 60, h.start_time % 60),
            _b("Season", h.season),
            _b("Weather", h.weather),
            _b("PathID", QStr(h.path_id)),
            _b("StartingSpeed", h.starting_speed),
            _b("Duration", h.duration // 3600, h.duration // 60 % 60),
            _b("Difficulty", h.difficulty),
            _b("Animals", 100),
            _b("Workers", 0),
            _b("FuelWater", 100),
            _b("FuelCoal", 100),
            _b("FuelDiesel", 100),
        ],
    )
    ptd = Block("Player_Traffic_Definition", [_num(player.time), *_stop_blocks(player.stops, True)])
    psd = Block("Player_Service_Definition", [QStr(player.name), ptd, _b("UiD", 0)])
    sds: list[Item] = [QStr(traffic_name)]
    for k, s in enumerate(services):
        sds.append(
            Block(
                "Service_Definition",
                [
                    QStr(s.name),
                    _num(s.time),
                    _b("UiD", s.uid if s.uid is not None else k + 1),
                    *_stop_blocks(s.stops, False),
                ],
            )
        )
    body = Block(
        "Tr_Activity_File",
        [
            psd,
            _b("NextServiceUID", len(services) + 1),
            _b("NextActivityObjectUID", 1),
            Block("Traffic_Definition", sds),
            Block("Events", []),
        ],
    )
    root = Block("", [Block("Tr_Activity", [_b("Serial", 1), hb, body])])
    return activity_from_tree(_reparse(root, ACT_SIGNATURE), Diagnostics(strict=True))


def make_service(
    name: str,
    consist: str,
    path_id: str,
    *,
    efficiency: float = 0.9,
    starting_speed: float = 0.0,
    platform_ids: Sequence[int] = (),
) -> ServiceFile:
    """A new service: a consist on a path."""
    tt = Block(
        "TimeTable",
        [
            _b("StartingSpeed", starting_speed),
            _b("EndingSpeed", 0),
            _b("StartInWorld", 0),
            _b("EndInWorld", 0),
            *[
                Block(
                    "StationStop", [_b("PlatformStartID", p), _b("DistanceDownPath", 0), _b("SkipCount", 0)]
                )
                for p in platform_ids
            ],
        ],
    )
    root = Block(
        "",
        [
            Block(
                "Service_Definition",
                [
                    _b("Serial", 1),
                    _b("Name", QStr(name)),
                    _b("Train_Config", QStr(consist)),
                    _b("PathID", QStr(path_id)),
                    _b("MaxWheelAcceleration", 1),
                    _b("Efficiency", efficiency),
                    tt,
                ],
            )
        ],
    )
    return service_from_tree(_reparse(root, SRV_SIGNATURE), Diagnostics(strict=True))


def make_traffic(name: str, services: Sequence[TrafficService]) -> TrafficFile:
    """A new traffic file: booked times per AI service."""
    items: list[Item] = [QStr(name), _b("Serial", 1)]
    for s in services:
        items.append(Block("Service_Definition", [QStr(s.name), _num(s.time), *_stop_blocks(s.stops, True)]))
    root = Block("", [Block("Traffic_Definition", items)])
    return traffic_from_tree(_reparse(root, TRF_SIGNATURE), Diagnostics(strict=True))
