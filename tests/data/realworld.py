"""Small synthetic routes with the defects real Open Rails routes have (issue 10).

Nothing here is copied from a route: each file is written from the formats' rules
(docs/formats.md). One install holds one route, ``ROUTES/RW``:

* every text file UTF-16LE with a BOM and CRLF line ends, as MSTS writes them;
* a straight line of ``SECTIONS`` 100 m sections heading north, between two end nodes;
* a route-local ``Consists/`` folder (mixed case) holding ``rw_dmu.con``: a diesel
  multiple unit whose stock is not installed (stand-ins needed), MaxVelocity 25 m/s;
* ``carspawn.dat`` ending with a stray ``)``, which Open Rails ignores;
* its signal configuration in ``OpenRails/sigcfg.dat``;
* with ``missing_section=True`` one vector section uses a section id the global
  tsection.dat lacks (Open Rails loads such a route; the section has no length).

Use :func:`make_route` from tests (``tmp_path``) or run the module to write the
routes into a folder: ``python tests/data/realworld.py OUT``.
"""

from __future__ import annotations

import sys
from pathlib import Path

SECTIONS = 6
SECTION_M = 100.0
TILE = (-3, 7)
START_Z = -300.0  # the line runs from z −300 to +300 in one tile
MISSING_ID = 9999

_SIG = {
    "trk": "SIMISA@@@@@@@@@@JINX0r1t______",
    "tdb": "SIMISA@@@@@@@@@@JINX0T0t______",
    "tsection": "SIMISA@@@@@@@@@@JINX0T0t______",
    "pat": "SIMISA@@@@@@@@@@JINX0P0t______",
    "con": "SIMISA@@@@@@@@@@JINX0D0t______",
    "dat": "SIMISA@@@@@@@@@@JINX0c0t______",
}


def utf16_crlf(text: str) -> bytes:
    """UTF-16LE with a BOM and CRLF, as MSTS writes text files."""
    return b"\xff\xfe" + text.replace("\r\n", "\n").replace("\n", "\r\n").encode("utf-16-le")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(utf16_crlf(text))


def _tsection() -> str:
    return (
        _SIG["tsection"]
        + """

TrackSections ( 40000
	TrackSection ( 1
		SectionSize ( 1.5 100 )
	)
)
TrackShapes ( 40000
	TrackShape ( 2
		FileName ( RW_100m_Strt.s )
		NumPaths ( 1 )
		SectionIdx ( 1 0 0 0 0 1 )
	)
)
"""
    )


def _trk() -> str:
    return (
        _SIG["trk"]
        + """

Tr_RouteFile (
	RouteID ( RW )
	Name ( "Realworld defects line" )
	Description ( "A synthetic straight line with real-world defects." )
	Graphic ( graphic.ace )
	LoadingScreen ( load.ace )
	FileName ( RW )
	Electrified ( 00000000 )
	Mountains ( 00000000 )
	OverheadWireHeight ( 6 )
	PassengerRuleSet ( 0 )
	FreightRuleSet ( 0 )
	SignalSet ( 0 )
	GantrySet ( 0 )
	TrackGauge ( 1435mm )
	Era ( 0 )
	SpeedLimit ( 27.777778 )
	Environment (
		SpringClear ( sun.env )
		SummerClear ( sun.env )
		AutumnClear ( sun.env )
		WinterClear ( sun.env )
	)
	TerrainErrorScale ( 1 )
	RouteStart ( TX TZ 0 Z0 )
	MilepostUnitsKilometers ( )
	DefaultCrossingSMS ( crossing.sms )
	DefaultSignalSMS ( signal.sms )
	TempRestrictedSpeed ( 11.111111 )
)
""".replace("TX TZ 0 Z0", f"{TILE[0]} {TILE[1]} 0 {START_Z:g}")
    )


