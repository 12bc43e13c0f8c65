#!/usr/bin/env python3
"""Generate the signalled sample route ``SIGNALS`` under sample_routes/sample/ROUTES/SIGNALS.

A single line with a passing loop, protected by a 3-aspect block system (docs/signals.md §7):

    E_w ===== V_w 1500 m =====o J_W ===== V_main (straight) ===== J_E o===== V_e 1500 m ===== E_e
                               \\== V_loop (through J_W route 1) ==//     (the east line continues
                                                                         in line with the loop)

Signals (all of type ``B3``: STOP / APPROACH_1 / CLEAR_2, SignalNumClearAhead 2, the script of
docs/signals.md §7.2): a home signal 30 m before each junction, and an exit signal 140 m before
the far junction on each loop track (beyond the fouling point), in each direction. Scenarios ``signals_follow.toml``
(a train held at the home signal behind another) and ``signals_crossing.toml`` (two trains
crossing at the loop) are written beside the sample's other scenarios.

Standalone like generate.py (whose geometry helpers and writers it reuses, stdlib only):
deterministic, and it asserts that node ends meet their junction/end UiDs within 1 mm and that
pins are mutual before writing anything.
Run:  python sample_routes/generate_signals.py
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generate as g  # noqa: E402  (building the SAMPLE route in memory is harmless)

ROUTE = "SIGNALS"
AY_E = math.pi / 2                       # the line runs due east
J_W_POSE = g.Pose(-5631 * 2048 + 300.0, 42.0, 15118 * 2048 + 100.0, 0.0, AY_E, 0.0)
STRAIGHTS = 4                            # 250 m straights between the loop curves
HOME = 30.0                              # m from the junction to its home signal (single track)
EXIT = 140.0                             # m from the junction to an exit signal: beyond the fouling point

g.OBJECTS = []
sw_w, sw_e = g.obj("switch J_W"), g.obj("switch J_E")


def straights(n: int, name: str) -> list[g.Piece]:
    return [g.Piece(3, 3, g.obj(f"{name} {i}")) for i in range(n)]


# V_loop: from J_W (switch route 1, diverging right = south), back parallel with a R500 -5 deg
# curve, straights, and J_E's straight route 0 (laid reversed, a straight: no sign change).
V_loop = g.lay(J_W_POSE, [g.Piece(182, g.SWITCH_SHAPE, sw_w, (0, 2)), g.Piece(174, g.SWITCH_SHAPE, sw_w, (0, 2)),
                          g.Piece(5, 20, g.obj("loop curve W"))] + straights(STRAIGHTS, "loop")
                + [g.Piece(180, g.SWITCH_SHAPE, sw_e, (1, 0))])
J_E_POSE = V_loop[-1].end.replace(AY=g.wrap(AY_E + math.pi))
# V_main: from J_E (route 1, diverging right of west = north), the same curves, straights, and
# J_W's straight route 0 (reversed). By symmetry it ends at J_W.
V_main = g.lay(J_E_POSE, [g.Piece(182, g.SWITCH_SHAPE, sw_e, (0, 2)), g.Piece(174, g.SWITCH_SHAPE, sw_e, (0, 2)),
                          g.Piece(5, 20, g.obj("main curve E"))] + straights(STRAIGHTS, "main")
                + [g.Piece(180, g.SWITCH_SHAPE, sw_w, (1, 0))])
V_w = g.lay(J_W_POSE.replace(AY=g.wrap(AY_E + math.pi)), straights(6, "west"))
V_e = g.lay(J_E_POSE.replace(AY=AY_E), straights(6, "east"))

N: dict[int, g.Node] = {}
N[1] = g.Node(1, "end", label="E_w", pins=[(2, 0)])
N[2] = g.Node(2, "vector", V_w, label="V_w", pins=[(3, 1), (1, 1)])
N[3] = g.Node(3, "junction", label="J_W", pins=[(2, 1), (4, 0), (5, 1)])     # trunk, route 0 main, route 1 loop
N[4] = g.Node(4, "vector", V_main, label="V_main", pins=[(6, 0), (3, 0)])
N[5] = g.Node(5, "vector", V_loop, label="V_loop", pins=[(3, 0), (6, 0)])
N[6] = g.Node(6, "junction", label="J_E", pins=[(7, 1), (5, 0), (4, 1)])     # trunk, route 0 loop, route 1 main
N[7] = g.Node(7, "vector", V_e, label="V_e", pins=[(6, 1), (8, 1)])
N[8] = g.Node(8, "end", label="E_e", pins=[(7, 0)])
N[3].uid_obj, N[3].uid_ep, N[3].uid_pose = sw_w, 0, J_W_POSE.replace(AY=g.wrap(AY_E + math.pi))
N[6].uid_obj, N[6].uid_ep, N[6].uid_pose = sw_e, 0, J_E_POSE.replace(AY=AY_E)
N[1].uid_obj, N[1].uid_ep, N[1].uid_pose = V_w[-1].piece.wobj, 1, V_w[-1].end
N[8].uid_obj, N[8].uid_ep, N[8].uid_pose = V_e[-1].piece.wobj, 1, V_e[-1].end

g.N = N
g.ITEMS = []
L_LOOP, L_MAIN = N[5].length, N[4].length
# TDB dir 0 governs trains moving forward along the node, dir 1 backward (docs/signals.md §3.3).
# Eastbound: V_w backward, V_loop forward, V_main backward, V_e forward.
SIGNALS = [
    ("home J_W eastbound", 2, HOME, 1),
    ("exit loop eastbound", 5, L_LOOP - EXIT, 0),
    ("exit main eastbound", 4, EXIT, 1),
    ("home J_E westbound", 7, HOME, 1),
    ("exit loop westbound", 5, EXIT, 1),
    ("exit main westbound", 4, L_MAIN - EXIT, 0),
]
for _label, node, d, direction in SIGNALS:
    g.add_item("SignalItem", node, d, extra=g.signal(direction, "b3"))

# Station Midtby: a 200 m platform on each loop track, in the middle of the loop (items 6-9).
PLATFORM_FROM, PLATFORM_TO = 500.0, 700.0


def platform(name: str, node: int) -> None:
    lines = [f'PlatformName ( "Midtby, {name}" )', 'Station ( "Midtby" )',
             "PlatformMinWaitingTime ( 30 )", "PlatformNumPassengersWaiting ( 8 )"]
    first = len(g.ITEMS)
    g.add_item("PlatformItem", node, PLATFORM_FROM, extra=g.linked("Platform", lines, "00000000", first + 1))
    g.add_item("PlatformItem", node, PLATFORM_TO, extra=g.linked("Platform", lines, "ffff0000", first))


platform("Spor 1", 4)   # main track: eastbound trains
platform("Spor 2", 5)   # loop track: westbound trains
MIDTBY_1, MIDTBY_2 = 6, 8

PATHS = [
    ("East_main", "West - east through the main track", "Vest", "Øst",
     [(g.on(2, 1450.0), 0), (g.PDP(J_W_POSE, True), 0), (g.on(4, L_MAIN / 2), 0), (g.PDP(J_E_POSE, True), 0),
      (g.on(7, 1450.0), 0)]),
    ("West_loop", "East - west through the loop", "Øst", "Vest",
     [(g.on(7, 1450.0), 0), (g.PDP(J_E_POSE, True), 0), (g.on(5, L_LOOP / 2), 0), (g.PDP(J_W_POSE, True), 0),
      (g.on(2, 1450.0), 0)]),
    # East over the main track, a reversal point (flags 1) 400 m past J_E, back west through
    # the loop: the train turns once its whole length is past J_E (docs/activities.md §4.4).
    ("Turn_back", "West - east - back west through the loop", "Vest", "Vest",
     [(g.on(2, 1450.0), 0), (g.PDP(J_W_POSE, True), 0), (g.on(4, L_MAIN / 2), 0), (g.PDP(J_E_POSE, True), 0),
      (g.on(7, 400.0), 1), (g.PDP(J_E_POSE, True), 0), (g.on(5, L_LOOP / 2), 0), (g.PDP(J_W_POSE, True), 0),
      (g.on(2, 1200.0), 0)]),
]

SIGCFG = """SIMISA@@@@@@@@@@JINX0G0t______

