#!/usr/bin/env python3
"""Generate the tdbtools sample route (MSTS install layout) under sample_routes/sample/.

Standalone on purpose (stdlib only, no tdbtools import): the sample is test data for
tdbtools, so it must not be produced by the code it is meant to test.

Layout written (all files UTF-16LE with BOM, CRLF, SIMIS signature on line 1):

    sample/GLOBAL/tsection.dat            subset of DK24's real global tsection.dat
    sample/ROUTES/SAMPLE/SAMPLE.trk       route file
    sample/ROUTES/SAMPLE/SAMPLE.tdb       track database
    sample/ROUTES/SAMPLE/SAMPLE.rdb       road database
    sample/ROUTES/SAMPLE/tsection.dat     route-local dynamic-track sections
    sample/ROUTES/SAMPLE/PATHS/*.pat      three paths

Conventions (see docs/formats.md §4, §6, §11, §12.4): X east, Z north, Y up;
AY = heading clockwise from north; +AX = descending forward; +curve angle = right turn.
Every number written is computed here from the section geometry, and the script asserts
(on the values *as rounded for writing*) that sections chain within 1 mm, headings continue,
node ends meet their junction/end-node UiDs and items/PDPs lie on the centre line.

Deterministic: no clock, no randomness, fixed iteration order -> byte-identical output.
Run:  python sample_routes/generate.py
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

OUT = Path(__file__).resolve().parent / "sample"
ROUTE = "SAMPLE"
NONE = 4294967295  # "no next node" in .pat TrPathNodes
TOL = 0.001        # 1 mm closure tolerance required by the brief
NDEC = 6           # decimals written; 0.5e-6 rounding keeps closure far below 1 mm


# --------------------------------------------------------------------------- sections
@dataclass(frozen=True)
class Section:
    sid: int
    length: float = 0.0            # straight length (m); unused for curves
    radius: float | None = None    # None = straight
    angle: float = 0.0             # signed radians, + = right

    @property
    def extent(self) -> float:
        """Traveller offset at the section end: metres (straight) or radians (curve)."""
        return self.length if self.radius is None else abs(self.angle)

    @property
    def arc(self) -> float:
        return self.length if self.radius is None else self.radius * abs(self.angle)


# Global sections: real values copied from DK24 GLOBAL/tsection.dat (angles in degrees there).
# (id, width, length, radius, angleDeg) -- written back verbatim by write_global_tsection().
GLOBAL_SECTIONS = [
    ("_INFO(Straight Track Sections, 10, 50, 100, 250, 500 )", "_INFO(Original MS/KUJU Track Sections)"),
    (1, "1.5", "50", None, None),
    (2, "1.5", "100", None, None),
    (3, "1.5", "250", None, None),
    ("_INFO(Single Line Curved Track Sections with 500M radius, 5, 10, 20 degrees)", "_INFO(Original MS/KUJU Track Sections)"),
    (5, "1.5", "0", "500.0", "-5"),
    (6, "1.5", "0", "500.0", "5"),
    (7, "1.5", "0", "500.0", "-10"),
    (8, "1.5", "0", "500.0", "10"),
    ("_INFO(Point Curves & Straights)", "_INFO(Original MS/KUJU Track Sections)"),
    (173, "1.5", "0", "655.007", "-5"),
    (174, "1.5", "0", "655.007", "5"),
    ("_INFO(Straights)", "_INFO(Original MS/KUJU Track Sections)"),
    (180, "1.5", "80", None, None),
    (182, "1.5", "17.912364", None, None),
]
# Global shapes, verbatim from DK24 (note 14050/14051 really spell it "Filename").
GLOBAL_SHAPES = """\
_INFO(Single Line Straight Track Sections)
_INFO(Original MS/KUJU Track Shapes)
TrackShape ( 2
 FileName ( A1t100mStrt.s )
 NumPaths ( 1 )
 SectionIdx ( 1 0 0 0 0 2 )
)
TrackShape ( 3
 FileName ( A1t250mStrt.s )
 NumPaths ( 1 )
 SectionIdx ( 1 0 0 0 0 3 )
)
_INFO(Single Line 500 Metre curves)
_INFO(Original MS/KUJU Track Shapes)
TrackShape ( 20
 FileName ( A1t500r5d.s )
 NumPaths ( 1 )
 SectionIdx ( 1 0 0 0 0 5 )
)
TrackShape ( 21
 FileName ( A1t500r10d.s )
 NumPaths ( 1 )
 SectionIdx ( 1 0 0 0 0 7 )
)
_INFO(Points)
_INFO(Original MS/KUJU Track Shapes)
TrackShape ( 71
 FileName ( A1tPnt5dRgt.s )
 NumPaths ( 2 )
 MainRoute ( 0 )
 ClearanceDist ( 52 )
 SectionIdx ( 1 0 0 0 0 180 )
 SectionIdx ( 2 0 0 0 0 182 174 )
)
_INFO(Road shapes by Dale Rickert)
TrackShape ( 14050
 Filename ( RR_Rur_a_1LStr_050m.s )
 NumPaths ( 1 )
 SectionIdx ( 1 0 0 0 0 1 )
 RoadShape ( )
)
TrackShape ( 14051
 Filename ( RR_Rur_a_1LStr_100m.s )
 NumPaths ( 1 )
 SectionIdx ( 1 0 0 0 0 2 )
 RoadShape ( )
)
"""
SWITCH_SHAPE = 71                   # A1tPnt5dRgt: path 0 = [180] straight (MainRoute 0),
SWITCH_PATHS = ([180], [182, 174])  # path 1 = [182, 174] diverging right

# Route-local dynamic track: (id, a, b, flag); straight a = length, b = 0;
# curve a = signed angle in RADIANS, b = radius.
LOCAL_SECTIONS = [
    (40000, "60", "0", 0),         # straight 60 m
    (40001, "-0.05", "1200", 1),   # left curve, 60 m of arc
    (40002, "0.08", "1500", 1),    # right curve, 120 m of arc
    (40003, "40", "0", 0),         # straight 40 m
]
DYN_PATHS = [(40000, [40000, 40001]), (40001, [40002, 40003])]  # TrackPath ( dynIdx n s… )

SECTIONS: dict[int, Section] = {}
for _e in GLOBAL_SECTIONS:
    if isinstance(_e[0], int):
        _sid, _w, _len, _r, _a = _e
        SECTIONS[_sid] = (Section(_sid, float(_len)) if _r is None
                          else Section(_sid, 0.0, float(_r), math.radians(float(_a))))
for _sid, _a, _b, _flag in LOCAL_SECTIONS:
    SECTIONS[_sid] = (Section(_sid, float(_a)) if float(_b) == 0
                      else Section(_sid, 0.0, float(_b), float(_a)))


# --------------------------------------------------------------------------- geometry
@dataclass(frozen=True)
class Pose:
    """Absolute MSTS coordinates (X = TileX*2048 + x) plus pitch/heading/roll in radians."""
    X: float
    Y: float
    Z: float
    AX: float = 0.0
    AY: float = 0.0
    AZ: float = 0.0

    def replace(self, **kw) -> "Pose":
        d = dict(X=self.X, Y=self.Y, Z=self.Z, AX=self.AX, AY=self.AY, AZ=self.AZ)
        d.update(kw)
        return Pose(**d)


def wrap(a: float) -> float:
    """Angle to (-pi, pi]."""
    a = math.fmod(a + math.pi, 2 * math.pi)
    if a <= 0:
        a += 2 * math.pi
    return a - math.pi


def advance(p: Pose, sec: Section, o: float) -> Pose:
    """Pose at offset o (m on straights, rad on curves) from the section start, docs/formats.md §11."""
    if sec.radius is None:
        return p.replace(X=p.X + o * math.cos(p.AX) * math.sin(p.AY),
                         Y=p.Y - o * math.sin(p.AX),
                         Z=p.Z + o * math.cos(p.AX) * math.cos(p.AY))
    s = 1.0 if sec.angle > 0 else -1.0
    lat = s * sec.radius * (1 - math.cos(o))
    fwd = sec.radius * math.sin(o)
    k = lat * math.sin(p.AZ) * math.sin(p.AX) + fwd * math.cos(p.AX)
    return p.replace(X=p.X + lat * math.cos(p.AZ) * math.cos(p.AY) + k * math.sin(p.AY),
                     Y=p.Y + lat * math.sin(p.AZ) * math.cos(p.AX) - fwd * math.sin(p.AX),
                     Z=p.Z - lat * math.cos(p.AZ) * math.sin(p.AY) + k * math.cos(p.AY),
                     AY=wrap(p.AY + s * o))


def tile_of(X: float, Z: float) -> tuple[int, int, float, float]:
    """Split absolute X/Z into tile and tile-centre-relative x/z in [-1024, 1024)."""
    tx, tz = math.floor((X + 1024) / 2048), math.floor((Z + 1024) / 2048)
    return tx, tz, X - 2048 * tx, Z - 2048 * tz


def fmt(v: float, nd: int = NDEC) -> str:
    """Plain decimal like the real files (no exponent, no trailing zeros, no '-0')."""
    s = f"{v:.{nd}f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def rnd(v: float, nd: int = NDEC) -> float:
    return float(fmt(v, nd))


def written(p: Pose) -> tuple[int, int, float, float, float, float, float, float]:
    """The pose exactly as it appears in the files: tile, rounded x y z and angles."""
    tx, tz, x, z = tile_of(p.X, p.Z)
    t = (tx, tz, rnd(x), rnd(p.Y), rnd(z), rnd(p.AX), rnd(p.AY), rnd(p.AZ))
    assert -1024 <= t[2] < 1024 and -1024 <= t[4] < 1024, t
    return t


def from_written(t) -> Pose:
    tx, tz, x, y, z, ax, ay, az = t
    return Pose(tx * 2048 + x, y, tz * 2048 + z, ax, ay, az)


def dist3(a: Pose, b: Pose) -> float:
    return math.dist((a.X, a.Y, a.Z), (b.X, b.Y, b.Z))


# Self-test against the worked example of docs/formats.md §11 (R 300, 20 deg, AY 30 deg).
_ex = Section(0, 0.0, 300.0, math.radians(20))
_e = advance(Pose(-512.25, 104.0, 731.5, 0, math.radians(30)), _ex, _ex.extent)
assert abs(_e.X - -445.2787) < 1e-4 and abs(_e.Z - 811.3133) < 1e-4
_e = advance(Pose(-512.25, 104.0, 731.5, -0.02, math.radians(30)), _ex, _ex.extent)
assert abs(_e.X - -445.2889) < 1e-4 and abs(_e.Z - 811.2956) < 1e-4 and abs(_e.Y - 106.0520) < 1e-4


# --------------------------------------------------------------------------- world objects
@dataclass
class WorldObj:
    """A shape in a world file. Its UiD/tile is fixed after layout (origin's tile)."""
    name: str
    origin: Pose | None = None
    tile: tuple[int, int] | None = None
    uid: int | None = None


OBJECTS: list[WorldObj] = []


def obj(name: str) -> WorldObj:
    o = WorldObj(name)
    OBJECTS.append(o)
    return o


def assign_uids() -> None:
    """World-file UiDs are per tile; number objects in creation order from 101 in each tile."""
    nxt: dict[tuple[int, int], int] = {}
    for o in OBJECTS:
        assert o.origin is not None, o.name
        tx, tz, _, _ = tile_of(o.origin.X, o.origin.Z)
        o.tile = (tx, tz)
        o.uid = nxt.get(o.tile, 101)
        nxt[o.tile] = o.uid + 1


# --------------------------------------------------------------------------- nodes
@dataclass
class Piece:
    sec: int
    shape: int        # TrackShape id, or the dynamic TrackPath dynIdx
    wobj: WorldObj
    flags: tuple[int, int] = (0, 1)   # shape end-point ids at section start/end (DK24: 0 1 / 1 0 / 0 2 …)
    ax: float = 0.0                   # pitch of this section (+ = descending forward)


@dataclass
class VSec:
    piece: Piece
    start: Pose
    end: Pose

    @property
    def section(self) -> Section:
        return SECTIONS[self.piece.sec]


@dataclass
class Node:
    index: int
    kind: str                          # vector | junction | end
    vsecs: list[VSec] = field(default_factory=list)
    pins: list[tuple[int, int]] = field(default_factory=list)
    uid_obj: WorldObj | None = None    # junction/end: shape object and end-point id (UiD field 4)
    uid_ep: int = 0
    uid_pose: Pose | None = None
    items: list[int] = field(default_factory=list)
    label: str = ""

    @property
    def length(self) -> float:
        return sum(v.section.arc for v in self.vsecs)


def lay(start: Pose, pieces: list[Piece]) -> list[VSec]:
    """Chain the pieces from `start`; each piece sets its own pitch at its start."""
    out, p = [], start
    for pc in pieces:
        p = p.replace(AX=pc.ax)
        e = advance(p, SECTIONS[pc.sec], SECTIONS[pc.sec].extent)
        out.append(VSec(pc, p, e))
        # Object origin = its end-point 0: the section start if laid forward, else its end.
        if pc.wobj.origin is None:
            pc.wobj.origin = p if pc.flags[0] == 0 else e
        p = e
    return out


def pose_at(node: Node, d: float) -> Pose:
    """Pose at distance d (m) from the node start, in the node's forward direction."""
    acc = 0.0
    for v in node.vsecs:
        sec = v.section
        if d <= acc + sec.arc + 1e-9:
            o = d - acc
            return advance(v.start, sec, o if sec.radius is None else o / sec.radius)
        acc += sec.arc
    raise ValueError(f"d={d} beyond node {node.index} (length {node.length})")


# ============================================================================ the route
# Junction J1 (turnout A1tPnt5dRgt): the line runs ENE (heading AY_E) through it.
AY_E = 1.35
J1_POSE = Pose(-5631 * 2048 + 200.0, 42.0, 15116 * 2048 - 310.0, 0.0, AY_E, 0.0)

sw = obj("switch J1 (shape 71)")
# V_a: trunk side. Listed *backwards* w.r.t. the west->east line: it starts at J1 heading
# WSW (AY_E + pi) and ends at the west buffer stop, so eastbound trains walk it backward.
o_a1, o_a2, o_a3 = obj("V_a 250m straight"), obj("V_a 500m r10d curve"), obj("V_a 100m straight")
V_a = lay(J1_POSE.replace(AY=wrap(AY_E + math.pi)), [
    Piece(3, 3, o_a1),                       # flat: station platform lies here
    Piece(8, 21, o_a2, (1, 0), 0.004),       # left-curve shape laid reversed -> right curve (+10 deg), falling
    Piece(2, 2, o_a3, (0, 1), 0.004),        # falling 4 per mille towards the west end
])
# V_main: switch path 0, then dynamic track, a grade, left/right curves, into tile -5630.
dyn1, dyn2 = obj("dynamic track 40000"), obj("dynamic track 40001")
o_m = [obj(f"V_main object {i}") for i in range(4)]
V_main = lay(J1_POSE, [
    Piece(180, SWITCH_SHAPE, sw, (0, 1)),    # switch path 0 (straight, MainRoute)
    Piece(40000, 40000, dyn1),               # dynamic straight 60 m
    Piece(40001, 40000, dyn1),               # dynamic left curve -0.05 rad R1200
    Piece(3, 3, o_m[0], (0, 1), -0.005),     # rising 5 per mille eastwards
    Piece(5, 20, o_m[1], (0, 1), -0.005),    # left curve -5 deg R500, still rising
    Piece(40002, 40001, dyn2),               # dynamic right curve +0.08 rad R1500
    Piece(40003, 40001, dyn2),               # dynamic straight 40 m
    Piece(3, 3, o_m[2]),                     # level crossing here
    Piece(3, 3, o_m[3]),                     # starts in tile -5630
])
# V_sid: switch path 1 (diverging right), then back to parallel, flat, dead end.
o_s = [obj(f"V_sid object {i}") for i in range(3)]
V_sid = lay(J1_POSE, [
    Piece(182, SWITCH_SHAPE, sw, (0, 2)),
    Piece(174, SWITCH_SHAPE, sw, (0, 2)),
    Piece(2, 2, o_s[0]),
    Piece(5, 20, o_s[1]),                    # left curve -5 deg: parallel to the old heading
    Piece(3, 3, o_s[2]),
])

# Node table (1-based). Pins follow docs/formats.md §6.4: direction = direction in the node
# stepped INTO (1 = enter a vector node at its first section; into a junction 1 = from the
# trunk, 0 = from a branch; into an end node always 1, as in every DK24 pin).
N = {}
N[1] = Node(1, "end", label="E_west", pins=[(2, 0)])           # V_a ends here -> enter at its last section
N[2] = Node(2, "vector", V_a, label="V_a", pins=[(3, 1), (1, 1)])
N[3] = Node(3, "junction", label="J1", pins=[(2, 1), (4, 1), (6, 1)])  # trunk, route 0, route 1
N[4] = Node(4, "vector", V_main, label="V_main", pins=[(3, 0), (5, 1)])
N[5] = Node(5, "end", label="E_east", pins=[(4, 0)])
N[6] = Node(6, "vector", V_sid, label="V_sid", pins=[(3, 0), (7, 1)])
N[7] = Node(7, "end", label="E_sid", pins=[(6, 0)])

# UiD poses. Real DK24 convention (checked over all 1140 junction/end nodes):
#  * end node: position = track end, heading points OUT of the track, AX = adjacent section AX;
#  * junction: position = switch point, heading = branch heading + pi (i.e. pointing out of the
#    trunk side), AX = the switch's AX.  Field 4 = end-point id of the shape (0 = switch point).
N[3].uid_obj, N[3].uid_ep = sw, 0
N[3].uid_pose = J1_POSE.replace(AY=wrap(AY_E + math.pi))
N[1].uid_obj, N[1].uid_ep = o_a3, 1
N[1].uid_pose = V_a[-1].end
N[5].uid_obj, N[5].uid_ep = o_m[3], 1
N[5].uid_pose = V_main[-1].end
N[7].uid_obj, N[7].uid_ep = o_s[2], 1
N[7].uid_pose = V_sid[-1].end


# --------------------------------------------------------------------------- items (tdb)
@dataclass
class Item:
    kind: str
    node: int
    d: float
    lines: list[str] = field(default_factory=list)   # type-specific trailing blocks
    sflags: str = "00000002"
    pdata: bool = False
    pose: Pose | None = None


ITEMS: list[Item] = []


def add_item(kind, node, d, *, sflags="00000002", pdata=False, extra=lambda i, p: []) -> int:
    it = Item(kind, node, d, sflags=sflags, pdata=pdata)
    it.pose = pose_at(N[node], d)
    it.lines = extra(len(ITEMS), it.pose)
    ITEMS.append(it)
    N[node].items.append(len(ITEMS) - 1)
    return len(ITEMS) - 1


def signal(direction, typename, dirs=()):
    """TrSignalType ( flags dir angle type ). DK24: dir 1 <-> angle = node heading, dir 0 <-> +pi."""
    def f(i, p):
        ang = wrap(p.AY + (0 if direction else math.pi))
        out = [f"TrSignalType ( 00000000 {direction} {fmt(ang)} {typename} )"]
        if dirs:
            out.append(f"TrSignalDirs ( {len(dirs)}")
            out += [f"\tTrSignalDir ( {a} {b} {c} {d} )" for a, b, c, d in dirs]
            out.append(")")
        return out
    return f


def speedpost(flags, value, forward):
    """SpeedpostTrItemData ( flags value angle ); angle = heading of the direction it serves."""
    def f(i, p):
        return [f"SpeedpostTrItemData ( {flags} {fmt(value)} {fmt(wrap(p.AY + (0 if forward else math.pi)))} )"]
    return f


def linked(kind, name_lines, flags, other):
    def f(i, p):
        return [f"{kind}TrItemData ( {flags} {other} )"] + name_lines
    return f


PLAT = ['PlatformName ( "Sampleby, Spor 1" )', 'Station ( "Sampleby" )',
        "PlatformMinWaitingTime ( 60 )", "PlatformNumPassengersWaiting ( 12 )"]
SID = ['SidingName ( "Sampleby Sidespor" )']

# V_a (node 2, walked backward by eastbound trains).
add_item("SignalItem", 2, 15.0, extra=signal(0, "dk3ind", [(3, 1, 0, 0)]))  # 0: home signal for J1, eastbound
add_item("PlatformItem", 2, 40.0, extra=linked("Platform", PLAT, "00000000", 2))  # 1
add_item("PlatformItem", 2, 200.0, extra=linked("Platform", PLAT, "ffff0000", 1))  # 2
add_item("SpeedPostItem", 2, 400.0, sflags="00000006", pdata=True,
         extra=speedpost(129, 80, forward=False))                              # 3: warning 80 km/h, eastbound
# V_main (node 4).
add_item("SpeedPostItem", 4, 10.0, sflags="00000006", pdata=True,
         extra=speedpost(130, 80, forward=True))                               # 4: limit 80 km/h, eastbound
LC_D = 730.0
add_item("LevelCrItem", 4, LC_D, sflags="00000006", pdata=True)              # 5: level crossing
add_item("SignalItem", 4, 800.0, extra=signal(1, "dk3ind"))                   # 6: block signal, eastbound
add_item("SpeedPostItem", 4, 1000.0, sflags="00000006", pdata=True,
         extra=speedpost(128, 12, forward=True))                               # 7: milepost km 12
# V_sid (node 6).
add_item("SignalItem", 6, 190.0, extra=signal(0, "dk3ind"))                   # 8: siding exit, westbound
add_item("SidingItem", 6, 230.0, extra=linked("Siding", SID, "00000000", 10))  # 9
add_item("SidingItem", 6, 440.0, extra=linked("Siding", SID, "ffff0000", 9))   # 10


# --------------------------------------------------------------------------- road (rdb)
# A 150 m road at right angles to the line, crossing V_main exactly at the level crossing:
# the LevelCrItem in the .rdb and in the .tdb share one world point.
LC_POSE = ITEMS[5].pose
ROAD_AY = wrap(LC_POSE.AY - math.pi / 2)      # NNW; starts 60 m south of the line, where the
                                              # siding ended ~270 m further west (checked below)
ROAD_LC = 60.0
road_start = Pose(LC_POSE.X - ROAD_LC * math.sin(ROAD_AY), LC_POSE.Y,
                  LC_POSE.Z - ROAD_LC * math.cos(ROAD_AY), 0.0, ROAD_AY, 0.0)
r1, r2 = obj("road 100m"), obj("road 50m")
ROAD = lay(road_start, [Piece(2, 14051, r1), Piece(1, 14050, r2)])
RN = {1: Node(1, "end", label="R_start", pins=[(2, 1)]),
      2: Node(2, "vector", ROAD, label="V_road", pins=[(1, 1), (3, 1)]),
      3: Node(3, "end", label="R_end", pins=[(2, 0)])}
RN[1].uid_obj, RN[1].uid_ep, RN[1].uid_pose = r1, 0, ROAD[0].start.replace(AY=wrap(ROAD_AY + math.pi))
RN[3].uid_obj, RN[3].uid_ep, RN[3].uid_pose = r2, 1, ROAD[-1].end
RITEMS: list[Item] = []
for kind, d, fl, pd in (("CarSpawnerItem", 5.0, "00000001", False),
                        ("LevelCrItem", ROAD_LC, "00000005", True),
                        ("CarSpawnerItem", 145.0, "00000001", False)):
    RITEMS.append(Item(kind, 2, d, sflags=fl, pdata=pd, pose=pose_at(RN[2], d)))
    RN[2].items.append(len(RITEMS) - 1)

assign_uids()


# --------------------------------------------------------------------------- paths
@dataclass
class PDP:
    pose: Pose
    junction: bool


def on(node, d):
    return PDP(pose_at(N[node], d), False)


J1_PDP = PDP(J1_POSE, True)
PATHS = [
    # (file stem, display name, start, end, [(pdp, flags)])  -- first node = REAR of the train
    ("MainWE", "Main line west - east", "Vestende", "Østende",
     [(on(2, 420.0), 0), (J1_PDP, 0), (on(4, 1130.0), 0)]),
    ("Siding", "West end - Sampleby siding", "Vestende", "Sidespor",
     [(on(2, 420.0), 0), (J1_PDP, 0), (on(6, 450.0), 0)]),
    ("MainEW", "Main line east - west, stop at Sampleby", "Østende", "Vestende",
     [(on(4, 1130.0), 0), (J1_PDP, 0), (on(2, 120.0), 0x003C0002), (on(2, 410.0), 0)]),
    # where the timetable's static train stands (its rear at the start)
    ("SidingStore", "Sampleby siding, storage at its end", "Sidespor", "Sidespor",
     [(on(6, 410.0), 0), (on(6, 460.0), 0)]),
]


# ============================================================================ checks
def check() -> None:
    def close(a: Pose, b: Pose, what: str):
        dd = dist3(a, b)
        assert dd < TOL, f"{what}: gap {dd * 1000:.3f} mm"

    allnodes = [(N, "tdb"), (RN, "rdb")]
    for nodes, db in allnodes:
        for n in nodes.values():
            if n.kind != "vector":
                continue
            ws = [from_written(written(v.start)) for v in n.vsecs]
            for i, v in enumerate(n.vsecs):
                sec = v.section
                e = advance(ws[i], sec, sec.extent)        # end from the WRITTEN start
                if i + 1 < len(n.vsecs):
                    close(e, ws[i + 1], f"{db} node {n.index} section {i}->{i + 1}")
                    turn = 0.0 if sec.radius is None else sec.angle
                    assert abs(wrap(ws[i + 1].AY - (ws[i].AY + turn))) < 2e-6, (db, n.index, i)
            # node ends meet the UiD of what the pins point at
            first, last = ws[0], advance(ws[-1], n.vsecs[-1].section, n.vsecs[-1].section.extent)
            for end_pose, (link, _) in ((first, n.pins[0]), (last, n.pins[1])):
                close(end_pose, from_written(written(nodes[link].uid_pose)),
                      f"{db} node {n.index} end vs node {link} UiD")
    # pins are mutual and directions match which end of the vector node is touched (§6.4)
    for nodes in (N, RN):
        for n in nodes.values():
            for k, (link, dirn) in enumerate(n.pins):
                m = nodes[link]
                back = [j for j, (l2, _) in enumerate(m.pins) if l2 == n.index]
                assert len(back) == 1, (n.index, link)
                j = back[0]
                if m.kind == "vector":
                    assert dirn == (1 if j == 0 else 0), (n.index, k)   # enter at start <=> forward
                elif m.kind == "junction":
                    assert dirn == (1 if j == 0 else 0), (n.index, k)   # 1 = entering from the trunk
                else:
                    assert dirn == 1, (n.index, k)
    # the branch nodes begin with the switch shape's paths, at the junction point and heading
    for route, node in enumerate((4, 6)):
        assert N[3].pins[1 + route][0] == node
        vs = N[node].vsecs
        assert [v.piece.sec for v in vs[:len(SWITCH_PATHS[route])]] == SWITCH_PATHS[route]
        assert all(v.piece.shape == SWITCH_SHAPE for v in vs[:len(SWITCH_PATHS[route])])
        close(vs[0].start, J1_POSE, f"branch {node} start")
        assert abs(wrap(vs[0].start.AY - AY_E)) < 1e-12
    # at least one tile crossing inside a node, dynamic track used, left and right curves
    assert len({written(v.start)[:2] for v in N[4].vsecs}) == 2
    used = {v.piece.sec for n in N.values() for v in n.vsecs}
    assert {40000, 40001, 40002, 40003} <= used
    assert any(SECTIONS[s].angle < 0 for s in used) and any(SECTIONS[s].angle > 0 for s in used)
    # items: on the centre line (by construction) and within their node
    for it in ITEMS:
        assert 0 <= it.d <= N[it.node].length
    close(from_written(written(ITEMS[5].pose)), from_written(written(RITEMS[1].pose)), "level crossing")
    # 2-D distance from the road to the siding is large (the road crosses only the main line)
    for v in N[6].vsecs:
        for r in ROAD:
            assert math.dist((v.start.X, v.start.Z), (r.start.X, r.start.Z)) > 100


# ============================================================================ writers
def save(rel: str, lines: list[str], final_newline: bool) -> None:
    """UTF-16LE + BOM, CRLF, like MSTS-saved files."""
    path = OUT / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\r\n".join(lines) + ("\r\n" if final_newline else "")
    path.write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))


