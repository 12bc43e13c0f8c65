"""``tsection.dat``: track sections and track shapes (docs/formats.md §5).

The global file (``GLOBAL/tsection.dat``, or a route's ``OPENRAILS/tsection.dat``
override that usually ``include``s it) lists ``TrackSection ( id SectionSize ( w l )
[SectionCurve ( R angleDeg )] )`` and ``TrackShape`` blocks. A route-local
``tsection.dat`` (dynamic track) lists ``TrackSection ( SectionCurve ( flag ) id a b )``
with the curve angle ``a`` in *radians*, and ``SectionIdx ( TrackPath ( ... ) )``.

Tables are columnar (numpy) so that a cached route loads in milliseconds;
:class:`TrackSection` and :class:`TrackShape` records are made on demand.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import Diagnostics, FormatError, truncate_value
from ..stf import parse_file
from ..stf.parser import gc_paused
from ..stf.tree import COMMENT_WORDS, Block, Document, split_items
from ._read import Reader, to_float, to_uint

#: Open Rails ignores a route-local tsection.dat without exactly this header.
ROUTE_LOCAL_SIGNATURE = "SIMISA@@@@@@@@@@JINX0T0t______"


@dataclass(frozen=True, slots=True)
class TrackSection:
    """One track section. ``angle`` is in degrees, positive for a right-hand curve."""

    index: int
    width: float
    length: float
    radius: float | None = None
    angle: float | None = None

    @property
    def is_curved(self) -> bool:
        return self.radius is not None

    @property
    def arc_length(self) -> float:
        """Metres along the track: the length of a straight, R·|angle| of a curve."""
        if self.radius is None:
            return self.length
        return self.radius * abs(math.radians(self.angle or 0.0))


@dataclass(frozen=True, slots=True)
class ShapePath:
    """A path through a track shape: its start offset in the shape, and its sections."""

    x: float
    y: float
    z: float
    angle: float
    sections: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TrackShape:
    index: int
    filename: str
    num_paths: int
    paths: tuple[ShapePath, ...]
    main_route: int = 0
    clearance_dist: float | None = None
    tunnel: bool = False
    road: bool = False
    rack: bool = False


_TUNNEL, _ROAD, _RACK = 1, 2, 4
#: Ids and indices are unsigned 32-bit (as the slow path's to_uint checks); the fast
#: paths must not let a larger int through to the int64 numpy tables.
_UINT_MAX = 0xFFFFFFFF


@dataclass(frozen=True, slots=True, eq=False)
class SectionTable:
    """All track sections, sorted by id, as numpy columns (NaN radius/angle = straight)."""

    ids: np.ndarray
    width: np.ndarray
    length: np.ndarray
    radius: np.ndarray
    angle: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def curved(self) -> np.ndarray:
        return ~np.isnan(self.radius)

    @property
    def arc_length(self) -> np.ndarray:
        """Metres along the track for every section."""
        return np.where(self.curved, self.radius * np.abs(np.radians(self.angle)), self.length)

    def rows(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Row of each id in this table, and a mask of the ids that exist."""
        ids = np.asarray(ids, dtype=np.int64)
        if len(self.ids) == 0:
            return np.zeros(len(ids), dtype=np.int64), np.zeros(len(ids), dtype=bool)
        pos = np.searchsorted(self.ids, ids)
        pos = np.minimum(pos, len(self.ids) - 1)
        return pos, self.ids[pos] == ids

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SectionTable):
            return NotImplemented
        return all(
            np.array_equal(getattr(self, f), getattr(other, f), equal_nan=True)
            for f in ("ids", "width", "length", "radius", "angle")
        )


