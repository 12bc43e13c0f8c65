"""Write the STF fixture files under tests/data/valid and tests/data/invalid.

Run from anywhere: ``python tests/data/make_fixtures.py``. The files are committed;
this script documents exactly which bytes each one holds (encodings, BOMs, CRLF,
compression) and recreates them. Goldens are made by ``make_golden.py``; the
expectations for the invalid corpus live in ``invalid/expected.json`` (hand-written).
"""

from __future__ import annotations

import random
import struct
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
VALID = HERE / "valid"
INVALID = HERE / "invalid"

SIG_T0T = "SIMISA@@@@@@@@@@JINX0T0t______"
SIG_F0T = "SIMISA@@@@@@@@@@JINX0F0t______"
SIG_R1T = "SIMISA@@@@@@@@@@JINX0r1t______"


def _lines(text: str, newline: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", newline)


def utf16(text: str, newline: str = "\r\n") -> bytes:
    """UTF-16LE with a BOM, as MSTS writes text files."""
    return b"\xff\xfe" + _lines(text, newline).encode("utf-16-le")


def utf8(text: str, newline: str = "\n", bom: bool = False) -> bytes:
    return (b"\xef\xbb\xbf" if bom else b"") + _lines(text, newline).encode("utf-8")


def cp1252(text: str, newline: str = "\r\n") -> bytes:
    return _lines(text, newline).encode("cp1252")


def compressed(body: bytes, sub_header: bytes = b"JINX0T0t______\r\n", *, cut: int | None = None) -> bytes:
    """``SIMISA@F`` + uint32 LE inflated length + ``@@@@``, then a zlib stream whose
    inflated data is the 16-byte sub-header followed by ``body``."""
    inflated = sub_header + body
    stream = zlib.compress(inflated, 9)
    if cut is not None:
        stream = stream[:cut]
    return b"SIMISA@F" + struct.pack("<I", len(inflated)) + b"@@@@" + stream


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# ---------------------------------------------------------------------------------------
# valid fixtures
# ---------------------------------------------------------------------------------------

UTF16_CRLF = (
    SIG_T0T
    + """

Route ( "Vestende - Østende"
	Station ( "Køge" 12.5 )
	Track ( A B ( 1 2 ) C )
)
Empty ( )
"""
)

UTF8_LF = """SIMISA@@@@@@@@@@JINX0D0t______

Wagon ( "Ærø"
	Mass ( 80t )
	Name ( "Straße — “quoted” ☃" )
)
"""

UTF8_BOM = (
    SIG_T0T
    + """
Data ( "Ålborg" 1 2 3 )
"""
)

# 0xF8 is 'ø' in cp1252 (and not valid UTF-8 on its own); 0x80 is the euro sign.
CP1252 = (
    SIG_T0T
    + """

Station ( "Østerport" "Nørreport" )
Price ( "5 €" )
"""
)

COMMENTS = (
    SIG_T0T
    + """
_INFO ( Build 00060 ( with nested ( parens ) ) )
_Skip (
	anything ( goes ( here ) ) "even a ) in a string"
)
#note foo bar
A ( 1 #x 2 3 )
_x ( dropped block ) B ( kept )
comment word C ( 4 )
Comment ( dropped ) D ( 5 )
skip ( x ( y ) ) E ( 6 )
SKIP gone F ( 7 )
#( whole block ) G ( 8 )
_INFO(no spaces) H ( 9 )
I ( 10 _tail )
J ( 11 comment )
K ( _first 12 13 )
"""
)

STRINGS = (
    SIG_T0T
    + r"""
S ( "tab\there" "new\nline" "a \"quoted\" word" "back\\slash" "\x" )
J ( "ab" + "cd" "a" +
	"b" + "c" )
E ( "" "(not a block)" "#not a comment" "_nor this" "two  spaces" )
Multi ( "line one
line two" )
"""
)

WORDS = (
    SIG_T0T
    + """
Names ( SNCF_TGV-IZI+4551 a.b.c -1.5e-3 +4 1,5 220kN#est 00000002 x/y*z )
Mass(100)Length(20m)Nested(A(1)B(2))
Esc ( a\\tb c\\nd e\\\\f )
"""
)

CASE = (
    SIG_T0T
    + """
TRACKDB ( Serial ( 1 ) )
trackdb ( serial ( 2 ) )
TrackDb ( SERIAL ( 3 ) )
"""
)

INCLUDE_MAIN = (
    SIG_T0T
    + """
Before ( 1 )
include ( "parts/other.inc" )
Outer (
	Include ( parts/nested.inc )
	After ( 2 )
)
INCLUDE "parts/nested.inc"
Last ( 3 )
"""
)

# The first line of an included file is its header and is dropped, whatever it holds.
OTHER_INC = """Dropped ( this line is the header of the include file )
FromOther ( "other" )
include ( nested.inc )
"""

NESTED_INC = """SIMISA@@@@@@@@@@JINX0T0t______
FromNested ( n )
"""

COMPRESSED_BODY = """
TrackSections ( 2
	TrackSection ( 1 SectionSize ( 1.5 50 ) )
	TrackSection ( 5 SectionSize ( 1.5 0 ) SectionCurve ( 500 -5 ) )
)
"""

TINY_TDB = (
    SIG_T0T
    + """

TrackDB (
	Serial ( 1 )
	TrackNodes ( 7
		TrackNode ( 1
			TrEndNode ( 0 )
			UiD ( -5631 15116 104 1 -5631 15116 -230.5 41.25 -380.75 0.004 -1.61706 0 )
			TrPins ( 1 0
				TrPin ( 2 1 )
			)
		)
		TrackNode ( 2
			TrVectorNode (
				TrVectorSections ( 2 1 2 -5631 15116 102 0 1 00 -5631 15116 -230.5 41.25 -380.75 0.004 1.5 0 5 20 -5631 15116 103 0 1 00 -5631 15116 -180.5 41.05 -379.25 0 1.5 1e-3 )
				TrItemRefs ( 7
					TrItemRef ( 0 )
					TrItemRef ( 1 )
					TrItemRef ( 2 )
					TrItemRef ( 3 )
					TrItemRef ( 4 )
					TrItemRef ( 5 )
					TrItemRef ( 6 )
				)
			)
			TrPins ( 1 1
				TrPin ( 1 1 )
				TrPin ( 3 1 )
			)
		)
		TrackNode ( 3
			TrJunctionNode ( 0 71 0 )
			UiD ( -5631 15116 101 0 -5631 15116 200 42 -310 0 1.35 0 )
			TrPins ( 1 2
				TrPin ( 2 0 )
				TrPin ( 4 1 )
				TrPin ( 5 1 )
			)
		)
		TrackNode ( 4
			TrVectorNode (
				TrVectorSections ( 1 180 71 -5631 15116 101 0 1 00 -5631 15116 200 42 -310 0 1.35 0 )
				TrItemRefs ( 5 TrItemRef ( 7 ) TrItemRef ( 8 ) TrItemRef ( 11 ) TrItemRef ( 12 ) TrItemRef ( 13 ) )
			)
			TrPins ( 1 1
				TrPin ( 3 0 )
				TrPin ( 6 1 )
			)
		)
		TrackNode ( 5
			TrVectorNode (
				TrVectorSections ( 1 182 71 -5631 15116 101 0 2 00 -5631 15116 200 42 -310 0 1.35 0 )
				TrItemRefs ( 5 TrItemRef ( 9 ) TrItemRef ( 10 ) TrItemRef ( 14 ) TrItemRef ( 15 ) TrItemRef ( 16 ) )
			)
			TrPins ( 1 1
				TrPin ( 3 0 )
				TrPin ( 7 1 )
			)
		)
		TrackNode ( 6
			TrEndNode ( 0 )
			UiD ( -5631 15116 101 1 -5631 15116 278.5 42 -292.5 0 1.35 0 )
			TrPins ( 1 0
				TrPin ( 4 0 )
			)
		)
		TrackNode ( 7
			TrEndNode ( 0 )
			UiD ( -5631 15116 101 2 -5631 15116 217.5 42 -306.25 0 1.35 0 )
			TrPins ( 1 0
				TrPin ( 5 0 )
			)
		)
	)
	TrItemTable ( 17
		SignalItem (
			TrItemId ( 0 )
			TrItemSData ( 15 00000002 )
			TrItemRData ( 185.25 42 -313.5 -5631 15116 )
			TrSignalType ( 00000000 0 1.35 dk3ind )
			TrSignalDirs ( 1
				TrSignalDir ( 3 1 0 0 )
			)
		)
		SignalItem (
			TrItemId ( 1 )
			TrItemSData ( 20 00000002 )
			TrItemRData ( 180.25 42 -314.5 -5631 15116 )
			TrSignalType ( 00000001 1 -1.75 DK3Ind )
		)
		SpeedPostItem (
			TrItemId ( 2 )
			TrItemSData ( 30 00000006 )
			TrItemPData ( -192.5 -379.25 -5631 15116 )
			TrItemRData ( -192.5 41.4 -379.25 -5631 15116 )
			SpeedpostTrItemData ( 2 80 1.5 )
		)
		SpeedPostItem (
			TrItemId ( 3 )
			TrItemSData ( 40 00000006 )
			TrItemRData ( -190.5 41.4 -379.0 -5631 15116 )
			SpeedpostTrItemData ( 273 60 6 -1.0 )
		)
		SpeedPostItem (
			TrItemId ( 4 )
			TrItemSData ( 50 00000006 )
			TrItemRData ( -188.5 41.4 -378.75 -5631 15116 )
			SpeedpostTrItemData ( 0 12.7 4.0 )
		)
		SpeedPostItem (
			TrItemId ( 5 )
			TrItemSData ( 60 00000006 )
			TrItemRData ( -186.5 41.4 -378.5 -5631 15116 )
			SpeedpostTrItemData ( 3 0.5 )
		)
		SpeedPostItem (
			TrItemId ( 6 )
			TrItemSData ( 70 00000006 )
			TrItemRData ( -184.5 41.4 -378.25 -5631 15116 )
			SpeedpostTrItemData ( 512 12.7 0.25 )
		)
		PlatformItem (
			TrItemId ( 7 )
			TrItemSData ( 40 00000002 )
			TrItemRData ( 160.5 42 -318.75 -5631 15116 )
			PlatformTrItemData ( 00000000 8 )
			PlatformName ( "Sampleby, Spor 1" )
			Station ( "Sampleby" )
			PlatformMinWaitingTime ( 60 )
			PlatformNumPassengersWaiting ( 12 )
		)
		PlatformItem (
			TrItemId ( 8 )
			TrItemSData ( 200 00000002 )
			TrItemRData ( 4.75 42 -353.75 -5631 15116 )
			PlatformTrItemData ( ffff0000 7 )
			PlatformName ( "Sampleby, Spor 1" )
			Station ( "Sampleby" )
			PlatformMinWaitingTime ( 60 )
			PlatformNumPassengersWaiting ( 12 )
		)
		SidingItem (
			TrItemId ( 9 )
			TrItemSData ( 230 00000002 )
			TrItemRData ( 426.75 42 -272.5 -5631 15116 )
			SidingTrItemData ( 00000000 10 )
			SidingName ( "Sampleby Sidespor" )
		)
		SidingItem (
			TrItemId ( 10 )
			TrItemSData ( 440 00000002 )
			TrItemRData ( 631.5 42 -226.5 -5631 15116 )
			SidingTrItemData ( ffff0000 9 )
			SidingName ( "Sampleby Sidespor" )
		)
		CrossoverItem (
			TrItemId ( 11 )
			TrItemSData ( 10 00000002 )
			TrItemRData ( 210.5 42 -307.75 -5631 15116 )
			CrossoverTrItemData ( 5 71 )
		)
		SoundRegionItem (
			TrItemId ( 12 )
			TrItemSData ( 12 00000002 )
			TrItemRData ( 212.5 42 -307.5 -5631 15116 )
			TrItemSRData ( 1 2 3.5 )
		)
		LevelCrItem (
			TrItemId ( 13 )
			TrItemSData ( 14 00000006 )
			TrItemPData ( 214.5 -307.25 -5631 15116 )
			TrItemRData ( 214.5 42 -307.25 -5631 15116 )
		)
		HazzardItem (
			TrItemId ( 14 )
			TrItemSData ( 16 00000002 )
			TrItemRData ( 216.5 42 -307 -5631 15116 )
		)
		PickupItem (
			TrItemId ( 15 )
			TrItemSData ( 18 00000002 )
			TrItemRData ( 218.5 42 -306.75 -5631 15116 )
		)
		EmptyItem (
			TrItemId ( 16 )
		)
	)
)
"""
)

GLOBAL_TSECTION = (
    SIG_F0T
    + """
_INFO ( tiny global tsection for the tdbtools fixtures )
TrackSections ( 40000
	_INFO(Straight Track Sections)
	TrackSection ( 1
		SectionSize ( 1.5 50 )
	)
	TrackSection ( 5
		SectionSize ( 1.5 0 )
		SectionCurve ( 500 -5 )
	)
	TrackSection ( 7
		SectionSize ( 1.5 0 )
		SectionCurve ( 0.5km 10 )
	)
	TrackSection ( 20
		SectionSize ( 5ft 100ft )
	)
	TrackSection ( 174
		SectionSize ( 1.5 0 )
		SectionCurve ( 655.007 5 )
	)
	TrackSection ( 180
		SectionSize ( 1.5 80 )
	)
	TrackSection ( 182
		SectionSize ( 1.5 17.912364 )
	)
)
TrackShapes ( 40000
	TrackShape ( 2
		FileName ( A1t50mStrt.s )
		NumPaths ( 1 )
		SectionIdx ( 1 0 0 0 0 1 )
	)
	TrackShape ( 71
		FileName ( A1tPnt5dRgt.s )
		NumPaths ( 2 )
		MainRoute ( 0 )
		ClearanceDist ( 52 )
		SectionIdx ( 1 0 0 0 0 180 )
		SectionIdx ( 2 0 0 0 0 182 174 )
	)
	TrackShape ( 300
		FileName ( DblTunnel.s ) NumPaths ( 2 )
		SectionIdx ( 1 -2.5 0 0 0 1 ) SectionIdx ( 1 2.5 0 0 0 1 )
		TunnelShape ( )
	)
	TrackShape ( 14050
		Filename ( RR_Rur_a_1LStr_050m.s ) NumPaths ( 1 ) SectionIdx ( 1 0 0 0 0 1 ) RoadShape ( )
	)
)
TrackSections ( 40000
	TrackSection ( 1 SectionSize ( 1.5 60 ) )
	TrackSection ( 2 SectionSize ( 1.5 100 ) )
)
"""
)

LOCAL_TSECTION = (
    SIG_T0T
    + """

TrackSections ( 40002
	TrackSection (
		SectionCurve ( 0 ) 40000 60 0
	)
	TrackSection (
		SectionCurve ( 1 ) 40001 -0.05 1200
	)
	TrackSection (
		SectionCurve ( 1 ) 40002 0.08 1500
	)
)
SectionIdx ( 1
	TrackPath ( 40000 3 40000 40001 40002 )
)
"""
)

ROUTE_TRK = (
    SIG_R1T
    + """

Tr_RouteFile (
	RouteID ( TINY )
	Name ( "Tiny " + "fixture route" )
	Description ( "Line one.\\nLine two" )
	FileName ( tiny )
	Electrified ( 00000000 )
	OverheadWireHeight ( 18ft )
	MaxLineVoltage ( 25kV )
	TrackGauge ( 1435mm )
	SpeedLimit ( 100kph )
	TempRestrictedSpeed ( 11.111111 )
	RouteStart ( -5631 15116 -212.954 -380.181 )
	RouteStart ( 1 2 3 4 )
	MilepostUnitsKilometers ( )
	Environment (
		SpringClear ( sun.env )
		WinterSnow ( snow.env )
	)
)
"""
)


def make_valid() -> None:
    write(VALID / "utf16_crlf.dat", utf16(UTF16_CRLF))
    write(VALID / "utf8_lf.dat", utf8(UTF8_LF))
    write(VALID / "utf8_bom.dat", utf8(UTF8_BOM, "\r\n", bom=True))
    write(VALID / "cp1252.dat", cp1252(CP1252))
    write(VALID / "comments.dat", utf8(COMMENTS))
    write(VALID / "strings.dat", utf16(STRINGS))
    write(VALID / "words.dat", utf8(WORDS))
    write(VALID / "case.dat", utf8(CASE))
    write(VALID / "include_main.dat", utf8(INCLUDE_MAIN))
    write(VALID / "parts" / "other.inc", utf16(OTHER_INC))
    write(VALID / "parts" / "nested.inc", utf8(NESTED_INC))
    write(VALID / "compressed.dat", compressed(_lines(COMPRESSED_BODY, "\r\n").encode("ascii")))
    write(VALID / "tiny.tdb", utf16(TINY_TDB))
    write(VALID / "global_tsection.dat", utf16(GLOBAL_TSECTION))
    write(VALID / "local_tsection.dat", utf16(LOCAL_TSECTION))
    write(VALID / "route.trk", utf16(ROUTE_TRK))


# ---------------------------------------------------------------------------------------
# invalid corpus: one defect per file (see invalid/expected.json)
# ---------------------------------------------------------------------------------------


def _tdb(nodes: str, items: str = "\tTrItemTable ( 0 )\n") -> str:
    return SIG_T0T + "\n\nTrackDB (\n" + nodes + items + ")\n"


# A small, correct TrackNodes table; the invalid .tdb files each break one thing in it.
_GOOD_NODES = """\tTrackNodes ( 3
		TrackNode ( 1
			TrEndNode ( 0 )
			UiD ( -1 1 1 0 -1 1 0 0 0 0 0 0 )
			TrPins ( 1 0 TrPin ( 2 1 ) )
		)
		TrackNode ( 2
			TrVectorNode (
				TrVectorSections ( 1 1 2 -1 1 2 0 1 00 -1 1 0 0 0 0 0 0 )
			)
			TrPins ( 1 1 TrPin ( 1 1 ) TrPin ( 3 0 ) )
		)
		TrackNode ( 3
			TrEndNode ( 0 )
			UiD ( -1 1 3 0 -1 1 0 0 50 0 0 0 )
			TrPins ( 1 0 TrPin ( 2 0 ) )
		)
	)
"""


def _bad_tdb(old: str, new: str, items: str = "\tTrItemTable ( 0 )\n") -> str:
    assert old in _GOOD_NODES, old
    return _tdb(_GOOD_NODES.replace(old, new, 1), items)


_GOOD_SECTION = "TrVectorSections ( 1 1 2 -1 1 2 0 1 00 -1 1 0 0 0 0 0 0 )"

_GOOD_GLOBAL = (
    SIG_F0T
    + """
TrackSections ( 1
	TrackSection ( 1 SectionSize ( 1.5 50 ) )
)
TrackShapes ( 1
	TrackShape ( 2
		FileName ( A1t50mStrt.s )
		NumPaths ( 1 )
		SectionIdx ( 1 0 0 0 0 1 )
	)
)
"""
)


def make_invalid() -> None:
    d = INVALID
    # -- container / encoding -------------------------------------------------------------
    write(d / "empty.tdb", b"")
    write(d / "header_only.tdb", utf16(SIG_T0T + "\n"))
    write(d / "binary_body.dat", b"SIMISA@@@@@@@@@@JINX0T0b______\r\n" + bytes(range(0, 64)))
    write(d / "odd_utf16.dat", utf16(SIG_T0T + "\nA ( 1 )\n") + b"\x41")
    rnd = random.Random(20240611)
    write(d / "random_bytes.dat", bytes(rnd.randrange(256) for _ in range(512)))
    write(d / "nul_in_text.dat", utf8(SIG_T0T + "\nA ( 1 )\nB ( 2\x003 )\n"))
    write(d / "nul_in_utf16.dat", utf16(SIG_T0T + "\r\nA ( \x00 )\r\n"))
    body = _lines(COMPRESSED_BODY, "\r\n").encode("ascii")
    full = compressed(body)
    write(d / "truncated_compressed.dat", full[: 16 + (len(full) - 16) // 2])
    write(
        d / "corrupt_compressed.dat",
        b"SIMISA@F" + struct.pack("<I", 100) + b"@@@@" + b"not a zlib stream at all",
    )
    write(d / "compressed_binary.dat", compressed(bytes(range(48)), b"JINX0T0b______\r\n"))
    # -- syntax ---------------------------------------------------------------------------
    write(d / "missing_close.dat", utf8(SIG_T0T + "\nA ( 1 )\nB (\n\tC ( 2 )\n\tD ( 3 )\n"))
    write(d / "stray_close.dat", utf8(SIG_T0T + "\nA ( 1 )\n  ) B ( 2 )\n"))
    # A lone CR (old Mac line end) is white space, not a line break, for STF (Open Rails
    # counts lines by LF); the stray ')' is on line 3.
    write(d / "stray_close_cr.dat", utf8(SIG_T0T + "\nA ( 1 )\rB ( 2 )\nC ( 3 ) )\n"))
    write(d / "unterminated_string.dat", utf8(SIG_T0T + '\nA ( 1 )\nName ( "never closed )\nB ( 2 )\n'))
    # -- include --------------------------------------------------------------------------
    write(d / "include_missing.dat", utf8(SIG_T0T + '\nA ( 1 )\n  include ( "no_such_file.inc" )\n'))
    write(d / "include_cycle_a.dat", utf8(SIG_T0T + '\nA ( 1 )\ninclude ( "include_cycle_b.inc" )\n'))
    write(d / "include_cycle_b.inc", utf8(SIG_T0T + '\nB ( 2 )\n\tinclude ( "include_cycle_a.dat" )\n'))
    # A fake MSTS install root: ROUTES/ and GLOBAL/ make install/ the root, so an include
    # may not leave it.
    root = d / "install"
    write(root / "GLOBAL" / "tsection.dat", utf16(_GOOD_GLOBAL))
    write(
        root / "ROUTES" / "R1" / "escape.dat",
        utf8(SIG_T0T + '\nA ( 1 )\ninclude ( "../../../../../../../../../../../../etc/passwd" )\n'),
    )
    write(root / "ROUTES" / "R1" / "escape_abs.dat", utf8(SIG_T0T + '\nA ( 1 )\ninclude ( "/etc/passwd" )\n'))
    write(
        root / "ROUTES" / "R1" / "escape_dotdot.dat",
        utf8(SIG_T0T + '\nA ( 1 )\n\tinclude ( "../../../outside.inc" )\n'),
    )
    write(d / "outside.inc", utf8(SIG_T0T + "\nOutside ( 1 )\n"))
    # -- .tdb -----------------------------------------------------------------------------
    write(
        d / "tdb_section_count.tdb",
        utf16(_bad_tdb(_GOOD_SECTION, _GOOD_SECTION.replace("( 1 1 2", "( 2 1 2"))),
    )
    write(
        d / "tdb_section_word.tdb",
        utf16(_bad_tdb(_GOOD_SECTION, _GOOD_SECTION.replace("-1 1 2 0 1", "-1 1 abc 0 1"))),
    )
    write(
        d / "tdb_nan.tdb",
        utf16(_bad_tdb(_GOOD_SECTION, _GOOD_SECTION.replace("00 -1 1 0 0 0", "00 -1 1 nan 0 0"))),
    )
    write(
        d / "tdb_inf.tdb",
        utf16(
            _tdb(
                _GOOD_NODES,
                """\tTrItemTable ( 1
		LevelCrItem (
			TrItemId ( 0 )
			TrItemRData ( 1.5 inf 2.5 -1 1 )
		)
	)
""",
            )
        ),
    )
    write(d / "tdb_nodes_count.tdb", utf16(_bad_tdb("TrackNodes ( 3", "TrackNodes ( 4")))
    write(
        d / "tdb_pins_count.tdb",
        utf16(_bad_tdb("TrPins ( 1 1 TrPin ( 1 1 ) TrPin ( 3 0 ) )", "TrPins ( 1 1 TrPin ( 1 1 ) )")),
    )
    write(
        d / "tdb_unknown_item.tdb",
        utf16(
            _tdb(
                _GOOD_NODES,
                """\tTrItemTable ( 2
		LevelCrItem ( TrItemId ( 0 ) )
		FooItem ( TrItemId ( 1 ) )
	)
""",
            )
        ),
    )
    # -- tsection.dat / .trk --------------------------------------------------------------
    write(d / "tsection_numpaths.dat", utf16(_GOOD_GLOBAL.replace("NumPaths ( 1 )", "NumPaths ( 2 )")))
    write(
        d / "tsection_sectionidx_count.dat",
        utf16(_GOOD_GLOBAL.replace("SectionIdx ( 1 0 0 0 0 1 )", "SectionIdx ( 2 0 0 0 0 1 )")),
    )
    write(
        d / "trk_unknown_unit.trk",
        utf16(
            SIG_R1T
            + """

Tr_RouteFile (
	RouteID ( BAD )
	Name ( "Bad units" )
	FileName ( bad )
	SpeedLimit ( 10furlong )
)
"""
        ),
    )
    write(
        d / "tsection_unknown_unit.dat",
        utf16(_GOOD_GLOBAL.replace("SectionSize ( 1.5 50 )", "SectionSize ( 1.5 50furlong )")),
    )
    write(
        d / "tsection_local_badsig.dat",
        utf16("SIMISA@@@@@@@@@@JINX0F0t______" + LOCAL_TSECTION[len(SIG_T0T) :]),
    )
    make_invalid_issue6()


# ---------------------------------------------------------------------------------------
# invalid corpus, issue 6: huge counts and values, deep nesting, mixed encodings, and
# the .pat, .con, .eng and scenario readers
# ---------------------------------------------------------------------------------------

#: Deep enough that anything recursive per level would fail (the stack holds ~1,000).
DEEP = 100_000
#: Nested pairs in deep_nesting.tdb: twenty times Python's recursion limit, so any
#: recursion fails; the fixture tests read it four times (100,000 took 5x as long).
DEEP_NESTED = 20_000

_GOOD_PAT = (
    SIG_T0T.replace("0T0t", "0P0t")
    + """

Serial ( 1 )
TrackPDPs (
	TrackPDP ( -5631 15116 100 42 -310 1 1 )
	TrackPDP ( -5631 15116 200 42 -310 1 1 )
)
TrackPath (
	TrPathName ( P1 )
	Name ( "Fixture path" )
	TrPathStart ( A )
	TrPathEnd ( B )
	TrPathNodes ( 2
		TrPathNode ( 00000000 1 4294967295 0 )
		TrPathNode ( 00000000 4294967295 4294967295 1 )
	)
)
"""
)

_GOOD_CON = (
    SIG_T0T.replace("0T0t", "0D0t")
    + """

Train (
	TrainCfg ( "fixture"
		Name ( "Fixture consist" )
		Serial ( 1 )
		MaxVelocity ( 40 0.001 )
		Engine ( UiD ( 0 ) EngineData ( loco LOCOS ) )
		Wagon ( UiD ( 1 ) WagonData ( coach COACHES ) )
	)
)
"""
)

_GOOD_ENG = (
    SIG_T0T.replace("0T0t", "0D0t")
    + """

Wagon ( FIXTURE
	Type ( Engine )
	Mass ( 80t )
	Size ( 3m 4m 20m )
	ORTSNumberAxles ( 2 )
	Friction ( 100N/m/s -0.1 1m/s 10N/m/s 1.5 )
)
Engine ( FIXTURE
	Type ( Electric )
	MaxPower ( 5000kW )
	MaxForce ( 300kN )
)
"""
)

_GOOD_TOML = """route = "ROUTES/SAMPLE"
step = 0.1
duration = 60

[[train]]
name = "t1"
consist = "sample_passenger"
path = "MainWE.pat"
"""


def _replace(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def make_invalid_issue6() -> None:
    d = INVALID
    # -- counts that would allocate: each must be reported, nothing allocated by it -------
    write(d / "tdb_huge_node_count.tdb", utf16(_bad_tdb("TrackNodes ( 3", "TrackNodes ( 999999999999")))
    write(
        d / "tdb_huge_section_count.tdb",
        utf16(_bad_tdb(_GOOD_SECTION, _GOOD_SECTION.replace("( 1 1 2", "( 4000000000 1 2"))),
    )
    write(
        d / "tdb_huge_pin_count.tdb",
        utf16(
            _bad_tdb(
                "TrPins ( 1 1 TrPin ( 1 1 ) TrPin ( 3 0 ) )",
                "TrPins ( 4294967295 1 TrPin ( 1 1 ) TrPin ( 3 0 ) )",
            )
        ),
    )
    write(d / "tdb_huge_item_count.tdb", utf16(_tdb(_GOOD_NODES, "\tTrItemTable ( 4294967295 )\n")))
    write(
        d / "tsection_huge_sectionidx.dat",
        utf16(_replace(_GOOD_GLOBAL, "SectionIdx ( 1 0 0 0 0 1 )", "SectionIdx ( 999999999 0 0 0 0 1 )")),
    )
    write(
        d / "tsection_huge_trackpath.dat",
        utf16(
            SIG_T0T
            + """

TrackSections ( 1
	TrackSection ( SectionCurve ( 0 ) 40000 60 0 )
)
SectionIdx ( 1
	TrackPath ( 40000 4000000000 40000 )
)
"""
        ),
    )
    write(
        d / "pat_huge_node_count.pat",
        utf16(_replace(_GOOD_PAT, "TrPathNodes ( 2", "TrPathNodes ( 4294967295")),
    )
    # -- huge and non-finite numbers ---------------------------------------------------------
    write(
        d / "tdb_huge_pin_link.tdb",
        utf16(_bad_tdb("TrPin ( 3 0 )", "TrPin ( 99999999999999999999999999 0 )")),
    )
    write(
        d / "tdb_huge_tile.tdb",
        utf16(_bad_tdb(_GOOD_SECTION, _GOOD_SECTION.replace("00 -1 1 0", "00 1e30 1 0"))),
    )
    write(
        d / "pat_nan.pat",
        utf16(_replace(_GOOD_PAT, "TrackPDP ( -5631 15116 200 42", "TrackPDP ( -5631 15116 NaN 42")),
    )
    write(
        d / "pat_bad_link.pat",
        utf16(
            _replace(
                _GOOD_PAT, "TrPathNode ( 00000000 1 4294967295 0 )", "TrPathNode ( 00000000 7 4294967295 0 )"
            )
        ),
    )
    write(
        d / "pat_bad_pdp.pat",
        utf16(
            _replace(
                _GOOD_PAT,
                "TrPathNode ( 00000000 4294967295 4294967295 1 )",
                "TrPathNode ( 00000000 4294967295 4294967295 2 )",
            )
        ),
    )
    write(
        d / "eng_huge_axles.eng",
        utf16(_replace(_GOOD_ENG, "ORTSNumberAxles ( 2 )", "ORTSNumberAxles ( 99999999999999999999 )")),
    )
    write(
        d / "eng_friction_overflow.eng",
        utf16(
            _replace(
                _GOOD_ENG,
                "Friction ( 100N/m/s -0.1 1m/s 10N/m/s 1.5 )",
                "Friction ( 100N/m/s 1e300 4m/s 10N/m/s 1.5 )",
            )
        ),
    )
    write(d / "eng_inf_mass.eng", utf16(_replace(_GOOD_ENG, "Mass ( 80t )", "Mass ( inf )")))
    write(
        d / "eng_unknown_unit.eng",
        utf16(_replace(_GOOD_ENG, "MaxForce ( 300kN )", "MaxForce ( 300furlong )")),
    )
    write(
        d / "con_enginedata.con",
        utf16(_replace(_GOOD_CON, "EngineData ( loco LOCOS )", "EngineData ( loco )")),
    )
    write(d / "con_no_traincfg.con", utf16(SIG_T0T.replace("0T0t", "0D0t") + "\n\nTrain ( Name ( x ) )\n"))
    write(d / "con_huge_uid.con", utf16(_replace(_GOOD_CON, "UiD ( 1 )", "UiD ( 1e999 )")))
    # -- deep nesting: no recursion anywhere, in the parser, the typed readers or the writer ---
    write(
        d / "deep_nesting.tdb",
        utf8(
            SIG_T0T
            + "\nTrackDB ( TrackNodes ( 1\n TrackNode ( 1 Deep "
            + "(" * DEEP_NESTED
            + ")" * DEEP_NESTED
            + " )\n) )\n"
        ),
    )
    write(d / "deep_unclosed.dat", utf8(SIG_T0T + "\nA ( 1 )\n" + "(" * DEEP + "\n"))
    # -- mixed encodings -------------------------------------------------------------------
    # UTF-8 text with a UTF-16 part pasted in: its zero bytes are NULs in 8-bit text.
    write(d / "mixed_utf8_utf16.dat", utf8(SIG_T0T + "\nA ( 1 )\n") + "B ( 2 )\n".encode("utf-16-le"))
    # UTF-16 (BOM) text with a UTF-8 part appended: 'ø' makes the byte count odd.
    write(d / "mixed_utf16_utf8.dat", utf16(SIG_T0T + "\nA ( 1 )\n", "\n") + "B ( ø )\n".encode())
    # UTF-16 text with a lone (unpaired) high surrogate.
    write(
        d / "utf16_lone_surrogate.dat",
        b"\xff\xfe" + (SIG_T0T + "\nA ( x\ud800y )\n").encode("utf-16-le", "surrogatepass"),
    )
    # -- scenario TOML -----------------------------------------------------------------------
    write(d / "scenario_bad_toml.toml", utf8(_replace(_GOOD_TOML, 'name = "t1"', 'name = "t1')))
    write(
        d / "scenario_huge_int.toml", utf8(_replace(_GOOD_TOML, "duration = 60", "duration = 1" + "0" * 400))
    )
    write(d / "scenario_nan.toml", utf8(_replace(_GOOD_TOML, "step = 0.1", "step = nan")))
    write(
        d / "scenario_unknown_key.toml",
        utf8(_replace(_GOOD_TOML, "duration = 60", "duration = 60\nspeed = 3")),
    )
    write(d / "scenario_not_utf8.toml", _GOOD_TOML.replace("t1", "Køge").encode("cp1252"))


if __name__ == "__main__":
    make_valid()
    make_invalid()
    print("fixtures written under", HERE)