def block(name: str, body: list[str], head: str = "") -> list[str]:
    return [f"{name} ({(' ' + head) if head else ''}"] + ["\t" + s for s in body] + [")"]


def pose_fields(p: Pose) -> str:
    tx, tz, x, y, z, ax, ay, az = written(p)
    return f"{tx} {tz} {fmt(x)} {fmt(y)} {fmt(z)} {fmt(ax)} {fmt(ay)} {fmt(az)}"


def vsec_fields(v: VSec) -> str:
    pc = v.piece
    return (f"{pc.sec} {pc.shape} {pc.wobj.tile[0]} {pc.wobj.tile[1]} {pc.wobj.uid} "
            f"{pc.flags[0]} {pc.flags[1]} 00 {pose_fields(v.start)}")


def node_lines(n: Node) -> list[str]:
    body: list[str] = []
    if n.kind == "vector":
        vb = ["TrVectorSections ( " + str(len(n.vsecs)) + " " + " ".join(vsec_fields(v) for v in n.vsecs) + " )"]
        if n.items:
            vb += block("TrItemRefs", [f"TrItemRef ( {i} )" for i in n.items], str(len(n.items)))
        body += block("TrVectorNode", vb)
    else:
        body.append("TrJunctionNode ( 0 %d 0 )" % SWITCH_SHAPE if n.kind == "junction" else "TrEndNode ( 0 )")
        o = n.uid_obj
        body.append(f"UiD ( {o.tile[0]} {o.tile[1]} {o.uid} {n.uid_ep} {pose_fields(n.uid_pose)} )")
    nin, nout = 1, {"vector": 1, "junction": 2, "end": 0}[n.kind]
    body += block("TrPins", [f"TrPin ( {l} {d} )" for l, d in n.pins], f"{nin} {nout}")
    return block("TrackNode", body, str(n.index))