def _tdb(missing_section: bool) -> str:
    tx, tz = TILE
    rows = []
    for k in range(SECTIONS):
        sid = MISSING_ID if missing_section and k == SECTIONS // 2 else 1
        z = START_Z + k * SECTION_M
        rows.append(f"{sid} 2 {tx} {tz} {k + 10} 0 1 00 {tx} {tz} 0 10 {z:g} 0 0 0")
    end_z = START_Z + SECTIONS * SECTION_M
    return (
        _SIG["tdb"]
        + f"""

TrackDB (
	Serial ( 1 )
	TrackNodes ( 3
		TrackNode ( 1
			TrEndNode ( 0 )
			UiD ( {tx} {tz} 1 0 {tx} {tz} 0 10 {START_Z:g} 0 3.14159 0 )
			TrPins ( 1 0 TrPin ( 2 1 ) )
		)
		TrackNode ( 2
			TrVectorNode (
				TrVectorSections ( {SECTIONS} {" ".join(rows)} )
			)
			TrPins ( 1 1 TrPin ( 1 1 ) TrPin ( 3 1 ) )
		)
		TrackNode ( 3
			TrEndNode ( 0 )
			UiD ( {tx} {tz} 3 0 {tx} {tz} 0 10 {end_z:g} 0 0 0 )
			TrPins ( 1 0 TrPin ( 2 0 ) )
		)
	)
	TrItemTable ( 0 )
)
"""
    )


def _pat(name: str, z0: float, z1: float) -> str:
    tx, tz = TILE
    return (
        _SIG["pat"]
        + f"""

Serial ( 1 )
TrackPDPs (
	TrackPDP ( {tx} {tz} 0 10 {z0:g} 1 1 )
	TrackPDP ( {tx} {tz} 0 10 {z1:g} 1 1 )
)
TrackPath (
	TrPathName ( {name} )
	Name ( "{name}" )
	TrPathStart ( "South" )
	TrPathEnd ( "North" )
	TrPathNodes ( 2
		TrPathNode ( 00000000 1 4294967295 0 )
		TrPathNode ( 00000000 4294967295 4294967295 1 )
	)
)
"""
    )


def _con() -> str:
    # Two power cars of a diesel multiple unit around a trailer: the stock is not
    # installed, so a replay needs stand-ins (named after the files).
    return (
        _SIG["con"]
        + """

Train (
	TrainCfg ( "rw_dmu"
		Name ( "RW diesel multiple unit" )
		Serial ( 1 )
		MaxVelocity ( 25.00000 0.00100 )
		NextWagonUID ( 3 )
		Durability ( 1.00000 )
		Engine (
			UiD ( 0 )
			EngineData ( rw_dmu_motor RW_DMU )
		)
		Wagon (
			UiD ( 1 )
			WagonData ( rw_dmu_trailer RW_DMU )
		)
		Engine (
			UiD ( 2 )
			Flip ( )
			EngineData ( rw_dmu_motor RW_DMU )
		)
	)
)
"""
    )


def _carspawn() -> str:
    # Real carspawn.dat files end with one ')' too many; Open Rails ignores it.
    return (
        _SIG["dat"]
        + """

CarSpawnerList ( 2
	CarSpawnerItem ( "car1.s" 4 )
	CarSpawnerItem ( "car2.s" 5 )
)
)
"""
    )


def _sigcfg() -> str:
    return (
        _SIG["dat"]
        + """

SIGNALConfig (
	LightTextures ( 0 )
	SignalTypes ( 0 )
	SignalShapes ( 0 )
)
"""
    )


def make_route(root: Path, *, missing_section: bool = False) -> Path:
    """Write the install at ``root``; return the route folder ``root/ROUTES/RW``."""
    route = root / "ROUTES" / "RW"
    _write(root / "GLOBAL" / "tsection.dat", _tsection())
    _write(route / "RW.trk", _trk())
    _write(route / "RW.tdb", _tdb(missing_section))
    length = SECTIONS * SECTION_M
    _write(route / "PATHS" / "line.pat", _pat("line", START_Z + 5, START_Z + length - 5))
    _write(route / "PATHS" / "short.pat", _pat("short", START_Z + 5, START_Z + 45))
    _write(route / "Consists" / "rw_dmu.con", _con())
    _write(route / "carspawn.dat", _carspawn())
    _write(route / "OpenRails" / "sigcfg.dat", _sigcfg())
    return route


def scenario(route: Path, path: str = "line.pat", **extra: object) -> str:
    """A replay TOML for the route's DMU on ``path`` (stand-ins on)."""
    lines = [
        f'route = "{route.as_posix()}"',
        "step = 0.1",
        "duration = 300",
        "stand_in = true",
        "",
        "[[train]]",
        'name = "dmu"',
        'consist = "rw_dmu"',
        f'path = "{path}"',
        'driver = "auto"',
    ]
    lines.extend(f"{k} = {v!r}" for k, v in extra.items())
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "realworld-routes")
    print(make_route(out / "clean"))
    print(make_route(out / "missing_section", missing_section=True))