_Skip ( Generated by sample_routes/generate_signals.py: a 3-aspect block system. )
LightTextures ( 1
\tLightTex ( "ltex" "SignalLight.ace" 0 0 1 1 )
)
LightsTab ( 3
\tLightsTabEntry ( "Red Light" colour ( 255 255 0 0 ) )
\tLightsTabEntry ( "Amber Light" colour ( 255 255 200 0 ) )
\tLightsTabEntry ( "Green Light" colour ( 255 0 255 0 ) )
)
SignalTypes ( 1
\tSignalType ( "B3"
\t\tSignalFnType ( NORMAL )
\t\tSignalLightTex ( "ltex" )
\t\tSignalLights ( 3
\t\t\tSignalLight ( 0 "Red Light" Position ( 0 1 0 ) Radius ( 0.1 ) )
\t\t\tSignalLight ( 1 "Amber Light" Position ( 0 0.7 0 ) Radius ( 0.1 ) )
\t\t\tSignalLight ( 2 "Green Light" Position ( 0 0.4 0 ) Radius ( 0.1 ) )
\t\t)
\t\tSignalDrawStates ( 3
\t\t\tSignalDrawState ( 0 "Red" DrawLights ( 1 DrawLight ( 0 ) ) )
\t\t\tSignalDrawState ( 1 "Yellow" DrawLights ( 1 DrawLight ( 1 ) ) )
\t\t\tSignalDrawState ( 2 "Green" DrawLights ( 1 DrawLight ( 2 ) ) )
\t\t)
\t\tSignalAspects ( 3
\t\t\tSignalAspect ( STOP "Red" )
\t\t\tSignalAspect ( APPROACH_1 "Yellow" )
\t\t\tSignalAspect ( CLEAR_2 "Green" )
\t\t)
\t\tSignalNumClearAhead ( 2 )
\t)
)
SignalShapes ( 1
\tSignalShape ( "B3Sig.s" "3-aspect colour light"
\t\tSignalSubObjs ( 1
\t\t\tSignalSubObj ( 0 "HEAD1" "Head" SigSubType ( SIGNAL_HEAD ) SigSubSType ( "B3" ) )
\t\t)
\t)
)
ScriptFiles (
\tScriptFile ( sigscr.dat )
)"""

SIGSCR = """// Signal scripts of the SIGNALS sample route (generated by sample_routes/generate_signals.py).