def item_lines(i: int, it: Item) -> list[str]:
    tx, tz, x, y, z, *_ = written(it.pose)
    b = [f"TrItemId ( {i} )", f"TrItemSData ( {fmt(it.d)} {it.sflags} )"]
    if it.pdata:
        b.append(f"TrItemPData ( {fmt(x)} {fmt(z)} {tx} {tz} )")
    b.append(f"TrItemRData ( {fmt(x)} {fmt(y)} {fmt(z)} {tx} {tz} )")
    return block(it.kind, b + it.lines)


def trackdb(nodes: dict[int, Node], items: list[Item], serial: int) -> list[str]:
    tn: list[str] = []
    for k in sorted(nodes):
        tn += node_lines(nodes[k])
    ti: list[str] = []
    for i, it in enumerate(items):
        ti += item_lines(i, it)
    body = [f"Serial ( {serial} )"] + block("TrackNodes", tn, str(len(nodes)))
    if items:
        body += block("TrItemTable", ti, str(len(items)))
    return ["SIMISA@@@@@@@@@@JINX0T0t______", ""] + block("TrackDB", body)


def write_global_tsection() -> None:
    L = ["SIMISA@@@@@@@@@@JINX0F0t______",
         "_INFO ( Build 00060 - subset for the tdbtools sample route )",
         "_Skip (",
         "Only the sections and shapes used by ROUTES/SAMPLE, copied unchanged from the",
         "standardised global tsection.dat (build 00060) shipped with the DK24 route.",
         "Measurements are in metres; angles are in degrees.",
         ")",
         "TrackSections ( 40000",
         "_Skip (",
         "Sections     0-  332  original MS/KUJU sections",
         ")"]
    for e in GLOBAL_SECTIONS:
        if isinstance(e[0], str):
            L += list(e)
            continue
        sid, w, ln, r, a = e
        L += [f"TrackSection ( {sid}", f" SectionSize ( {w} {ln} )"]
        if r is not None:
            L.append(f" SectionCurve ( {r} {a} )")
        L.append(")")
    L += [")", "", "TrackShapes ( 40000", "_Skip (",
          "Shapes     0-  250  original MS/KUJU shapes", ")"]
    L += GLOBAL_SHAPES.rstrip("\n").split("\n") + [")"]
    save("GLOBAL/tsection.dat", L, final_newline=True)