@dataclass(frozen=True, slots=True, eq=False)
class ShapeTable:
    """All track shapes, sorted by id, as numpy columns plus flattened paths."""

    ids: np.ndarray
    filenames: tuple[str, ...]
    num_paths: np.ndarray
    main_route: np.ndarray
    clearance: np.ndarray  # NaN where not given
    flags: np.ndarray  # tunnel 1, road 2, rack 4
    path_start: np.ndarray  # shape i has paths path_start[i]:path_start[i+1]
    path_offset: np.ndarray  # (P, 4): x, y, z, angle
    path_sec_start: np.ndarray  # path j has sections path_sections[a:b]
    path_sections: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ShapeTable):
            return NotImplemented
        return self.filenames == other.filenames and all(
            np.array_equal(getattr(self, f), getattr(other, f), equal_nan=True)
            for f in (
                "ids",
                "num_paths",
                "main_route",
                "clearance",
                "flags",
                "path_start",
                "path_offset",
                "path_sec_start",
                "path_sections",
            )
        )


@dataclass(frozen=True, slots=True, eq=False)
class TSection:
    """The merged section and shape tables a route uses, and the dynamic-track paths."""

    sections: SectionTable
    shapes: ShapeTable
    track_paths: dict[int, tuple[int, ...]] = field(default_factory=dict)
    files: tuple[str, ...] = ()

    def __repr__(self) -> str:
        from .._display import short_repr

        return short_repr(
            "TSection",
            [("sections", len(self.sections.ids)), ("shapes", len(self.shapes.ids)), ("files", self.files)],
        )

    def section(self, index: int) -> TrackSection | None:
        s = self.sections
        pos = int(np.searchsorted(s.ids, index))
        if pos >= len(s.ids) or s.ids[pos] != index:
            return None
        r = float(s.radius[pos])
        if math.isnan(r):
            return TrackSection(index, float(s.width[pos]), float(s.length[pos]))
        return TrackSection(index, float(s.width[pos]), float(s.length[pos]), r, float(s.angle[pos]))

    def shape(self, index: int) -> TrackShape | None:
        t = self.shapes
        i = int(np.searchsorted(t.ids, index))
        if i >= len(t.ids) or t.ids[i] != index:
            return None
        paths = []
        for j in range(int(t.path_start[i]), int(t.path_start[i + 1])):
            a, b = int(t.path_sec_start[j]), int(t.path_sec_start[j + 1])
            x, y, z, ang = (float(v) for v in t.path_offset[j])
            paths.append(ShapePath(x, y, z, ang, tuple(int(v) for v in t.path_sections[a:b])))
        c = float(t.clearance[i])
        f = int(t.flags[i])
        return TrackShape(
            index,
            t.filenames[i],
            int(t.num_paths[i]),
            tuple(paths),
            int(t.main_route[i]),
            None if math.isnan(c) else c,
            bool(f & _TUNNEL),
            bool(f & _ROAD),
            bool(f & _RACK),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TSection):
            return NotImplemented
        return (
            self.sections == other.sections
            and self.shapes == other.shapes
            and self.track_paths == other.track_paths
        )


#: A curve whose radius is at most this is a point (real routes hold such sections,
#: e.g. DK24's route-local ids with radius 5e-43 and angles up to 30 rad): its angle
#: is not checked. See docs/security.md §2.
DEGENERATE_RADIUS = 1e-6


def length_ok(length: float) -> bool:
    """A straight's length is finite and not negative (0 occurs in real routes)."""
    return 0.0 <= length < math.inf


def geometry_problem(width: float, length: float, radius: float, angle: float) -> str | None:
    """Why a section row (NaN radius and angle: a straight) is impossible, or None."""
    if not math.isfinite(width) or not math.isfinite(length):
        return f"width {width!r} / length {length!r} must be finite"
    if math.isnan(radius) and math.isnan(angle):
        if length < 0:
            return f"length {length:g} m is negative"
        return None
    if not (math.isfinite(radius) and math.isfinite(angle)):
        return f"curve radius {radius!r} / angle {angle!r} must be finite"
    if radius <= 0:
        return f"curve radius {radius:g} m is not positive"
    if radius > DEGENERATE_RADIUS and abs(angle) > 360.0:
        return f"curve angle {angle:g}° is beyond a full turn"
    return None


# -- the big tables in bulk ----------------------------------------------------------
#
# A tsection.dat is nearly all TrackSections and TrackShapes. A bulk parse (parse_file's
# bulk="tsection", grammars/tsection_bulk.lark) keeps their content as raw text, and
# table_entries finds the entries in it with one regular expression: each entry that
# holds only leaf blocks becomes the same lazily split Block the tree would hold
# (stf.tree.split_items), without the tree's item-by-item splitting; any other run of
# the text is split by the tree's own splitter. The readers below then see the same
# blocks either way, so the model, findings and located errors are the same (tests
# check: tests/test_tsection_bulk.py).