SCRIPT B3
// 3-aspect block: red unless cleared and the block is free; yellow before a red; else green.
\textern float block_state ();
\textern float next_sig_lr ();
\textern float def_draw_state ();
\textern float state;
\textern float draw_state;
\textern float enabled;
\tfloat nxt;

\tnxt = next_sig_lr (SIGFN_NORMAL);
\tif (!enabled || block_state () !=# BLOCK_CLEAR)
\t{
\t\tstate = SIGASP_STOP;
\t}
\telse if (nxt ==# SIGASP_STOP)
\t{
\t\tstate = SIGASP_APPROACH_1;
\t}
\telse
\t{
\t\tstate = SIGASP_CLEAR_2;
\t}
\tdraw_state = def_draw_state (state);
"""

SCENARIO_HEAD = """# Generated by sample_routes/generate_signals.py: {what}
route = "ROUTES/SIGNALS"
step = 0.2
duration = {duration}
"""

FOLLOW = SCENARIO_HEAD.format(what="a follower held at the home signal of J_W", duration=420) + """
[[train]]
name = "leader"
consist = "sample_freight"
path = "East_main"
start_offset = 400
beyond_path = 600

[[train]]
name = "follower"
consist = "sample_passenger"
path = "East_main"
depart = 20
beyond_path = 200
"""

CROSSING = SCENARIO_HEAD.format(what="two trains cross at the passing loop", duration=900) + """
[[train]]
name = "eastbound"
consist = "sample_freight"
path = "East_main"

[[train]]
name = "westbound"
consist = "sample_passenger"
path = "West_loop"
"""


# The activity "Crossing" (docs/activities.md §7): eastbound trains run through the main track,
# westbound ones through the loop, so they cross at Midtby; each direction has a train following
# another. Times are seconds since midnight, tuned to the replay (a few seconds' margin).
H = 8 * 3600
SERVICES = [
    # (file, display name, consist, path, start, [(platform id, arrival, departure)])
    ("FreightEast", "Freight east", "sample_freight", "East_main", H, []),
    ("RegionalWest", "Regional west", "sample_passenger", "West_loop", H, [(MIDTBY_2, H + 130, H + 280)]),
    ("PassengerEast", "Passenger east", "sample_passenger", "East_main", H + 120, [(MIDTBY_1, H + 285, H + 315)]),
    ("LocalWest", "Local west", "sample_double", "West_loop", H + 450, [(MIDTBY_2, H + 560, H + 590)]),
]
PLAYER = "LocalWest"
# The activity "Turnback": the player runs east, calls at Midtby Spor 1, turns beyond the
# station's east junction and calls at Spor 2 on its way back west (docs/activities.md §4.4).
TURN_SERVICES = [
    ("TurnBack", "Turn back", "sample_passenger", "Turn_back", H,
     [(MIDTBY_1, H + 135, H + 180), (MIDTBY_2, H + 360, H + 400)]),
]


def check() -> None:
    for n in N.values():
        if n.kind != "vector":
            continue
        ws = [g.from_written(g.written(v.start)) for v in n.vsecs]
        for i, v in enumerate(n.vsecs[:-1]):
            e = g.advance(ws[i], v.section, v.section.extent)
            assert g.dist3(e, ws[i + 1]) < g.TOL, (n.label, i)
        last = g.advance(ws[-1], n.vsecs[-1].section, n.vsecs[-1].section.extent)
        for end_pose, (link, _) in ((ws[0], n.pins[0]), (last, n.pins[1])):
            gap = g.dist3(end_pose, g.from_written(g.written(N[link].uid_pose)))
            assert gap < g.TOL, f"{n.label} end vs {N[link].label}: {gap * 1000:.3f} mm"
    for n in N.values():
        for link, dirn in n.pins:
            m = N[link]
            back = [j for j, (l2, _) in enumerate(m.pins) if l2 == n.index]
            assert len(back) == 1, (n.label, m.label)
            assert dirn == (1 if back[0] == 0 else 0) or m.kind == "end", (n.label, m.label)
    assert abs(L_MAIN - L_LOOP) < 1e-6


def write_trk() -> None:
    st = PATHS[0][4][0][0].pose
    tx, tz, x, _, z, *_ = g.written(st)
    body = [f"RouteID ( {ROUTE} )", 'Name ( "tdbtools signalled sample route" )',
            'Description ( "A single line with a passing loop and a 3-aspect block system." )',
            f"FileName ( {ROUTE} )", "Electrified ( 00000000 )", "SpeedLimit ( 33.333333 )",
            f"RouteStart ( {tx} {tz} {g.fmt(x, 3)} {g.fmt(z, 3)} )", "MilepostUnitsKilometers ( )",
            "TempRestrictedSpeed ( 11.111111 )"]
    g.save(f"ROUTES/{ROUTE}/{ROUTE}.trk", ["SIMISA@@@@@@@@@@JINX0r1t______", ""] + g.block("Tr_RouteFile", body),
           final_newline=False)


def main() -> None:
    g.assign_uids()
    check()
    g.ROUTE = ROUTE
    g.PATHS = PATHS
    write_trk()
    g.save(f"ROUTES/{ROUTE}/{ROUTE}.tdb", g.trackdb(N, g.ITEMS, 1), final_newline=False)
    g.write_paths()
    g.SERVICES, g.PLAYER = SERVICES, PLAYER
    g.write_activity("Crossing", "Four trains on the single line: they cross at the Midtby loop and follow each other")
    g.SERVICES, g.PLAYER = TURN_SERVICES, "TurnBack"
    g.write_activity("Turnback", "The player turns back beyond Midtby and calls there on both tracks")
    g.save(f"ROUTES/{ROUTE}/sigcfg.dat", SIGCFG.split("\n"), final_newline=True)
    g.save(f"ROUTES/{ROUTE}/sigscr.dat", SIGSCR.split("\n"), final_newline=True)
    for name, text in (("signals_follow.toml", FOLLOW), ("signals_crossing.toml", CROSSING)):
        (g.OUT / name).write_text(text, encoding="utf-8", newline="\n")
    for n in N.values():
        print(f"node {n.index} {n.label:7s} {n.kind:8s} len {n.length:9.3f} pins {n.pins} items {n.items}")


if __name__ == "__main__":
    main()