def write_local_tsection() -> None:
    L = ["SIMISA@@@@@@@@@@JINX0T0t______", "",
         f"TrackSections ( {max(s for s, *_ in LOCAL_SECTIONS) + 1}"]
    for sid, a, b, flag in LOCAL_SECTIONS:   # trailing blanks as in DK24's generated file
        L += ["\tTrackSection ( ", f"\t\tSectionCurve ( {flag} ) {sid} {a} {b} ", "\t)"]
    L += [")", f"SectionIdx ( {len(DYN_PATHS)}"]
    for dyn, secs in DYN_PATHS:
        L.append(f"\tTrackPath ( {dyn} {len(secs)} {' '.join(map(str, secs))} ) ")
    L.append(")")
    save(f"ROUTES/{ROUTE}/tsection.dat", L, final_newline=False)


def write_trk() -> None:
    st = PATHS[0][4][0][0].pose
    tx, tz, x, _, z, *_ = written(st)
    env = ["SpringClear", "SpringRain", "SpringSnow", "SummerClear", "SummerRain", "SummerSnow",
           "AutumnClear", "AutumnRain", "AutumnSnow", "WinterClear", "WinterRain", "WinterSnow"]
    body = [f"RouteID ( {ROUTE} )",
            'Name ( "tdbtools sample route" )',
            'Description ( "Small generated test route for tdbtools.\\n"+',
            '\t"Sampleby station, one turnout with a siding, a level crossing; Vestende - Østende." )',
            "Graphic ( graphic.ace )",
            "LoadingScreen ( load.ace )",
            f"FileName ( {ROUTE} )",
            "Electrified ( 00000000 )",
            "Mountains ( 00000000 )",
            "OverheadWireHeight ( 6 )",
            "PassengerRuleSet ( 0 )",
            "FreightRuleSet ( 0 )",
            "SignalSet ( 0 )",
            "GantrySet ( 0 )",
            "TrackGauge ( 1435mm )",
            "Era ( 0 )",
            "SpeedLimit ( 33.333333 )"]
    body += block("Environment", [f"{e} ( {'rain' if 'Rain' in e else 'snow' if 'Snow' in e else 'sun'}.env )"
                                  for e in env])
    body += ["TerrainErrorScale ( 1 )",
             f"RouteStart ( {tx} {tz} {fmt(x, 3)} {fmt(z, 3)} )",
             "MilepostUnitsKilometers ( )",
             "DefaultCrossingSMS ( crossing.sms )",
             "DefaultSignalSMS ( signal.sms )",
             "TempRestrictedSpeed ( 11.111111 )"]
    save(f"ROUTES/{ROUTE}/{ROUTE}.trk", ["SIMISA@@@@@@@@@@JINX0r1t______", ""] + block("Tr_RouteFile", body),
         final_newline=False)