_ENTRY = re.compile(
    # Possessive quantifiers (Python >= 3.11) match the same text (a run of [^()] can
    # give back nothing the next "(" or ")" could use) without keeping backtracking
    # state: the table's scan takes ~30 % less time.
    r"[\x00-\x20]*+([^\x00-\x20()\"]++)[\x00-\x20]*+\(((?:[^()]*+\([^()]*+\))*+[^()]*+)\)"
    if sys.version_info >= (3, 11)
    else r"[\x00-\x20]*([^\x00-\x20()\"]+)[\x00-\x20]*\(((?:[^()]*\([^()]*\))*[^()]*)\)"
)
_SPACE = re.compile(r"[\x00-\x20]*")
# The usual global TrackSection: id SectionSize ( w l ) [SectionCurve ( r a )].
_SECTION_TEXT = re.compile(
    r"[\x00-\x20]*([0-9]{1,9})[\x00-\x20]+SectionSize[\x00-\x20]*\([\x00-\x20]*([^\x00-\x20()\"]+)"
    r"[\x00-\x20]+([^\x00-\x20()\"]+)[\x00-\x20]*\)[\x00-\x20]*(?:SectionCurve[\x00-\x20]*\([\x00-\x20]*"
    r"([^\x00-\x20()\"]+)[\x00-\x20]+([^\x00-\x20()\"]+)[\x00-\x20]*\)[\x00-\x20]*)?"
)
_WORD = re.compile(r"[^\x00-\x20()\"]*")
_OPEN = re.compile(r"[\x00-\x20]*\(")
_PAREN = re.compile(r"[()]")


def table_entries(table: Block) -> Iterator[tuple[str, Any, Any]]:
    """The child blocks of ``table`` in order, found in its raw text if it is held so:
    ``(key, inner text, (name, name offset, inner offset))`` for a block holding only
    words and leaf blocks (the reader makes it, as split_items would, only if it needs
    it), ``(key, None, block)`` for others."""
    raw = table.raw()
    src = table.source
    if raw is None or (src is not None and src.exact_split):
        yield from ((b.key, None, b) for b in table.items if b.__class__ is Block)
        return
    text, at = raw
    entry = _ENTRY.match
    keys: dict[str, str] = {}
    n = len(text)
    pos = 0
    while pos < n:
        m = entry(text, pos)
        if m is not None:
            name, inner = m.group(1, 2)
            key = keys.get(name)
            if key is None:
                key = name.lower()
                if name[:1] in "#_" or key in COMMENT_WORDS:
                    key = "#"  # a comment block: the tree drops it
                elif key == "include":
                    key = ""
                if len(keys) < 1000:
                    keys[name] = key
            if key == "#":
                pos = m.end()
                continue
            if key and ("(" not in inner or ("nclude" not in inner and "NCLUDE" not in inner)):
                # As split_items builds a block holding only words and leaf blocks.
                yield key, inner, (name, at + m.start(1), at + m.start(2))
                pos = m.end()
                continue
        pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= n:
            break
        # Anything else: the tree's own split of that item (of the rest, if the text
        # were not the balanced text the lexer gives).
        end = _item_end(text, pos) or n
        items: list = []
        split_items(text[pos:end], at + pos, src, items, _no_include, lazy=True)
        yield from ((b.key, None, b) for b in items if b.__class__ is Block)
        pos = end


def _item_end(text: str, pos: int) -> int | None:
    """Where the item (a word, or a block with its name) at ``pos`` ends."""
    e = _WORD.match(text, pos).end()  # type: ignore[union-attr]
    o = _OPEN.match(text, e)
    if o is None:
        return e if e > pos else None
    depth = 0
    for p in _PAREN.finditer(text, o.end() - 1):
        if p.group() == "(":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return p.end()
    return None


def _no_include(_cur: list, _blk: Block) -> None:
    raise AssertionError("include inside a raw table")  # the parser defers none


