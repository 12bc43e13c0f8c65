"""Activities whose paths reverse, wait and start at a platform (issue 26), on a copy of
the signalled sample route (a single line with a passing loop and station Midtby,
sample_routes/generate_signals.py):

    V_w (node 2) ==o J_W ==== V_main (node 4, Midtby Spor 1) ==== J_E o== V_e (node 7)
                     \\======= V_loop (node 5, Midtby Spor 2) =====//

Every file is written as MSTS writes them (UTF-16LE with a BOM, CRLF) into folders of odd
case (``Paths``, ``services``, ``Traffic``, ``Activities``). Paths are built with
:func:`tdbtools.track.pathbuild.build_path` (reversals at ``via`` points); the waiting
point is a via point whose path-node flags are set by hand (the path builder writes none).

Activities (clock times from 08:00, ``H``):

* ``OneRev``: the player from V_w east over the main track past J_E, reverses on V_e
  and comes back west through the loop (reversal at junction J_E).
* ``ThreeRev``: the same, then reverses again on V_w (at J_W), runs east over the main and
  reverses a third time inside Midtby on plain track (the main track east of Spor 1),
  and ends on V_w.
* ``StationRev``: the player stops at Midtby Spor 1 (eastbound), reverses past J_E and
  stops at Midtby Spor 2 (westbound).
* ``AiRev``: an AI service with the path of ``OneRev`` and the player running east over
  the main track a minute later: the AI comes back through the loop while the player
  goes east (they cross at Midtby).
* ``Busy``: the player with the path of ``OneRev`` and an AI freight (``West``) setting off
  at the same time from V_e westward through J_E into the loop and on to V_w: J_E is
  the freight's when the player comes to it; the player waits at the signal before J_E
  until the freight has cleared it, runs onto V_e, reverses, and waits again for the
  route back through J_E into the loop, which the freight holds ahead of it.
* ``Wait``: the player runs east on the main with a 60 s waiting point on V_main.
* ``Origin``: the player starts standing at Midtby Spor 1 (booked departure 08:03) and
  runs east to V_e.

Use :func:`make_install` from tests (``tmp_path``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[2] / "sample_routes" / "sample"
H = 8 * 3600

ODD_CASE = {"PATHS": "Paths", "SERVICES": "services", "TRAFFIC": "Traffic", "ACTIVITIES": "Activities"}


def utf16_crlf(text: str) -> bytes:
    return b"\xff\xfe" + text.replace("\r\n", "\n").replace("\n", "\r\n").encode("utf-16-le")


def _reencode(folder: Path) -> None:
    """Every text file again as UTF-16LE + BOM + CRLF (whatever the writer chose)."""
    for f in folder.rglob("*"):
        if f.suffix.lower() in (".pat", ".srv", ".trf", ".act"):
            raw = f.read_bytes()
            text = raw[2:].decode("utf-16-le") if raw[:2] == b"\xff\xfe" else raw.decode("utf-8")
            f.write_bytes(utf16_crlf(text))


def _set_wait(pat: Path, seconds: int) -> None:
    """Make the first via point (a path point that is not a junction: its TrackPDP ends
    ``1 1``, neither the first nor the last) a waiting point of ``seconds``."""
    raw = pat.read_bytes()
    lines = raw[2:].decode("utf-16-le").split("\n")
    pdps = [ln.split() for ln in lines if ln.strip().startswith("TrackPDP (")]
    plain = [k for k, t in enumerate(pdps) if t[-3:-1] == ["1", "1"]][1:-1]
    node = 0
    for i, ln in enumerate(lines):
        if ln.strip().startswith("TrPathNode ("):
            parts = ln.split()
            if int(parts[-2]) == plain[0]:
                parts[2] = f"{(seconds << 16) | 0x2:08x}"
                lines[i] = ln[: len(ln) - len(ln.lstrip())] + " ".join(parts)
                break
            node += 1
    pat.write_bytes(b"\xff\xfe" + "\n".join(lines).encode("utf-16-le"))


def make_install(root: Path) -> Path:
    """Write the install (GLOBAL, TRAINS, ROUTES/SIGNALS with the activities); returns the route folder."""
    from tdbtools.formats.route import load_route
    from tdbtools.physics.activity_build import ServiceSpec, write_activity_files

    root.mkdir(parents=True, exist_ok=True)
    for sub in ("GLOBAL", "TRAINS"):
        shutil.copytree(SAMPLE / sub, root / sub)
    route_dir = root / "ROUTES" / "SIGNALS"
    shutil.copytree(SAMPLE / "ROUTES" / "SIGNALS", route_dir)
    for sub in ("ACTIVITIES", "PATHS", "SERVICES", "TRAFFIC"):
        shutil.rmtree(route_dir / sub)
    route = load_route(route_dir)

    def write(name: str, services: list[ServiceSpec], reversals: bool = True) -> None:
        write_activity_files(route, name, services, reversals=reversals, duration=7200)

    # the player's paths east over the main, back west through the loop
    one = ("2@1200", "2@1000", "4@700", "7@400", "5@700")
    write("OneRev", [ServiceSpec("Rev1", "sample_passenger", H, one, player=True)])
    three = ("2@1200", "2@1000", "4@700", "7@400", "5@700", "2@900", "4@900")
    write("ThreeRev", [ServiceSpec("Rev3", "sample_passenger", H, three, player=True)])
    write(
        "StationRev",
        [
            ServiceSpec(
                "StRev",
                "sample_passenger",
                H,
                one,
                stops=(("Midtby, Spor 1", H + 200, H + 260), ("Midtby, Spor 2", H + 520, H + 560)),
                player=True,
            )
        ],
    )
    write(
        "AiRev",
        [
            ServiceSpec("AiRev", "sample_passenger", H, one, stops=(("Midtby, Spor 2", H + 420, H + 450),)),
            ServiceSpec("East", "sample_freight", H + 60, ("2@1200", "7@1300", "4@700"), player=True),
        ],
    )
    write(
        "Busy",
        [
            ServiceSpec("Rev1", "sample_passenger", H, one, player=True),
            ServiceSpec("West", "sample_freight", H, ("7@1300", "2@900", "5@700")),
        ],
    )
    write(
        "Wait",
        [ServiceSpec("Waiter", "sample_passenger", H, ("2@1200", "7@1300", "4@700"), player=True)],
        reversals=False,
    )
    write(
        "Origin",
        [
            ServiceSpec(
                "Origin",
                "sample_passenger",
                H,
                ("4@760", "7@1300"),
                stops=(("Midtby, Spor 1", H, H + 180),),
                player=True,
            )
        ],
        reversals=False,
    )
    _set_wait(route_dir / "PATHS" / "Wait_Waiter.pat", 60)
    _reencode(route_dir)
    for sub, odd in ODD_CASE.items():
        (route_dir / sub).rename(route_dir / odd)
    return route_dir