def write_paths() -> None:
    for stem, name, start, end, nodes in PATHS:
        pdps = []
        for pdp, _ in nodes:
            tx, tz, x, y, z, *_ = written(pdp.pose)
            fl = "2 0" if pdp.junction else "1 1"
            pdps.append(f"TrackPDP ( {tx} {tz} {fmt(x)} {fmt(y)} {fmt(z)} {fl} )")
        tp = []
        for k, (_, flags) in enumerate(nodes):
            nxt = k + 1 if k + 1 < len(nodes) else NONE
            tp.append(f"TrPathNode ( {flags:08x} {nxt} {NONE} {k} )")
        body = [f"TrPathName ( {stem} )", f'Name ( "{name}" )', f'TrPathStart ( "{start}" )',
                f'TrPathEnd ( "{end}" )'] + block("TrPathNodes", tp, str(len(nodes)))
        L = (["SIMISA@@@@@@@@@@JINX0P0t______", "", "Serial ( 1 )"] + block("TrackPDPs", pdps)
             + block("TrackPath", body))
        save(f"ROUTES/{ROUTE}/PATHS/{stem}.pat", L, final_newline=True)


# --------------------------------------------------------------------------- activity
# One activity on the paths above (docs/activities.md in the repository): the player and
# three AI services. Times are seconds since midnight; platform id 1 is Sampleby's first
# PlatformItem. A service's path is a file name in PATHS, its consist one in TRAINS/CONSISTS.
H = 8 * 3600
SERVICES = [
    # (file, display name, consist, path, start, [(platform id, arrival, departure)])
    ("FreightEast", "Freight east", "sample_freight", "MainWE", H, []),
    ("Local", "Local to the siding", "sample_double", "Siding", H + 30, []),
    ("RegionalWest", "Regional west", "sample_passenger", "MainEW", H + 150, [(1, H + 330, H + 390)]),
    ("Passenger", "Passenger east", "sample_passenger", "MainWE", H + 420, [(1, H + 600, H + 660)]),
]
PLAYER = "Passenger"