_PAIR_KEYS: dict[str, str] = {}


def _shape_text(inner: str) -> tuple | None:
    """_Builder._shape_fast of a TrackShape held as text ``id A ( a ) B ( b ) ...``
    (only leaf blocks), in one pass without the leaf view (the same steps, spelled out
    for speed: the tree path keeps the original, and tests/test_tsection_bulk.py checks
    they agree); None for any other layout (no id, other free words, a comment or
    include block, an anonymous group) or anything _shape_fast would refuse."""
    segs = inner.replace(")", "(").split("(")
    last = len(segs) - 1
    head = segs[0].split()
    if last == 0 or len(head) != 2:
        return None
    sid = int(head[0])
    name = head[1]
    keys = _PAIR_KEYS
    filename, num_paths, main_route, clearance, flags = "", -1, 0, math.nan, 0
    paths = []
    k = 0
    while True:
        key = keys.get(name)
        if key is None:
            key = name.lower()
            if name[:1] in "#_" or key in COMMENT_WORDS or key == "include":
                return None
            if len(keys) < 1000:
                keys[name] = key
        text = segs[k + 1]
        if key == "sectionidx":
            w = text.split()
            n = int(w[0])
            if n < 0 or len(w) != n + 5:  # (n < 0: _shape_rec fails on the offsets)
                return None
            if n == 1:  # most paths
                secs: tuple = (int(w[5]),)
                if not 0 <= secs[0] <= _UINT_MAX:
                    return None
            else:
                secs = tuple(map(int, w[5:]))
                if secs and not 0 <= min(secs) <= max(secs) <= _UINT_MAX:
                    return None
            paths.append((tuple(map(float, w[1:5])), secs))
        elif key == "filename":
            (filename,) = text.split()
        elif key == "numpaths":
            num_paths = int(text)
        elif key == "mainroute":
            main_route = int(text)
        elif key == "clearancedist":
            clearance = float(text)
        elif key == "tunnelshape":
            flags |= _TUNNEL
        elif key == "roadshape":
            flags |= _ROAD
        elif key == "ortsrackshape":
            flags |= _RACK
        k += 2
        if k >= last:
            break
        w = segs[k].split()
        if len(w) != 1:
            return None
        name = w[0]
    if segs[last] and not segs[last].isspace():
        return None
    if (
        num_paths != len(paths)
        or not 0 <= sid <= _UINT_MAX
        or not 0 <= main_route <= _UINT_MAX
        or not math.isfinite(clearance if clearance == clearance else 0.0)
    ):
        return None
    return (sid, filename, num_paths, main_route, clearance, flags, paths)


