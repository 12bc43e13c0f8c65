"""Fuzzing every reader of tdbtools with mutated route files (issue 6).

    python benchmarks/fuzz.py [--cases N] [--seed S] [--no-dk24] [--save DIR] [-v]

Each case takes a seed file -- a file of the sample route (``sample_routes/sample``) or
of the real DK24 route (``../shared/routes/DK24``, if present: its small files, the
DK24TEST route, and windows cut from the big .tdb/.rdb/tsection.dat) -- and mutates
it: in the text (numbers swapped for NaN, inf, huge values and words; counts made
huge; parentheses deleted or added; blocks duplicated, swapped, deleted or nested
thousands deep; include/comment directives, odd characters, 40,000-character words
and long white space inserted; text truncated), in the encoding (UTF-16 with or without BOM, UTF-8, cp1252, mixed halves,
a zlib-compressed SIMISA@F file, possibly cut), and in the bytes (bit flips,
deletions, insertions, truncations, duplicated and swapped runs). The result is read
by the reader of its file type in strict and in lenient mode, and the model it gives
is used (path chains, stock lookup, a traveller walk and an audit of the sample route
with a fuzzed track database, path resolution with a fuzzed path).

A case fails when

* any exception other than a :class:`tdbtools.errors.TdbToolsError` escapes (a warning
  too: the test suite turns warnings into errors),
* a read takes more than 2 s (a hang is stopped after 10 s),
* an error about the file is not a :class:`~tdbtools.errors.SourceError` with a path,
  line and column,
* lenient mode raises where strict mode reads the file, or raises anything but a
  decoding or syntax error (lenient mode goes on wherever Open Rails would), or
* a file read without error does not survive the writer: ``format_stf`` of its tree
  parses back to an equal tree, and, for the typed readers, to an equal model.

The run prints the outcomes (per mode: ``ok`` or the error class), the failures with
the input that caused them (saved with ``--save``), and the slowest case. Exit status
1 if any case failed. Default: 2,000 cases, seed 0. ``tests/test_fuzz.py`` runs a
smaller fixed-seed set of the same cases.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import math
import random
import re
import shutil
import signal
import struct
import sys
import tempfile
import time
import traceback
import warnings
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tdbtools.errors import DecodeError, Diagnostics, SourceError, StfSyntaxError, TdbToolsError  # noqa: E402
from tdbtools.formats import read_consist, read_pat, read_stock, read_tdb, read_trk, read_tsection_file  # noqa: E402
from tdbtools.physics.scenario import read_scenario  # noqa: E402
from tdbtools.stf import parse_file, parse_text  # noqa: E402
from tdbtools.stf.writer import format_stf, write_text_atomic  # noqa: E402

SAMPLE = REPO / "sample_routes" / "sample"
DK24 = (REPO / ".." / "shared" / "routes" / "DK24").resolve()

#: A read that takes more CPU seconds than this fails the case. CPU time of this process,
#: not the wall clock: other processes' load on the machine does not make a case "slow".
SLOW_S = 2.0
#: A read that has used this many CPU seconds is stopped (a hang).
HANG_S = 10.0

SIG = "SIMISA@@@@@@@@@@JINX0T0t______"


# ---------------------------------------------------------------------------------------
# readers
# ---------------------------------------------------------------------------------------


def _scenario(path: Path, diags: Diagnostics):
    return read_scenario(path)  # TOML: no lenient mode, every defect is a ScenarioError


def _sweep(path: Path, diags: Diagnostics):
    from tdbtools.sweep.spec import read_sweep_spec

    # A lower limit than the default 10,000: building that many takes about a second.
    return read_sweep_spec(path, max_combinations=500)


READERS = {
    "stf": lambda p, d: parse_file(p, diagnostics=d),
    "tdb": lambda p, d: read_tdb(p, diagnostics=d),
    "tsection": lambda p, d: read_tsection_file(p, diagnostics=d),
    "trk": lambda p, d: read_trk(p, diagnostics=d),
    "pat": lambda p, d: read_pat(p, diagnostics=d),
    "con": lambda p, d: read_consist(p, diagnostics=d),
    "stock": lambda p, d: read_stock(p, diagnostics=d),
    "scenario": _scenario,
    "sweep": _sweep,
}


def reader_for(name: str) -> str:
    """The reader for a file name (by its suffix; tsection.dat by name)."""
    low = name.lower()
    if low == "tsection.dat":
        return "tsection"
    if low.endswith("sweep.toml"):
        return "sweep"
    return {
        ".tdb": "tdb",
        ".rdb": "tdb",
        ".trk": "trk",
        ".pat": "pat",
        ".con": "con",
        ".eng": "stock",
        ".wag": "stock",
        ".toml": "scenario",
    }.get(Path(low).suffix, "stf")


#: Readers of TOML settings: no lenient mode, no STF round trip.
TOML_READERS = ("scenario", "sweep")

#: Errors lenient mode may raise: it cannot go on after them (Open Rails cannot either).
LENIENT_FATAL = (DecodeError, StfSyntaxError)


# ---------------------------------------------------------------------------------------
# seeds
# ---------------------------------------------------------------------------------------


@dataclass
class Seed:
    """A file to mutate: where it goes in the scratch install, and its text."""

    rel: str  # path relative to the install root ("ROUTES/SAMPLE/SAMPLE.tdb")
    install: str  # "sample" | "dk24"
    text: str  # decoded text (signature line included)
    encoding: str  # "utf-16" | "utf-8" | "cp1252"
    weight: float = 1.0
    window: bool = False  # a big file: each case mutates a window of it

    @property
    def reader(self) -> str:
        return reader_for(Path(self.rel).name)


def _decode(data: bytes) -> tuple[str, str]:
    if data[:2] == b"\xff\xfe":
        return data[2:].decode("utf-16-le", errors="replace"), "utf-16"
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:]
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace"), "cp1252"


def load_seeds(
    use_dk24: bool = True, dk24_files: int | None = None, rng: random.Random | None = None
) -> list[Seed]:
    """The seed files: the whole sample install, and DK24's small files if present.
    ``dk24_files`` caps how many DK24 .pat and .con files are used (a random choice)."""
    seeds: list[Seed] = []
    for p in sorted(SAMPLE.rglob("*")):
        if not p.is_file():
            continue
        text, enc = _decode(p.read_bytes())
        seeds.append(Seed(p.relative_to(SAMPLE).as_posix(), "sample", text, enc, 3.0))
    if use_dk24 and dk24_available():
        rng = rng or random.Random(0)
        small: dict[str, list[Path]] = {"pat": [], "con": []}
        for p in sorted(DK24.rglob("*")):
            if not p.is_file():
                continue
            rel = p.relative_to(DK24).as_posix()
            kind = reader_for(p.name)
            size = p.stat().st_size
            if kind in small:
                small[kind].append(p)
            elif kind in ("tdb", "trk", "tsection") and size <= 64_000:
                text, enc = _decode(p.read_bytes())
                seeds.append(Seed(rel, "dk24", text, enc, 2.0))
            elif kind in ("tdb", "tsection") and size > 64_000:
                text, enc = _decode(p.read_bytes())
                seeds.append(Seed(rel, "dk24", text, enc, 2.0, window=True))
        for files in small.values():
            if dk24_files is not None and len(files) > dk24_files:
                files = sorted(rng.sample(files, dk24_files))
            for p in files:
                text, enc = _decode(p.read_bytes())
                # Spread the category's weight over its files.
                seeds.append(Seed(p.relative_to(DK24).as_posix(), "dk24", text, enc, 6.0 / len(files)))
    return seeds


def dk24_available() -> bool:
    return (DK24 / "ROUTES" / "OR_DK24" / "DK24.tdb").is_file()


# ---------------------------------------------------------------------------------------
# mutations
# ---------------------------------------------------------------------------------------

NASTY_NUMBERS = [
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "1e309",
    "-1e309",
    "1e308",
    "1e-400",
    "-0",
    "99999999999999999999999999",
    "4294967295",
    "4294967296",
    "2147483648",
    "-2147483649",
    "9223372036854775808",
    "-1",
    "0",
    "1e6",
    "0x1F",
    "1,5",
    "1,000,000",
    "12abc",
    "abc",
    "",
    "1.2.3",
    "+-1",
    "1e",
    ".",
    "-",
    "00000000",
    "ffffffff",
    "1e400t",
    "10furlong",
    "5km/h/h",
    "3" * 400,
]
HUGE_COUNTS = [
    "4294967295",
    "4000000000",
    "999999999",
    "999999999999",
    "18446744073709551617",
    "2147483647",
    "-1",
    "65536",
    "100000000",
    "1e9",
    "0",
]
COUNT_BLOCKS = re.compile(
    r"\b(TrackNodes|TrVectorSections|TrItemTable|TrPins|TrItemRefs|TrPathNodes|SectionIdx|"
    r"TrackSections|TrackShapes|NumPaths|TrackPath|TrSignalDirs|TrPin|TrItemRef|TrackNode|"
    r"TrackSection|TrackShape|ORTSNumberAxles|NumWheels)(\s*\(\s*)(-?\d+)",
    re.I,
)
NUMBER = re.compile(r"(?<![\w.+-])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w.])")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
BLOCK_NAMES = [
    "TrackDB",
    "TrackNodes",
    "TrackNode",
    "TrVectorNode",
    "TrJunctionNode",
    "TrEndNode",
    "TrVectorSections",
    "TrPins",
    "TrPin",
    "UiD",
    "TrItemRefs",
    "TrItemRef",
    "TrItemTable",
    "SpeedPostItem",
    "SignalItem",
    "PlatformItem",
    "SidingItem",
    "CrossoverItem",
    "TrSignalDirs",
    "TrackSections",
    "TrackSection",
    "SectionSize",
    "SectionCurve",
    "TrackShapes",
    "TrackShape",
    "SectionIdx",
    "NumPaths",
    "TrackPath",
    "TrackPDPs",
    "TrackPDP",
    "TrPathNodes",
    "TrPathNode",
    "Train",
    "TrainCfg",
    "Engine",
    "Wagon",
    "EngineData",
    "WagonData",
    "Flip",
    "Mass",
    "Coupling",
    "Spring",
    "r0",
    "Stiffness",
    "Break",
    "Friction",
    "ORTSMaxTractiveForceCurves",
    "Tr_RouteFile",
    "RouteID",
    "FileName",
    "SpeedLimit",
    "include",
    "comment",
    "skip",
    "_x",
    "#",
]
DIRECTIVES = [
    'include ( "../../../../../../../../../../etc/passwd" )',
    'include ( "/etc/passwd" )',
    "include ( {self} )",
    'include ( "{self}" )',
    "include ( )",
    "include",
    "include ( ../{self} )",
    "include ( nothere.inc )",
    "#",
    "#x",
    "_skip",
    "comment (",
    "comment ( a ( b ) )",
    "skip ( x )",
    '"unterminated',
    '" + ',
    '"a" +',
    "\\",
    '\\\\"',
    "( )",
    ")(",
    "((((",
    "))))",
    'x"',
    "SIMISA@F",
    "SIMISA@@@@@@@@@@JINX0T0b______",
    "[[samename]]",
    "include ( [[samename]] )",
    "Name ( " + "x" * 5000 + " )",
]
ODD_CHARS = [
    "\x00",
    "\x01",
    "\x1b",
    "\x7f",
    "\x85",
    "\xa0",
    "\u2028",
    "\u2029",
    "\ufeff",
    "\ufffe",
    "\ud800",
    "\udfff",
    "é",
    "€",
    "\U0001f600",
    "\r",
    "\t",
    "\x0b",
    "\x0c",
    "\u3000",
    "\u202e",
]


def _match_close(text: str, open_at: int) -> int | None:
    """The index of the ')' closing the '(' at ``open_at`` (quotes skipped), or None."""
    depth = 0
    i = open_at
    n = len(text)
    in_q = False
    while i < n:
        c = text[i]
        if in_q:
            if c == "\\":
                i += 1
            elif c == '"':
                in_q = False
        elif c == '"':
            in_q = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _random_block(rng: random.Random, text: str) -> tuple[int, int] | None:
    """(start, end) of a random ``Name ( ... )`` block of ``text``, name included."""
    opens = [m.start() for m in re.finditer(r"\(", text)]
    if not opens:
        return None
    for _ in range(4):
        at = rng.choice(opens)
        end = _match_close(text, at)
        if end is None:
            continue
        start = at
        while start > 0 and text[start - 1] in " \t":
            start -= 1
        while start > 0 and not text[start - 1].isspace() and text[start - 1] not in "()":
            start -= 1
        return start, end + 1
    return None


def _pos(rng: random.Random, text: str) -> int:
    return rng.randrange(len(text) + 1)


def t_numbers(rng, text, seed):
    spots = list(NUMBER.finditer(text))
    if not spots:
        return text
    out = text
    for m in sorted(rng.sample(spots, min(len(spots), rng.randint(1, 3))), key=lambda m: -m.start()):
        out = out[: m.start()] + rng.choice(NASTY_NUMBERS) + out[m.end() :]
    return out


def t_count(rng, text, seed):
    spots = list(COUNT_BLOCKS.finditer(text))
    if not spots:
        return t_numbers(rng, text, seed)
    m = rng.choice(spots)
    return text[: m.start(3)] + rng.choice(HUGE_COUNTS) + text[m.end(3) :]


def t_del_paren(rng, text, seed):
    spots = [m.start() for m in re.finditer(r"[()]", text)]
    if not spots:
        return text
    i = rng.choice(spots)
    return text[:i] + text[i + 1 :]


def t_add_paren(rng, text, seed):
    i = _pos(rng, text)
    return text[:i] + rng.choice(["(", ")", " ( ", " ) ", "((", "))"]) + text[i:]


def t_dup_block(rng, text, seed):
    b = _random_block(rng, text)
    if b is None:
        return text
    s, e = b
    return text[:e] + " " + text[s:e] * rng.randint(1, 3) + text[e:]


def t_del_block(rng, text, seed):
    b = _random_block(rng, text)
    return text if b is None else text[: b[0]] + text[b[1] :]


def t_swap_blocks(rng, text, seed):
    a, b = _random_block(rng, text), _random_block(rng, text)
    if a is None or b is None or a == b:
        return text
    if a > b:
        a, b = b, a
    if a[1] > b[0]:  # nested or overlapping: move the inner one out instead
        return text[: a[0]] + text[b[0] : b[1]] + text[a[0] :]
    return text[: a[0]] + text[b[0] : b[1]] + text[a[1] : b[0]] + text[a[0] : a[1]] + text[b[1] :]


def t_deep(rng, text, seed):
    k = rng.choice([100, 1000, 3000])
    i = _pos(rng, text)
    name = rng.choice(["A", "Wagon", "TrackNode", "include", "comment", "_c", "TrVectorNode", ""])
    mid = rng.choice(["", "1", 'x "s" 2'])
    close = " )" * k if rng.random() < 0.8 else " )" * (k // 2)  # sometimes unbalanced
    return text[:i] + f" {name} ( " * k + mid + close + text[i:]


def t_directive(rng, text, seed):
    d = rng.choice(DIRECTIVES).replace("{self}", Path(seed.rel).name)
    i = _pos(rng, text)
    return text[:i] + " " + d + " " + text[i:]


def t_odd_char(rng, text, seed):
    out = text
    for _ in range(rng.randint(1, 3)):
        i = _pos(rng, out)
        out = out[:i] + rng.choice(ODD_CHARS) + out[i:]
    return out


def t_truncate(rng, text, seed):
    return text[: _pos(rng, text)]


def t_word(rng, text, seed):
    spots = list(WORD.finditer(text))
    if not spots:
        return text
    m = rng.choice(spots)
    return text[: m.start()] + rng.choice(BLOCK_NAMES) + text[m.end() :]


def t_lines(rng, text, seed):
    lines = text.split("\n")
    if len(lines) < 3:
        return text
    i, j = rng.randrange(1, len(lines)), rng.randrange(1, len(lines))
    op = rng.randrange(3)
    if op == 0:
        lines.insert(j, lines[i])
    elif op == 1:
        del lines[i]
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def t_signature(rng, text, seed):
    nl = text.find("\n")
    rest = text[nl:] if nl >= 0 else ""
    sig = rng.choice(
        [
            "",
            "SIMISA@@@@@@@@@@JINX0T0t______",
            "SIMISA@@@@@@@@@@JINX0F0t______",
            "SIMISA@@@@@@@@@@JINX0T0b______",
            "SIMISA@F",
            "garbage",
            "SIMISA@@@@@@@@@@JINX0",
        ]
    )
    return sig + rest


def t_long(rng, text, seed):
    """A very long word, or a long run of white space, then a few levels of ( ... )."""
    i = _pos(rng, text)
    n = rng.choice([200, 2_000, 40_000])
    run = rng.choice(["x" * n, "é" * n, " " * n, "\t" * n, "A(" * (n // 2)])
    tail = rng.choice(["", " ( ( ( ( ( 1 ) ) ) ) )", " A ( B ( C ( D ( E ( 1 ) ) ) ) )"])
    return text[:i] + " " + run + tail + " " + text[i:]


# -- semantic mutations (issue 15): well-formed files that say impossible things ----------

BAD_LENGTHS = ["-1", "-100", "0", "1e6", "1e7", "1e9", "1e30", "1e300", "5e-324", "-0"]
BAD_RADII = ["0", "-500", "-1e-9", "1e-300", "1e300", "1e30", "5e-43"]
BAD_ANGLES = ["1e30", "-1e30", "360.0001", "720", "-400", "1e300", "3600"]
SECTION_SIZE = re.compile(r"(SectionSize\s*\(\s*\S+\s+)(\S+)", re.I)
SECTION_CURVE = re.compile(r"(SectionCurve\s*\(\s*)(\S+)(\s+)(\S+)", re.I)
LOCAL_SECTION = re.compile(r"(SectionCurve\s*\(\s*\d+\s*\)\s*\d+\s+)(\S+)(\s+)(\S+)", re.I)
PIN = re.compile(r"(TrPin\s*\(\s*)(\d+)(\s+)(\d+)", re.I)
ITEM_REF = re.compile(r"(TrItemRef\s*\(\s*)(\d+)", re.I)
VECTOR_ROW = re.compile(r"(TrVectorSections\s*\(\s*\d+\s+)((?:\S+\s+){15}\S+)", re.I)


def t_geometry(rng, text, seed):
    """Impossible track geometry: negative, zero or huge lengths; zero, negative or
    huge radii; angles of many turns (tsection.dat); positions far outside any tile
    and headings of many turns (.tdb vector sections)."""
    spots = [("size", m) for m in SECTION_SIZE.finditer(text)]
    spots += [("curve", m) for m in SECTION_CURVE.finditer(text)]
    spots += [("local", m) for m in LOCAL_SECTION.finditer(text)]
    spots += [("row", m) for m in VECTOR_ROW.finditer(text)]
    if not spots:
        return t_numbers(rng, text, seed)
    out = text
    for kind, m in sorted(rng.sample(spots, min(len(spots), rng.randint(1, 3))), key=lambda x: -x[1].start()):
        if kind == "size":
            out = out[: m.start(2)] + rng.choice(BAD_LENGTHS) + out[m.end(2) :]
        elif kind in ("curve", "local"):
            if rng.random() < 0.5:
                out = (
                    out[: m.start(2)]
                    + rng.choice(BAD_RADII if kind == "curve" else BAD_ANGLES)
                    + out[m.end(2) :]
                )
            else:
                out = (
                    out[: m.start(4)]
                    + rng.choice(BAD_ANGLES if kind == "curve" else BAD_RADII)
                    + out[m.end(4) :]
                )
        else:
            vals = m.group(2).split()
            col = rng.choice([8, 9, 10, 11, 12, 13, 14, 15])  # tiles, x y z, ax ay az
            vals[col] = rng.choice(["1e300", "-1e300", "1e9", "4294967295", "1e30", "62.83", "-1e6"])
            out = out[: m.start(2)] + " ".join(vals) + out[m.end(2) :]
    return out


def t_links(rng, text, seed):
    """Links that point nowhere: TrPin node numbers and TrItemRef indices out of range,
    pointing at the node itself, or at node 0."""
    spots = [("pin", m) for m in PIN.finditer(text)] + [("ref", m) for m in ITEM_REF.finditer(text)]
    if not spots:
        return t_count(rng, text, seed)
    out = text
    for kind, m in sorted(rng.sample(spots, min(len(spots), rng.randint(1, 4))), key=lambda x: -x[1].start()):
        value = rng.choice(["0", "1", "99999", "4294967295", "2147483648", "65536", str(rng.randint(0, 200))])
        if kind == "pin" and rng.random() < 0.3:
            out = out[: m.start(4)] + rng.choice(["2", "7", "4294967295"]) + out[m.end(4) :]  # direction
        else:
            out = out[: m.start(2)] + value + out[m.end(2) :]
    return out


HOSTILE_SETTINGS = {
    "step": [
        "0",
        "-0.1",
        "nan",
        "inf",
        "1e-9",
        "1e-4",
        "1.0",
        "1.0001",
        "10",
        "1e308",
        '"0s"',
        '"1e9s"',
        '"nan s"',
        "true",
        "[]",
    ],
    "duration": ["0", "-1", "inf", "nan", "1e6", "1e7", "1e12", "1e308", '"1000000h"', '"-5min"'],
    "collision_check_interval": ["0", "1e-9", "nan", "1e9"],
    "beyond_path": ["1e12", "-1", "nan"],
    "distance": ["1e12", "1e308", "-5"],
}


def t_settings(rng, text, seed):
    """Hostile settings in a scenario or sweep spec: steps of 0, NaN or a year,
    durations of centuries, grids of thousands of values."""
    if not seed.rel.endswith(".toml"):
        return t_numbers(rng, text, seed)
    key = rng.choice(sorted(HOSTILE_SETTINGS))
    value = rng.choice(HOSTILE_SETTINGS[key])
    m = re.search(rf"^(\s*{key}\s*=\s*)(.*)$", text, re.M)
    if m:
        return text[: m.start(2)] + value + text[m.end(2) :]
    if rng.random() < 0.5 or "[grid]" not in text:
        # a top-level key goes before the first table
        first = re.search(r"^\[", text, re.M)
        at = first.start() if first else len(text)
        return text[:at] + f"{key} = {value}\n" + text[at:]
    n = rng.choice([50, 200, 5000])
    grid_key = rng.choice(["beyond_path", "start_speed", "deceleration", "start_offset"])
    values = ", ".join(str(i) for i in range(n))
    return re.sub(r"^\[grid\]\s*$", f"[grid]\n{grid_key} = [{values}]", text, count=1, flags=re.M)


TEXT_OPS = [
    (t_numbers, 5),
    (t_count, 4),
    (t_del_paren, 2),
    (t_add_paren, 2),
    (t_dup_block, 2),
    (t_del_block, 2),
    (t_swap_blocks, 2),
    (t_deep, 1),
    (t_directive, 2),
    (t_odd_char, 2),
    (t_truncate, 1),
    (t_word, 2),
    (t_lines, 2),
    (t_signature, 1),
    (t_long, 1),
    (t_geometry, 3),
    (t_links, 3),
    (t_settings, 2),
]


def encode(rng: random.Random, text: str, seed: Seed) -> tuple[bytes, str]:
    """Bytes of ``text``: mostly in the seed's encoding, sometimes another, mixed or
    compressed. Lone surrogates become invalid UTF-8/UTF-16 (surrogatepass)."""
    r = rng.random()

    def as_(enc: str, t: str) -> bytes:
        if enc == "utf-16":
            return b"\xff\xfe" + t.encode("utf-16-le", "surrogatepass")
        if enc == "utf-16-nobom":
            return t.encode("utf-16-le", "surrogatepass")
        if enc == "utf-8":
            return t.encode("utf-8", "surrogatepass")
        if enc == "utf-8-bom":
            return b"\xef\xbb\xbf" + t.encode("utf-8", "surrogatepass")
        return t.encode("cp1252", "replace")

    if seed.reader in TOML_READERS:
        if r < 0.85:
            return as_("utf-8", text), "utf-8"
        enc = rng.choice(["utf-16", "cp1252", "utf-8-bom"])
        return as_(enc, text), enc
    if r < 0.72:
        return as_(seed.encoding, text), seed.encoding
    if r < 0.82:
        enc = rng.choice(["utf-16", "utf-16-nobom", "utf-8", "utf-8-bom", "cp1252"])
        return as_(enc, text), enc
    if r < 0.9:  # mixed encodings: the two halves in different encodings
        cut = _pos(rng, text)
        a, b = rng.sample(["utf-16", "utf-16-nobom", "utf-8", "cp1252"], 2)
        return as_(a, text[:cut]) + as_(b, text[cut:]), f"mixed {a}+{b}"
    # A SIMISA@F file: 16-byte header, then a zlib stream of sub-header + body.
    nl = text.find("\n")
    body = text[nl + 1 :] if nl >= 0 else text
    enc = rng.choice(["utf-16", "utf-8"])
    sub = "JINX0T0t______\r\n"
    inflated = as_(enc, sub + body)
    stream = zlib.compress(inflated, rng.choice([1, 9]))
    kind = rng.randrange(4)
    if kind == 1:
        stream = stream[: rng.randrange(len(stream) + 1)]
    elif kind == 2:
        stream = stream + bytes(rng.randrange(256) for _ in range(8))  # trailing garbage
    size = len(inflated) if kind != 3 else rng.choice([0, 1, 2**32 - 1])
    return b"SIMISA@F" + struct.pack("<I", size) + b"@@@@" + stream, f"compressed {enc}"


def b_flip(rng, data):
    if not data:
        return data
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def b_delete(rng, data):
    if not data:
        return data
    i = rng.randrange(len(data))
    return data[:i] + data[i + rng.randint(1, 64) :]


def b_insert(rng, data):
    i = rng.randrange(len(data) + 1)
    ins = rng.choice(
        [
            bytes(rng.randrange(256) for _ in range(rng.randint(1, 16))),
            b"\x00",
            b"\xff\xfe",
            b"\xef\xbb\xbf",
            b"(",
            b")",
            b'"',
            b"\xd8\x00",
            b"\x00\xd8",
            b"\x80\x81\x82",
        ]
    )
    return data[:i] + ins + data[i:]


def b_truncate(rng, data):
    return data[: rng.randrange(len(data) + 1)]


def b_duplicate(rng, data):
    if not data:
        return data
    i = rng.randrange(len(data))
    j = min(len(data), i + rng.randint(1, 256))
    return data[:j] + data[i:j] + data[j:]


def b_swap(rng, data):
    if len(data) < 4:
        return data
    a, b = sorted(rng.sample(range(len(data)), 2))
    n = min(rng.randint(1, 64), b - a)
    return data[:a] + data[b : b + n] + data[a + n : b] + data[a : a + n] + data[b + n :]


def b_random(rng, data):
    return bytes(rng.randrange(256) for _ in range(rng.randint(0, 600)))


BYTE_OPS = [
    (b_flip, 4),
    (b_delete, 2),
    (b_insert, 2),
    (b_truncate, 2),
    (b_duplicate, 1),
    (b_swap, 1),
    (b_random, 0.3),
]


def _pick(rng: random.Random, ops):
    funcs, weights = zip(*ops)
    return rng.choices(funcs, weights)[0]


def window(rng: random.Random, text: str) -> tuple[str, str]:
    """A window of a big file: its head closed with the ')' it needs, or raw lines from
    the middle after a signature line."""
    lines = text.split("\n")
    k = rng.randint(20, 400)
    if rng.random() < 0.6:
        head = "\n".join(lines[:k])
        depth = 0
        for m in re.finditer(r'"(?:[^"\\]|\\.)*"|[()]', head):
            depth += {"(": 1, ")": -1}.get(m.group(), 0)
        return head + "\n" + " )" * max(depth, 0) + "\n", f"head {k} lines"
    a = rng.randrange(1, max(2, len(lines) - k))
    return lines[0] + "\n" + "\n".join(lines[a : a + k]) + "\n", f"lines {a}..{a + k}"


# ---------------------------------------------------------------------------------------
# running a case
# ---------------------------------------------------------------------------------------


class CaseTimeout(BaseException):
    """Raised by the timer in a read that runs past HANG_S (a BaseException, so that no
    ``except Exception`` in the code under test can swallow it)."""


@contextlib.contextmanager
def hang_guard(seconds: float):
    """Stop the block after it used ``seconds`` of CPU time (ITIMER_PROF: user and system
    time of this process, so a loaded machine does not trigger it; only in the main
    thread on POSIX)."""
    usable = hasattr(signal, "setitimer") and threading_main()
    if not usable:
        yield
        return

    def fire(signum, frame):
        raise CaseTimeout(f"still running after {seconds:g} CPU seconds")

    old = signal.signal(signal.SIGPROF, fire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


def threading_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


@dataclass
class Run:
    """One read of one input in one mode."""

    step: str  # "strict", "lenient", or a follow-up ("walk", "roundtrip", ...)
    outcome: str  # "ok", an error class name, or "CRASH <type>", "SLOW", "HANG"
    seconds: float
    detail: str = ""
    failed: bool = False
    error: BaseException | None = field(default=None, repr=False)


@dataclass
class Case:
    index: int
    seed: str
    reader: str
    recipe: list[str]
    path: Path
    data: bytes
    runs: list[Run] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(r.failed for r in self.runs)

    @property
    def seconds(self) -> float:
        return max((r.seconds for r in self.runs), default=0.0)

    def describe(self) -> str:
        bad = [r for r in self.runs if r.failed]
        head = (
            f"case {self.index}: {self.reader} reader on {self.seed} mutated by "
            f"[{', '.join(self.recipe)}] ({len(self.data)} bytes, written to {self.path})"
        )
        lines = [head] + [f"  {r.step}: {r.outcome} after {r.seconds * 1000:.0f} ms: {r.detail}" for r in bad]
        lines.append(f"  first bytes: {self.data[:120]!r}")
        return "\n".join(lines)


def timed(step: str, fn, *, expect_ok: bool = False) -> tuple[Run, object]:
    """Run ``fn()`` under the timers; classify what happens."""
    t0 = time.process_time()
    value = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            warnings.filterwarnings("ignore", category=_stand_in_warning())
            with hang_guard(HANG_S):
                value = fn()
        run = Run(step, "ok", 0.0)
    except CaseTimeout as exc:
        run = Run(step, "HANG", 0.0, str(exc), True)
    except TdbToolsError as exc:
        run = Run(step, type(exc).__name__, 0.0, str(exc).splitlines()[0][:300], expect_ok, exc)
    except RecursionError as exc:
        run = Run(step, "CRASH RecursionError", 0.0, _where(exc), True)
    except (Exception, Warning) as exc:  # noqa: BLE001 - exactly what the fuzzer looks for
        if _known(step, exc):
            run = Run(step, f"KNOWN {type(exc).__name__}", 0.0, f"{exc!s:.200} {_where(exc)}", False)
        else:
            run = Run(step, f"CRASH {type(exc).__name__}", 0.0, f"{exc!s:.200} {_where(exc)}", True)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit, MemoryError, ...
        run = Run(step, f"CRASH {type(exc).__name__}", 0.0, f"{exc!s:.200} {_where(exc)}", True)
    run.seconds = time.process_time() - t0
    if run.seconds > SLOW_S and not run.failed:
        run.failed = True
        run.detail = f"took {run.seconds:.2f} CPU s (limit {SLOW_S} s); {run.outcome} {run.detail}"
        run.outcome = "SLOW"
    return run, value


#: Failures of known bugs, reported as "KNOWN ..." instead of failing the case:
#: (step, exception type, file, function). Empty: every bug the fuzzer found is fixed;
#: tests/test_fuzz.py checks that it stays empty.
KNOWN_BUGS: list[tuple[str, str, str, str]] = []


def _known(step: str, exc: BaseException) -> bool:
    where = _where(exc)
    return any(
        step == s and type(exc).__name__ == t and f in where and fn in where for s, t, f, fn in KNOWN_BUGS
    )


def _where(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in tb if "tdbtools" in f.filename and "benchmarks" not in f.filename] or tb[-1:]
    if not ours:
        return ""
    f = ours[-1]
    return f"at {f.filename.split('tdbtools/')[-1]}:{f.lineno} in {f.name}"


def _stand_in_warning():
    from tdbtools.formats.consist import StandInWarning

    return StandInWarning


class Fuzzer:
    """Makes and runs cases. ``workdir`` holds a scratch copy of the sample install
    (so that includes resolve and stay inside it) and of the DK24 layout."""

    def __init__(
        self,
        workdir: Path,
        *,
        use_dk24: bool = True,
        dk24_files: int | None = None,
        follow_up: bool = True,
        installs: tuple[str, ...] = ("sample", "dk24"),
    ) -> None:
        self.workdir = Path(workdir)
        self.seeds = [
            s for s in load_seeds(use_dk24 and "dk24" in installs, dk24_files) if s.install in installs
        ]
        if not self.seeds:
            raise ValueError(f"no seed files for {installs}")
        self.weights = [s.weight for s in self.seeds]
        self.follow_up = follow_up
        self.roots = {"sample": self.workdir / "sample", "dk24": self.workdir / "dk24"}
        if not self.roots["sample"].exists():
            shutil.copytree(SAMPLE, self.roots["sample"])
        for sub in ("ROUTES", "GLOBAL", "TRAINS"):
            (self.roots["dk24"] / sub).mkdir(parents=True, exist_ok=True)
        self._sample_route = None
        self._sample_pats = None

    # -- making an input -----------------------------------------------------------
    def make(self, index: int, seed_value: int) -> Case:
        rng = random.Random(f"{seed_value}:{index}")
        seed = rng.choices(self.seeds, self.weights)[0]
        reader = seed.reader
        recipe: list[str] = []
        if rng.random() < 0.05:  # the wrong reader for the file
            reader = rng.choice(sorted(READERS))
            recipe.append(f"read as {reader}")
        # The mutated file goes beside its seed in the scratch install (so that relative
        # includes resolve), under its own name (an include of that name is a cycle).
        rel = Path(seed.rel)
        path = self.roots[seed.install] / rel.parent / f"fuzz{index}_{rel.name}"
        me = dataclasses.replace(seed, rel=(rel.parent / path.name).as_posix())
        text = seed.text
        if seed.window:
            text, how = window(rng, text)
            recipe.append(f"window {how}")
        for _ in range(rng.choice([0, 1, 1, 1, 2, 2, 3])):
            op = _pick(rng, TEXT_OPS)
            text = op(rng, text, me)
            recipe.append(op.__name__[2:])
        data, enc = encode(rng, text, seed)
        if enc != seed.encoding:
            recipe.append(f"encoded {enc}")
        changed = any(not r.startswith("read as") for r in recipe)
        for _ in range(rng.choice([0, 0, 0, 1, 2]) if changed else rng.choice([1, 1, 2])):
            op = _pick(rng, BYTE_OPS)
            data = op(rng, data)
            recipe.append(op.__name__[2:])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return Case(index, f"{seed.install}:{seed.rel}", reader, recipe, path, data)

    # -- running it ------------------------------------------------------------------
    def run(self, case: Case, *, keep: bool = False) -> Case:
        reader = READERS[case.reader]
        strict, strict_value = timed("strict", lambda: reader(case.path, Diagnostics(strict=True)))
        case.runs.append(strict)
        diags = Diagnostics(strict=False)
        lenient, lenient_value = timed("lenient", lambda: reader(case.path, diags))
        case.runs.append(lenient)
        for run in (strict, lenient):
            err = run.error
            if err is not None and not (
                isinstance(err, SourceError)
                and err.location is not None
                and err.line >= 1
                and err.column >= 1
                and err.message
            ):
                run.failed = True
                run.detail = f"a file error without a place (path, line, column): {run.detail}"
        if case.reader not in TOML_READERS and not lenient.failed:
            fatal = lenient.outcome in ("ok",) or lenient.outcome in {c.__name__ for c in LENIENT_FATAL}
            if not fatal:
                lenient.failed = True
                lenient.detail = f"lenient mode raised {lenient.outcome}: {lenient.detail}"
            elif strict.outcome == "ok" and lenient.outcome != "ok":
                lenient.failed = True
                lenient.detail = f"strict mode read the file, lenient raised: {lenient.detail}"
        if strict.outcome == "ok" and case.reader not in TOML_READERS:
            run, _ = timed("roundtrip", lambda: self._roundtrip(case, strict_value))
            case.runs.append(run)
            if run.outcome != "ok":
                run.failed = True
        if self.follow_up and lenient.outcome == "ok":
            for step, fn in self._follow_ups(case, lenient_value):
                run, _ = timed(step, fn)
                case.runs.append(run)
        if not keep and not case.failed:
            with contextlib.suppress(OSError):
                case.path.unlink()
        return case

    def _roundtrip(self, case: Case, model) -> None:
        """The file's tree written by format_stf parses back equal; a typed model read
        back from the written text is equal too."""
        doc = parse_file(case.path)
        sig = doc.signature
        if sig.startswith("SIMISA@F") or (
            sig.startswith("SIMISA@@") and sig[16:20] == "JINX" and sig[23:24] == "b"
        ):
            # A signature line that says "compressed" or "binary": written as it is, the
            # text would not be read as text (any other signature is kept).
            sig = "SIMISA@@@@@@@@@@JINX0x0t______"
        text = format_stf(doc, signature=sig)
        again = parse_text(text, str(case.path))
        if again != doc:
            raise AssertionError("format_stf: the written tree does not parse back equal")
        if case.reader == "stf":
            return
        # Same file name (stock takes its default name from it), in a sub-folder.
        out = case.path.parent / f"{case.path.stem}_roundtrip" / case.path.name
        out.parent.mkdir(exist_ok=True)
        write_text_atomic(out, text)  # as tdbtools writes STF: UTF-16 with a BOM, CRLF
        try:
            back = READERS[case.reader](out, Diagnostics(strict=True))
        finally:
            shutil.rmtree(out.parent, ignore_errors=True)
        if not _same_model(model, back):
            raise AssertionError(f"typed model differs after format_stf: {model!r:.200} != {back!r:.200}")

    def _follow_ups(self, case: Case, value):
        """Use the model a lenient read gave: links that point nowhere must be reported,
        never followed into an IndexError."""
        from tdbtools.formats.consist import Consist, resolve_stock
        from tdbtools.formats.pat import PathFile
        from tdbtools.formats.tdb import TrackDB

        if isinstance(value, PathFile):

            def chains(pf=value):
                pf.main_chain()
                pf.siding_chains()
                for i in range(len(pf.nodes)):
                    pf.pdp(i)

            yield "chains", chains
            if case.seed.startswith("sample:"):
                from tdbtools.track import resolve_path

                yield "resolve_path", lambda pf=value: resolve_path(self.sample_route(), pf).to_json()
        elif isinstance(value, Consist):
            root = self.roots["sample"] if case.seed.startswith("sample:") else self.roots["dk24"]
            yield "resolve_stock", lambda c=value: resolve_stock(c, root, stand_in=True, strict=False)
        elif (
            isinstance(value, TrackDB) and case.seed.startswith("sample:") and "rdb" not in case.seed.lower()
        ):
            yield "walk_audit", lambda db=value: self._walk_and_audit(db)
        elif type(value).__name__ == "TSection" and case.seed.startswith("sample:"):
            yield "spatial", lambda ts=value: self._spatial(ts)

    def _spatial(self, ts) -> None:
        """The sample route with fuzzed section tables: the spatial index is built (bounded
        memory whatever lengths the file claims) and every node is located and walked."""
        from tdbtools.errors import Diagnostics as D
        from tdbtools.formats.route import _section_lengths
        from tdbtools.track import Traveller
        from tdbtools.track.geometry import point_at
        from tdbtools.track.spatial import SectionGrid, track_geometry

        base = self.sample_route()
        lengths = _section_lengths(base.tdb, ts, D(strict=False))
        route = dataclasses.replace(base, tsection=ts, section_length=lengths)
        geom = track_geometry(route)
        grid = SectionGrid.build(geom)
        p = point_at(geom, list(range(len(geom.length))), 0.0)
        grid.pairs(p.tile_x * 2048.0 + p.x, p.tile_z * 2048.0 + p.z)
        for i in range(1, len(route.tdb.nodes)):
            try:
                t = Traveller(route, i, 0.0, 0)
            except TdbToolsError:
                continue
            t.move(5000.0)
            t.pose()

    def sample_route(self):
        if self._sample_route is None:
            from tdbtools.formats import load_route

            self._sample_route = load_route(SAMPLE / "ROUTES" / "SAMPLE", cache=False)
        return self._sample_route

    def _walk_and_audit(self, db) -> None:
        """The sample route with a fuzzed track database: travellers walk every node both
        ways, the audit runs, the sample paths resolve (or say why not)."""
        from tdbtools.errors import Diagnostics as D
        from tdbtools.formats.route import _section_lengths
        from tdbtools.track import Traveller, audit_route, resolve_path

        base = self.sample_route()
        lengths = _section_lengths(db, base.tsection, D(strict=False))
        route = dataclasses.replace(base, tdb=db, section_length=lengths)
        for i in range(1, len(db.nodes)):
            for d in (0, 1):
                try:
                    t = Traveller(route, i, 0.0, d, align_trailing=bool(d))
                except TdbToolsError:
                    continue
                t.move(3000.0)
                t.pose()
                t.move_collect(-3000.0)
                Traveller(route, i, 0.0, d).distance_to(t, 5000.0)
        audit_route(route).to_json()
        if self._sample_pats is None:
            self._sample_pats = [
                read_pat(p) for p in sorted((SAMPLE / "ROUTES" / "SAMPLE" / "PATHS").glob("*.pat"))
            ]
        for pf in self._sample_pats:
            try:
                resolve_path(route, pf).to_json()
            except TdbToolsError:
                pass


def _same_model(a, b) -> bool:
    """Equal models, ignoring the file path they were read from."""
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b) and type(a) is type(b):
        fa = {f.name for f in dataclasses.fields(a)}
        if "path" in fa:
            a = dataclasses.replace(a, path="") if not type(a).__name__ == "TrackDB" else a
            b = dataclasses.replace(b, path="") if not type(b).__name__ == "TrackDB" else b
        if type(a).__name__ == "TSection":
            a = dataclasses.replace(a, files=())
            b = dataclasses.replace(b, files=())
    return _eq_nan(a, b)


def _eq_nan(a, b) -> bool:
    """``a == b`` where NaN equals NaN (a NaN field read back is still NaN)."""
    if a == b:
        return True
    if dataclasses.is_dataclass(a) and type(a) is type(b):
        return all(_eq_nan(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b):
        return all(_eq_nan(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return math.isnan(a) and math.isnan(b)
    return False


# ---------------------------------------------------------------------------------------
# the command line
# ---------------------------------------------------------------------------------------


def run_many(fuzzer: Fuzzer, cases: int, seed: int, *, start: int = 0, on_case=None) -> list[Case]:
    done = []
    for i in range(start, start + cases):
        if i % 50 == 0:
            gc.collect()  # here, not inside a timed read (a full collection can take 100+ ms)
        case = fuzzer.run(fuzzer.make(i, seed))
        done.append(case)
        if on_case is not None:
            on_case(case)
    return done


def summarise(done: list[Case], elapsed: float) -> list[str]:
    by_step: dict[str, Counter] = {}
    for c in done:
        for r in c.runs:
            by_step.setdefault(r.step, Counter())[r.outcome] += 1
    readers = Counter(c.reader for c in done)
    lines = [
        f"{len(done)} cases in {elapsed:.1f} s ({len(done) / max(elapsed, 1e-9):.0f} cases/s); "
        f"readers: " + ", ".join(f"{k} {v}" for k, v in sorted(readers.items()))
    ]
    for step in (
        "strict",
        "lenient",
        "roundtrip",
        *sorted(set(by_step) - {"strict", "lenient", "roundtrip"}),
    ):
        if step in by_step:
            cnt = by_step[step]
            lines.append(f"  {step:14s} " + ", ".join(f"{k} {v}" for k, v in cnt.most_common()))
    failed = [c for c in done if c.failed]
    slow = max(done, key=lambda c: c.seconds) if done else None
    if slow is not None:
        step = max(slow.runs, key=lambda r: r.seconds)
        lines.append(
            f"slowest case: {slow.index} ({slow.reader} on {slow.seed}, [{', '.join(slow.recipe)}], "
            f"{step.step}): {step.seconds * 1000:.1f} ms"
        )
    lines.append(f"failures: {len(failed)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=2000, help="number of cases (default 2000)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("--no-dk24", action="store_true", help="only the sample route's files")
    ap.add_argument("--save", type=Path, help="copy the inputs of failing cases into this folder")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every case")
    args = ap.parse_args(argv)
    if not args.no_dk24 and not dk24_available():
        print(f"DK24 not found at {DK24}: only the sample route's files are used")
    with tempfile.TemporaryDirectory(prefix="tdbtools-fuzz-") as tmp:
        fuzzer = Fuzzer(Path(tmp), use_dk24=not args.no_dk24)
        print(f"{len(fuzzer.seeds)} seed files; {args.cases} cases, seed {args.seed}")
        t0 = time.perf_counter()

        def report(case: Case) -> None:
            if args.verbose:
                print(
                    f"{case.index:6d} {case.reader:9s} {case.seconds * 1000:8.1f} ms "
                    f"{' / '.join(r.outcome for r in case.runs)}  {case.seed} [{', '.join(case.recipe)}]"
                )
            if case.failed:
                print(case.describe())
                if args.save:
                    args.save.mkdir(parents=True, exist_ok=True)
                    shutil.copy(case.path, args.save / f"case{case.index}_{case.path.name}")
            elif (case.index + 1) % 500 == 0 and not args.verbose:
                print(f"  ... {case.index + 1} cases", flush=True)

        done = run_many(fuzzer, args.cases, args.seed, on_case=report)
        elapsed = time.perf_counter() - t0
    print("\n".join(summarise(done, elapsed)))
    return 1 if any(c.failed for c in done) else 0


if __name__ == "__main__":
    sys.exit(main())