def stop_lines(stops, times: bool) -> list[str]:
    out = []
    for pid, arr, dep in stops:
        if not times:
            out.append("Efficiency ( 0.9 )")
        else:
            out += [f"ArrivalTime ( {arr} )", f"DepartTime ( {dep} )"]
        out += ["SkipCount ( 0 )", "DistanceDownPath ( 0 )", f"PlatformStartID ( {pid} )"]
    return out


def write_activity(act_name: str = "Morning",
                   description: str = "Four trains on the Y at Sampleby: follow at the west end, cross at J1") -> None:
    """SERVICES and PLAYER as services, a traffic file and an activity, all called ``act_name``."""
    for stem, name, consist, path, _t, stops in SERVICES:
        tt = (["StartingSpeed ( 0 )", "EndingSpeed ( 0 )", "StartInWorld ( 0 )", "EndInWorld ( 0 )"]
              + [x for pid, _a, _d in stops for x in block("StationStop", [f"PlatformStartID ( {pid} )",
                                                                          "DistanceDownPath ( 0 )",
                                                                          "SkipCount ( 0 )"])])
        body = ["Serial ( 1 )", f'Name ( "{name}" )', f"Train_Config ( {consist} )", f"PathID ( {path} )",
                "MaxWheelAcceleration ( 1 )", "Efficiency ( 0.9 )"] + block("TimeTable", tt)
        save(f"ROUTES/{ROUTE}/SERVICES/{stem}.srv",
             ["SIMISA@@@@@@@@@@JINX0v0t______", ""] + block("Service_Definition", body), final_newline=True)
    ai = [sv for sv in SERVICES if sv[0] != PLAYER]
    trf = ["Serial ( 1 )"]
    for stem, _n, _c, _p, t, stops in ai:
        trf += block("Service_Definition", stop_lines(stops, True), f"{stem} {t}")
    save(f"ROUTES/{ROUTE}/TRAFFIC/{act_name}.trf",
         ["SIMISA@@@@@@@@@@JINX0f0t______", ""] + block("Traffic_Definition", trf, act_name), final_newline=True)
    player = next(sv for sv in SERVICES if sv[0] == PLAYER)
    t0 = player[4]
    header = [f"RouteID ( {ROUTE} )", f'Name ( "{act_name}" )', f'Description ( "{description}" )',
              'Briefing ( "" )', "CompleteActivity ( 1 )", "Type ( 0 )", "Mode ( 2 )",
              f"StartTime ( {t0 // 3600} {t0 // 60 % 60} {t0 % 60} )", "Season ( 1 )", "Weather ( 0 )",
              f"PathID ( {player[3]} )", "StartingSpeed ( 0 )", "Duration ( 1 0 )", "Difficulty ( 0 )",
              "Animals ( 100 )", "Workers ( 0 )", "FuelWater ( 100 )", "FuelCoal ( 100 )", "FuelDiesel ( 100 )"]
    psd = block("Player_Service_Definition",
                block("Player_Traffic_Definition", stop_lines(player[5], True), str(t0)) + ["UiD ( 0 )"], PLAYER)
    traffic = []
    for uid, (stem, _n, _c, _p, t, stops) in enumerate(ai, start=1):
        traffic += block("Service_Definition", [f"UiD ( {uid} )"] + stop_lines(stops, False), f"{stem} {t}")
    body = (psd + [f"NextServiceUID ( {len(ai) + 1} )", "NextActivityObjectUID ( 1 )"]
            + block("Traffic_Definition", traffic, act_name) + ["Events ( )"])
    act = ["Serial ( 1 )"] + block("Tr_Activity_Header", header) + block("Tr_Activity_File", body)
    save(f"ROUTES/{ROUTE}/ACTIVITIES/{act_name}.act",
         ["SIMISA@@@@@@@@@@JINX0a0t______", ""] + block("Tr_Activity", act), final_newline=True)