class _Builder:
    """Collects sections and shapes from one or more files, later entries replacing
    earlier ones with the same id (Open Rails' dictionary semantics)."""

    def __init__(self, diags: Diagnostics) -> None:
        self.diags = diags
        self.sections: dict[int, tuple[float, float, float, float]] = {}
        self.shapes: dict[int, tuple] = {}
        self.track_paths: dict[int, tuple[int, ...]] = {}
        self.files: list[str] = []
        #: Sections dropped for impossible geometry (lenient mode): id -> reason.
        self.bad_sections: dict[int, str] = {}

    def _valid(self, rd: Reader, blk: Block, sid: int, row: tuple) -> bool:
        """False (after an error or a finding) if ``row`` is geometry no track has."""
        why = geometry_problem(*row)
        if why is None:
            self.bad_sections.pop(sid, None)
            return True
        rd.problem(blk, f"BAD_SECTION_GEOMETRY: TrackSection {sid}: {why}")
        self.bad_sections[sid] = why
        self.sections.pop(sid, None)
        return False

    # -- global layout ------------------------------------------------------------------
    def add_global(self, doc: Document) -> None:
        rd = Reader(self.diags)
        self.files.append(doc.path)
        self.files.extend(doc.includes)
        for top in doc.items:
            if top.__class__ is not Block:
                continue
            if top.key == "tracksections":
                self._global_sections(rd, top)
            elif top.key == "trackshapes":
                self._shapes(rd, top)
            elif top.key == "sectionidx":
                self._track_paths(rd, top)

    def _distance(self, rd: Reader, blk: Block, index: int, default: float) -> float:
        items = blk.items
        if index >= len(items):
            return default
        raw = items[index]
        if raw.__class__ is not Block:
            try:
                return to_float(raw)  # the common case: a plain number in metres
            except (ValueError, TypeError):
                pass
        return rd.quantity(blk, index, "distance", default=default)

    def _global_sections(self, rd: Reader, table: Block) -> None:
        src = table.source
        for key, inner, x in table_entries(table):
            if key != "tracksection":
                continue  # the leading count (max index) is informational
            if inner is not None:
                if self._section_text(inner):
                    continue
                blk = Block(x[0], None, src, x[1], inner, x[2], key)
            else:
                blk = x
            self._global_section(rd, blk)

    def _section_text(self, inner: str) -> bool:
        """Read a TrackSection held as text in the usual layout, as _global_section
        would, if that reports nothing (no finding, no note); else False and nothing
        changed (the block is then made and read by _global_section)."""
        m = _SECTION_TEXT.fullmatch(inner)
        if m is None:
            return False
        sid_text, w, ln, r, a = m.groups()
        try:
            width, length = float(w), float(ln)
            if r is None:
                row: tuple = (width, length, math.nan, math.nan)
            else:
                radius, angle = float(r), float(a)
                if not (math.isfinite(radius) and math.isfinite(angle)):
                    return False
                row = (width, length, radius, angle)
        except ValueError:
            return False
        if not (math.isfinite(width) and math.isfinite(length)):
            return False
        sid = int(sid_text)
        sections = self.sections
        old = sections.get(sid)
        if old is not None and old != row:
            return False  # the tree path notes the redefinition
        if not (r is None and length_ok(length)):
            if geometry_problem(*row) is not None:
                return False
            self.bad_sections.pop(sid, None)  # as _valid
        sections[sid] = row
        return True

    def _global_section(self, rd: Reader, blk: Block) -> None:
        sections = self.sections
        sid: int
        row: Any
        nan = math.nan
        try:
            # Fast path: plain numbers in the usual layout, read without making
            # the child blocks (see Block.leaf_view).
            v: Any = blk.leaf_view()  # None fails below: the checked path
            sid = int(v[0])
            key, text = v[1]
            if key != "sectionsize":
                raise ValueError
            width, length = map(float, text.split())
            if len(v) == 2:
                row = (width, length, nan, nan)
            else:
                key, text = v[2]
                if len(v) != 3 or key != "sectioncurve":
                    raise ValueError
                radius, angle = map(float, text.split())
                if not (math.isfinite(radius) and math.isfinite(angle)):
                    raise ValueError
                row = (width, length, radius, angle)
            if not 0 <= sid <= _UINT_MAX or not (math.isfinite(width) and math.isfinite(length)):
                raise ValueError
        except (ValueError, TypeError, AttributeError, IndexError):
            row = self._global_section_checked(rd, blk)
            if row is None:
                return
            sid = row[0]
            row = row[1:]
        # (Straights of a sane length, nearly every row, skip the full check.)
        if not (math.isnan(row[2]) and length_ok(row[1])) and not self._valid(rd, blk, sid, row):
            return
        if sid in sections and sections[sid] != row:
            self.diags.note(
                f"TrackSection {sid} redefined; the later definition replaces the earlier", blk.location
            )
        sections[sid] = row

    def _global_section_checked(self, rd: Reader, blk: Block) -> tuple | None:
        """The slow path with a precise message for every defect (and units)."""
        items = blk.items
        if items and items[0].__class__ is Block:
            # Route-local layout inside a global-layout file: read it as such.
            self._local_section(rd, blk)
            return None
        sid = rd.value(blk, 0, to_uint, None, "section id")
        if sid is None:
            return None
        width, length, radius, angle = 1.5, 0.0, math.nan, math.nan
        for pos, sub in enumerate(items[1:], start=1):
            if sub.__class__ is not Block:
                rd.problem(blk, f"TrackSection {sid}: unexpected value {truncate_value(sub)}", pos)
                continue
            if sub.key == "sectionsize":
                width = self._distance(rd, sub, 0, 1.5)
                length = self._distance(rd, sub, 1, 0.0)
            elif sub.key == "sectioncurve":
                radius = self._distance(rd, sub, 0, math.nan)
                # Degrees, read without unit processing (as Open Rails does).
                angle = rd.value(sub, 1, to_float, math.nan, "curve angle")
        return (sid, width, length, radius, angle)

    def _put_section(self, rd: Reader, blk: Block, sid: int, row: tuple) -> None:
        if not self._valid(rd, blk, sid, row):
            return
        if sid in self.sections and self.sections[sid] != row:
            loc = blk.location
            self.diags.note(f"TrackSection {sid} redefined; the later definition replaces the earlier", loc)
        self.sections[sid] = row

    # -- route-local layout ---------------------------------------------------------------
    def add_local(self, doc: Document) -> None:
        rd = Reader(self.diags)
        if doc.signature != ROUTE_LOCAL_SIGNATURE:
            loc = doc.source.location(0) if doc.source else None
            self.diags.problem(
                FormatError(
                    f"route-local tsection.dat must start with {ROUTE_LOCAL_SIGNATURE!r} "
                    f"(found {doc.signature[:40]!r}); Open Rails ignores this file",
                    loc,
                    doc.source.snippet(loc) if doc.source and loc else "",
                )
            )
            return
        self.files.append(doc.path)
        self.files.extend(doc.includes)
        for top in doc.items:
            if top.__class__ is not Block:
                continue
            if top.key == "tracksections":
                for blk in top.items:
                    if blk.__class__ is Block and blk.key == "tracksection":
                        items = blk.items
                        if items and items[0].__class__ is Block:
                            self._local_section(rd, blk)
                        else:
                            rd.problem(
                                blk,
                                "TrackSection: a route-local section starts with "
                                "SectionCurve ( flag ) followed by id a b",
                            )
            elif top.key == "sectionidx":
                self._track_paths(rd, top)
            elif top.key == "trackshapes":
                self._shapes(rd, top)

    def _local_section(self, rd: Reader, blk: Block) -> None:
        # TrackSection ( SectionCurve ( flag ) id a b ): b == 0 → straight of length a;
        # otherwise a curve of radius b and angle a in radians (kept in degrees here).
        v = blk.leaf_view()
        try:
            if v is None or len(v) != 4 or v[0][0] != "sectioncurve":
                raise ValueError
            sid, a, b = int(v[1]), float(v[2]), float(v[3])
            if not 0 <= sid <= _UINT_MAX or not (math.isfinite(a) and math.isfinite(b)):
                raise ValueError
        except (ValueError, TypeError, IndexError):
            pass
        else:
            row = (1.5, a, math.nan, math.nan) if b == 0 else (1.5, 0.0, b, math.degrees(a))
            self._put_section(rd, blk, sid, row)
            return
        checked_sid = rd.value(blk, 1, to_uint, None, "section id")
        if checked_sid is None:
            return
        a = self._distance(rd, blk, 2, math.nan)
        b = rd.value(blk, 3, to_float, math.nan, "radius")
        if math.isnan(a) or math.isnan(b):
            if not rd.diags.strict:
                return
        if b == 0:
            row = (1.5, a, math.nan, math.nan)
        else:
            row = (1.5, 0.0, b, math.degrees(a))
        self._put_section(rd, blk, checked_sid, row)

    def _track_paths(self, rd: Reader, table: Block) -> None:
        view = table.leaf_view()
        if view is not None:
            try:
                paths = {}
                for entry in view[1:]:
                    key, text = entry
                    if key != "trackpath":
                        raise ValueError
                    w = text.split()
                    if len(w) != int(w[1]) + 2:
                        raise ValueError
                    secs = tuple(map(int, w[2:]))
                    pid = int(w[0])
                    if (
                        not 0 <= pid <= _UINT_MAX
                        or not 0 <= min(secs, default=0) <= max(secs, default=0) <= _UINT_MAX
                    ):
                        raise ValueError
                    paths[pid] = secs
                self.track_paths.update(paths)
                return
            except (ValueError, TypeError, IndexError):
                pass
        for blk in table.items:
            if blk.__class__ is not Block or blk.key != "trackpath":
                continue
            path_id = rd.value(blk, 0, to_uint, None, "path id")
            n = rd.value(blk, 1, to_uint, 0, "section count")
            have = max(len(blk.items) - 2, 0)
            checked = [rd.value(blk, 2 + k, to_uint, 0, "section id") for k in range(min(n, have))]
            rd.expect_count(blk, have, n, "sections", 1)
            if path_id is not None:
                self.track_paths[path_id] = tuple(checked)

    # -- shapes ---------------------------------------------------------------------------
    def _shapes(self, rd: Reader, table: Block) -> None:
        shapes = self.shapes
        src = table.source
        for key, inner, x in table_entries(table):
            if key != "trackshape":
                continue
            rec = None
            if inner is not None:
                # A raw block holding only words and leaf blocks: read its text (as
                # _shape_fast would), make the block only for the checked path.
                if "\\" not in inner:
                    try:
                        rec = _shape_text(inner)
                    except (ValueError, TypeError, AttributeError, IndexError):
                        rec = None
                if rec is not None:
                    shapes[rec[0]] = rec[1:]
                    continue
                blk = Block(x[0], None, src, x[1], inner, x[2], key)
            else:
                blk = x
            try:
                rec = self._shape_fast(blk)
            except (ValueError, TypeError, AttributeError, IndexError):
                rec = None
            if rec is None:
                rec = self._shape_checked(rd, blk)
                if rec is None:
                    continue
            shapes[rec[0]] = rec[1:]

    @staticmethod
    def _shape_fast(blk: Block) -> tuple | None:
        v: Any = blk.leaf_view()
        return _Builder._shape_rec(v[0], v[1:])

    @staticmethod
    def _shape_rec(head: str, view: list) -> tuple | None:
        sid = int(head)
        filename, num_paths, main_route, clearance, flags = "", -1, 0, math.nan, 0
        paths = []
        for key, text in view:
            if key == "sectionidx":
                w = text.split()
                n = int(w[0])
                if len(w) != n + 5:
                    return None
                secs = tuple(map(int, w[5:]))
                if secs and not 0 <= min(secs) <= max(secs) <= _UINT_MAX:
                    return None
                paths.append(((float(w[1]), float(w[2]), float(w[3]), float(w[4])), secs))
            elif key == "filename":
                (filename,) = text.split()
            elif key == "numpaths":
                num_paths = int(text)
            elif key == "mainroute":
                main_route = int(text)
            elif key == "clearancedist":
                clearance = float(text)
            elif key == "tunnelshape":
                flags |= _TUNNEL
            elif key == "roadshape":
                flags |= _ROAD
            elif key == "ortsrackshape":
                flags |= _RACK
        if (
            num_paths != len(paths)
            or not 0 <= sid <= _UINT_MAX
            or not 0 <= main_route <= _UINT_MAX
            or not math.isfinite(clearance if clearance == clearance else 0.0)
        ):
            return None
        return (sid, filename, num_paths, main_route, clearance, flags, paths)

    def _shape_checked(self, rd: Reader, blk: Block) -> tuple | None:
        """The slow path with a precise message for every defect."""
        sid = rd.value(blk, 0, to_uint, None, "shape id")
        if sid is None:
            return None
        filename, num_paths, main_route, clearance, flags = "", 0, 0, math.nan, 0
        paths: list[tuple] = []
        for sub in blk.items[1:]:
            if sub.__class__ is not Block:
                continue
            k = sub.key
            if k == "sectionidx":
                n = rd.value(sub, 0, to_uint, 0, "section count")
                off = tuple(rd.value(sub, 1 + j, to_float, 0.0, "path offset") for j in range(4))
                have = max(len(sub.items) - 5, 0)
                if have != n:
                    rd.problem(sub, f"SectionIdx: the count says {n} sections, found {have}", 0)
                secs = tuple(rd.value(sub, 5 + j, to_uint, 0, "section id") for j in range(min(n, have)))
                paths.append((off, secs))
            elif k == "filename":
                filename = rd.string(sub)
            elif k == "numpaths":
                num_paths = rd.value(sub, 0, to_uint, 0, "path count")
            elif k == "mainroute":
                main_route = rd.value(sub, 0, to_uint, 0, "main route")
            elif k == "clearancedist":
                clearance = self._distance(rd, sub, 0, math.nan)
            elif k == "tunnelshape":
                flags |= _TUNNEL
            elif k == "roadshape":
                flags |= _ROAD
            elif k == "ortsrackshape":
                flags |= _RACK
        if num_paths != len(paths):
            rd.problem(blk, f"TrackShape {sid}: NumPaths is {num_paths} but {len(paths)} SectionIdx given")
        return (sid, filename, num_paths, main_route, clearance, flags, paths)

    # -- result ---------------------------------------------------------------------------
    def build(self) -> TSection:
        ids = np.array(sorted(self.sections), dtype=np.int64)
        rows = np.array([self.sections[i] for i in ids.tolist()], dtype=np.float64).reshape(-1, 4)
        sections = SectionTable(
            ids, rows[:, 0].copy(), rows[:, 1].copy(), rows[:, 2].copy(), rows[:, 3].copy()
        )
        sids = sorted(self.shapes)
        recs = [self.shapes[i] for i in sids]
        path_start = np.zeros(len(recs) + 1, dtype=np.int64)
        offsets: list[tuple] = []
        sec_start = [0]
        secs: list[int] = []
        for i, rec in enumerate(recs):
            for off, ps in rec[5]:
                offsets.append(off)
                secs.extend(ps)
                sec_start.append(len(secs))
            path_start[i + 1] = len(offsets)
        shapes = ShapeTable(
            ids=np.array(sids, dtype=np.int64),
            filenames=tuple(r[0] for r in recs),
            num_paths=np.array([r[1] for r in recs], dtype=np.int64),
            main_route=np.array([r[2] for r in recs], dtype=np.int64),
            clearance=np.array([r[3] for r in recs], dtype=np.float64),
            flags=np.array([r[4] for r in recs], dtype=np.uint8),
            path_start=path_start,
            path_offset=np.array(offsets, dtype=np.float64).reshape(-1, 4),
            path_sec_start=np.array(sec_start, dtype=np.int64),
            path_sections=np.array(secs, dtype=np.int64),
        )
        for arr in (*[getattr(sections, f) for f in ("ids", "width", "length", "radius", "angle")],):
            arr.flags.writeable = False
        return TSection(sections, shapes, dict(self.track_paths), tuple(self.files))


def read_tsection(
    global_files: list[str | Path] | tuple = (),
    local_file: str | Path | None = None,
    *,
    diagnostics: Diagnostics | None = None,
    root: str | Path | None = None,
) -> TSection:
    """Read and merge tsection files: global-layout files in order, then the route-local one."""
    diags = diagnostics if diagnostics is not None else Diagnostics(strict=True)
    with gc_paused():
        return _read_tsection(global_files, local_file, diags, root)


def _read_tsection(global_files, local_file, diags: Diagnostics, root) -> TSection:
    b = _Builder(diags)
    for f in global_files:
        b.add_global(parse_file(f, diagnostics=diags, root=root, bulk="tsection"))
    if local_file is not None:
        b.add_local(parse_file(local_file, diagnostics=diags, root=root, bulk="tsection"))
    return b.build()


def read_tsection_file(
    path: str | Path,
    *,
    strict: bool = True,
    local: bool | None = None,
    diagnostics: Diagnostics | None = None,
) -> TSection:
    """Read one tsection.dat. ``local=None`` guesses the layout from the signature."""
    diags = diagnostics if diagnostics is not None else Diagnostics(strict=strict)
    with gc_paused():  # as read_tsection: the collector's passes cost more than the read
        doc = parse_file(path, diagnostics=diags, bulk="tsection")
        b = _Builder(diags)
        is_local = (
            local
            if local is not None
            else doc.signature == ROUTE_LOCAL_SIGNATURE
            and any(blk.key == "sectionidx" for blk in doc.blocks())
        )
        (b.add_local if is_local else b.add_global)(doc)
        return b.build()