# --------------------------------------------------------------------------- timetable
# An Open Rails timetable (docs/timetables.md in the repository), saved as spreadsheets
# save "Unicode text": UTF-16LE with BOM, tab-separated, CRLF. Ten columns: nine trains
# on the main line through Sampleby and a static train in the siding. IC 1 forms IC 2 at
# the east end, IC 2 triggers IC 3 at the west end, IC 3 goes to the pool Depot, L 1
# comes out of it and forms L 2, which is stabled at the east end for the night.
TIMETABLE = [
    ["", "RB 2", "RB 3", "IC 1", "IC 2", "IC 3", "G 1", "", "RB 1", "L 1", "L 2", "$static", "#comment"],
    ["#comment", "", "", "", "", "", "", "", "", "", "", "", "Sampleby day"],
    ["#path", "MainWE", "MainEW", "MainWE", "MainEW", "MainWE", "MainWE", "", "MainEW", "MainWE", "MainEW",
     "SidingStore", ""],
    # (IC 2's consist is ignored: it is formed out of IC 1 and runs with IC 1's)
    ["#consist", "sample_passenger", "sample_passenger", "sample_passenger", "sample_freight",
     "sample_double + sample_passenger", "sample_freight", "", "sample_double $reverse", "sample_double",
     "sample_double", "sample_double", ""],
    ["#start", "07:45", "07:52", "08:00", "08:08", "08:16", "08:24 $create=08:20", "", "08:30",
     "08:40 $pool=Depot", "08:50", "", ""],
    ["#note", "", "", "", "", "", "$follow=IC 3", "", "", "", "", "", "the freight follows IC 3"],
    ["#speedkph", "", "", "", "", "", "$max=60", "", "", "", "", "", ""],
    ["Sampleby $hold", "07:46-07:47", "07:55-07:56 $wait=IC 1 /notstarted", "08:01-08:02", "08:11-08:12 $nohold",
     "08:17-08:18", "", "$nowaitsignal", "08:33-08:34 $connect=IC 3 /maxdelay=5 /hold=1", "08:41-08:42 $forcehold",
     "08:53:30-08:54:30 $terminal", "", ""],
    ["#dispose", "$remove", "", "$forms=IC 2", "$triggers=IC 3", "$pool=Depot", "$remove", "", "", "$forms=L 2",
     "$stable /out_path=MainWE /out_time=09:00 /static", "", ""],
]


def write_timetable() -> None:
    text = "".join("\t".join(row) + "\r\n" for row in TIMETABLE)
    path = OUT / f"ROUTES/{ROUTE}/ACTIVITIES/OpenRails/Sampleby day.timetable-or"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    lst = OUT / f"ROUTES/{ROUTE}/ACTIVITIES/OpenRails/Sampleby.timetablelist-or"
    lst.write_bytes(("#Sampleby, all day\r\nSampleby day.timetable-or\r\n").encode("utf-8"))
    # The pool Depot the timetable's trains go to and come from (Open Rails needs it
    # defined): the end of the siding, reached by the path from the west end.
    pool = OUT / f"ROUTES/{ROUTE}/ACTIVITIES/OpenRails/Sampleby.pool-or"
    pool.write_bytes("".join(";".join(r) + "\r\n" for r in POOLS).encode("utf-8"))


POOLS = [
    ["", "Sampleby pools"],
    ["#comment", "Depot: the end of the Sampleby siding"],
    ["#name", "Depot"],
    ["#storage", "SidingStore"],
    ["#access", "Siding"],
    ["#maxunits", "2"],
]


def main() -> None:
    check()
    write_global_tsection()
    write_local_tsection()
    write_trk()
    save(f"ROUTES/{ROUTE}/{ROUTE}.tdb", trackdb(N, ITEMS, 1), final_newline=False)
    save(f"ROUTES/{ROUTE}/{ROUTE}.rdb", trackdb(RN, RITEMS, 1), final_newline=False)
    write_paths()
    write_activity()
    write_timetable()
    # Summary for the README (lengths in metres).
    for n in N.values():
        print(f"tdb node {n.index} {n.label:7s} {n.kind:8s} len {n.length:9.3f} pins {n.pins} items {n.items}")
    for n in RN.values():
        print(f"rdb node {n.index} {n.label:7s} {n.kind:8s} len {n.length:9.3f} pins {n.pins} items {n.items}")


if __name__ == "__main__":
    main()
