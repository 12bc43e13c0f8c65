"""Loading a whole route folder (``…/ROUTES/NAME``) into one typed :class:`Route`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._display import html_summary, short_repr
from .._fs import FOLLOW_LINKS_ENV, inside, is_file, safe_basename
from ..errors import Diagnostics, Finding, FormatError, RouteError, truncate_value
from ..stf import find_install_root, parse_file, resolve_case_insensitive
from ..stf.parser import gc_paused
from .tdb import SECTION_COLUMNS, TrackDB, VectorNode, parse_tdb, tdb_from_document
from .trk import RouteFile, trk_from_document
from .tsection import TSection, _Builder


@dataclass(frozen=True, slots=True)
class RouteFiles:
    """Where a route's files are, as Open Rails would pick them."""

    folder: Path
    install_root: Path
    trk: Path
    tdb: Path
    rdb: Path | None
    tsection_global: Path
    tsection_local: Path | None
    #: Candidate files that did not exist (their appearing would change the route).
    absent: tuple[Path, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class Route:
    """A loaded route: its route file, track and road databases and section tables."""

    folder: str
    install_root: str
    trk: RouteFile
    tdb: TrackDB
    rdb: TrackDB | None
    tsection: TSection
    #: Arc length in metres of every row of ``tdb.sections`` (NaN: section id unknown).
    section_length: np.ndarray
    #: Defects tolerated in lenient mode (empty in strict mode).
    warnings: tuple[Finding, ...] = ()
    #: Every file the route was built from (for the cache).
    sources: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.trk.name

    def _facts(self) -> list[tuple[str, object]]:
        c = self.tdb.counts()
        return [
            ("name", self.trk.name),
            ("folder", self.folder),
            ("nodes", c["total"]),
            ("sections", len(self.tdb.sections)),
            ("items", len(self.tdb.items)),
            ("track_km", round(self.track_km, 3)),
            ("warnings", len(self.warnings)),
        ]

    def __repr__(self) -> str:
        # The dataclass repr would print every node and array (a million characters on
        # DK24); .summary() has the whole picture.
        return short_repr("Route", self._facts())

    def _repr_html_(self) -> str:
        return html_summary(f"Route {self.trk.name}", self._facts())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Route):
            return NotImplemented
        return (
            self.trk == other.trk
            and self.tdb == other.tdb
            and self.rdb == other.rdb
            and self.tsection == other.tsection
            and np.array_equal(self.section_length, other.section_length, equal_nan=True)
        )

    # -- summaries ----------------------------------------------------------------------
    def node_length(self, index: int) -> float:
        n = self.tdb.nodes[index]
        if not isinstance(n, VectorNode):
            return 0.0
        return float(np.nansum(self.section_length[n.section_slice]))

    @property
    def track_km(self) -> float:
        return float(np.nansum(self.section_length)) / 1000.0

    def tile_extent(self) -> dict[str, int] | None:
        s = self.tdb.sections
        if len(s) == 0:
            return None
        return {
            "tile_x_min": int(s.tile_x.min()),
            "tile_x_max": int(s.tile_x.max()),
            "tile_z_min": int(s.tile_z.min()),
            "tile_z_max": int(s.tile_z.max()),
        }

    def summary(self) -> dict:
        return {
            "name": self.trk.name,
            "route_id": self.trk.route_id,
            "folder": self.folder,
            "nodes": self.tdb.counts(),
            "sections": len(self.tdb.sections),
            "items": self.tdb.item_counts(),
            "track_km": round(self.track_km, 3),
            "tile_extent": self.tile_extent(),
            "road_nodes": self.rdb.counts() if self.rdb else None,
            "road_items": self.rdb.item_counts() if self.rdb else None,
            "tsection": {
                "sections": len(self.tsection.sections),
                "shapes": len(self.tsection.shapes),
                "dynamic_paths": len(self.tsection.track_paths),
            },
            "warnings": len(self.warnings),
        }


def find_route_files(path: str | Path) -> RouteFiles:
    """Find the .trk, .tdb, .rdb and tsection files of the route folder ``path``."""
    folder = Path(path)
    if folder.is_file() and folder.suffix.lower() in (".trk", ".tdb", ".rdb"):
        folder = folder.parent  # a route's own file stands for its folder
    if not folder.is_dir():
        raise RouteError(f"route folder not found: {str(folder)!r}")
    folder = folder.resolve()
    parent = folder.parent
    install_root = parent.parent if parent.name.lower() == "routes" else find_install_root(folder / "x")
    trks = sorted(p for p in folder.iterdir() if p.suffix.lower() == ".trk" and p.is_file())
    if not trks:
        raise RouteError(f"no .trk route file in {str(folder)!r}: is this a route folder (…/ROUTES/NAME)?")
    absent: list[Path] = []

    def pick(*candidates: Path) -> Path | None:
        for c in candidates:
            found = resolve_case_insensitive(c)
            if found.is_file():
                return found
            absent.append(c)
        return None

    tsec = pick(
        folder / "OPENRAILS" / "tsection.dat",
        folder / "GLOBAL" / "tsection.dat",
        install_root / "GLOBAL" / "tsection.dat",
    )
    if tsec is None:
        raise RouteError(
            f"no global tsection.dat for {str(folder)!r}: looked in OPENRAILS/, GLOBAL/ "
            f"of the route and in {str(install_root / 'GLOBAL')!r}"
        )
    local = pick(folder / "tsection.dat")
    for p in (trks[0], tsec, local):
        own_file(p, install_root)
    return RouteFiles(folder, install_root, trks[0], Path(), None, tsec, local, tuple(absent))


def own_file(path: Path | None, install_root: Path) -> None:
    """Refuse a route file (.trk, .tdb, .rdb, tsection.dat) whose real path is outside
    the install, as every other link out of it is refused (docs/security.md §3), unless
    the user asks for such links (TDBTOOLS_FOLLOW_LINKS=1)."""
    if path is not None and not inside(path, install_root):
        raise RouteError(
            f"{str(path)!r} leads outside the install {str(install_root)!r} (a symbolic link): not read "
            f"(set {FOLLOW_LINKS_ENV}=1 to follow such links)"
        )


def _load(files: RouteFiles, strict: bool) -> Route:
    with gc_paused():
        return _load_files(files, strict)


def _load_files(files: RouteFiles, strict: bool) -> Route:
    diags = Diagnostics(strict=strict)
    root = files.install_root
    trk = trk_from_document(parse_file(files.trk, diagnostics=diags, root=root), diags)
    if not trk.filename:
        raise RouteError(f"{files.trk}: the route file names no FileName for the track database")
    base = _database_name(trk.filename, files, diags)
    tdb_path = resolve_case_insensitive(files.folder / f"{base}.tdb")
    if not is_file(tdb_path):
        raise RouteError(f"track database not found: {str(tdb_path)!r} (FileName in {files.trk.name})")
    own_file(tdb_path, files.install_root)
    rdb_path = resolve_case_insensitive(files.folder / f"{base}.rdb")
    if is_file(rdb_path):
        own_file(rdb_path, files.install_root)
    tdb = tdb_from_document(parse_tdb(tdb_path, diags, root), diags)
    rdb = None
    if is_file(rdb_path):
        rdb = tdb_from_document(parse_tdb(rdb_path, diags, root), diags)
    b = _Builder(diags)
    # (bulk: the two big tables kept raw, as read_tsection reads them: the same model,
    # findings and errors, tests/test_tsection_bulk.py; ~0.17 s less for DK24's files)
    b.add_global(parse_file(files.tsection_global, diagnostics=diags, root=root, bulk="tsection"))
    if files.tsection_local is not None:
        b.add_local(parse_file(files.tsection_local, diagnostics=diags, root=root, bulk="tsection"))
    tsection = b.build()
    lengths = _section_lengths(tdb, tsection, diags, b.bad_sections)
    sources = [str(files.trk), str(tdb_path), *tsection.files]
    if rdb is not None:
        sources.append(str(rdb_path))
    return Route(
        str(files.folder),
        str(root),
        trk,
        tdb,
        rdb,
        tsection,
        lengths,
        tuple(diags.findings),
        tuple(dict.fromkeys(sources)),
    )


#: Unknown section ids reported one by one (a broken tsection.dat can miss thousands).
MAX_SECTION_FINDINGS = 1000


def _database_name(filename: str, files: RouteFiles, diags: Diagnostics) -> str:
    """The .tdb/.rdb base name from the route file's FileName: a bare name in the route
    folder (docs/security.md §3). A path is an error in strict mode; lenient mode
    keeps its last component and records a finding."""
    base = safe_basename(filename, default="")
    if base != filename or not base:
        shown = truncate_value(filename)
        if diags.strict or not base:
            raise RouteError(
                f"{files.trk}: FileName {shown} is not a bare file name: the track "
                "database must be in the route folder"
            )
        diags.problem(
            FormatError(
                f"UNSAFE_FILENAME: FileName {shown} is not a bare file name; "
                f"reading {base!r} in the route folder",
                None,
            ),
            code="UNSAFE_FILENAME",
        )
    return base


def _section_lengths(
    tdb: TrackDB, tsection: TSection, diags: Diagnostics, bad: dict[int, str] | None = None
) -> np.ndarray:
    sec = tsection.sections
    rows, found = sec.rows(tdb.sections.section_index)
    length = np.full(len(rows), np.nan)
    length[found] = sec.arc_length[rows[found]]  # (an empty table has no row 0 to index)
    # Rows whose own geometry was refused (section id -1) and sections dropped for
    # impossible geometry were reported already; name the nodes that use the latter.
    ids = tdb.sections.section_index
    known_bad = np.isin(ids, np.array(sorted(bad or {}), dtype=np.int64)) | (ids < 0)
    for sid in sorted(set(ids[known_bad & (ids >= 0)].tolist()))[:20]:
        nodes = np.unique(tdb.sections.node[ids == sid])
        diags.problem(
            FormatError(
                f"BAD_SECTION_GEOMETRY: TrackSection {sid} ({(bad or {})[sid]}) is used by vector node(s) "
                f"{', '.join(map(str, nodes[:10].tolist()))}: those sections have no length or geometry",
                None,
            ),
            code="BAD_SECTION_GEOMETRY",
            section=int(sid),
            node=int(nodes[0]),
        )
    if not (found | known_bad).all():
        missing = np.unique(ids[~found & ~known_bad])
        nodes = np.unique(tdb.sections.node[~found & ~known_bad])
        msg = (
            f"{len(missing)} track section id(s) used by {len(nodes)} vector node(s) are not in "
            f"tsection.dat (e.g. {', '.join(map(str, missing[:5]))}; nodes "
            f"{', '.join(map(str, nodes[:5]))}): those sections have no length or geometry"
        )
        if diags.strict:
            raise FormatError(msg, None)
        unknown = ~found & ~known_bad
        secs, nodes_of = ids[unknown], tdb.sections.node[unknown]
        for sid in missing[:MAX_SECTION_FINDINGS]:
            node = int(nodes_of[np.argmax(secs == sid)])
            diags.problem(
                FormatError(
                    f"track section id {int(sid)} is not in tsection.dat: it has no "
                    "length or geometry (Open Rails skips it too)",
                    None,
                ),
                code="SECTION_UNKNOWN",
                severity="error",
                node=node,
                section=int(sid),
            )
    length.flags.writeable = False
    return length


def load_route(path: str | Path, *, cache: bool = True, strict: bool = True) -> Route:
    """Load the route in the folder ``path`` (``…/ROUTES/NAME``).

    Finds the install root, the ``.trk``, its ``.tdb``/``.rdb`` and the tsection files
    (``OPENRAILS/tsection.dat`` override, else the route's ``GLOBAL``, else the install
    ``GLOBAL``; then the route-local file). Strict mode raises at the first defect;
    lenient mode records them in :attr:`Route.warnings`. With ``cache``, a parsed route
    is kept on disk and reused while its source files are unchanged.

    One cache entry serves both modes: the route is parsed once, leniently, and kept with
    its findings; a strict load of a route whose findings hold a problem (anything but an
    ``info`` note: strict mode raises exactly where lenient mode records one) parses again
    strictly to raise the located error. So a defective route loads from the cache as fast
    as a clean one, and a clean route's strict and lenient loads are the same entry.
    """
    files = find_route_files(path)
    if cache:
        from .cache import RouteCache

        store = RouteCache()
        hit = store.get(files, False)
        if (
            hit.__class__ is Route
            and arrays_consistent(hit)
            # (a source replaced by a link out of the install since: read again, and refused)
            and all(inside(p, files.install_root) for p in hit.sources)
        ):
            route = hit
        else:
            route = _load(files, False)
            store.put(files, False, route)
        if strict and refused_by_strict(route.warnings):
            return _load(files, True)  # raises the located error (only a refusal re-parses)
        return route
    return _load(files, strict)


def arrays_consistent(route: Route) -> bool:
    """True if a route's numpy columns have the shapes and kinds a parse gives them: one
    dimension, the lengths of their tables, integer or float as declared, offsets that
    rise within their ranges. A cache entry's records are checked against their types as
    it is read; this checks what a type cannot say (docs/security.md §1)."""

    def col(a: object, n: int | None, kinds: str) -> bool:
        return (
            isinstance(a, np.ndarray) and a.ndim == 1 and (n is None or len(a) == n) and a.dtype.kind in kinds
        )

    def rising(a: np.ndarray, end: int) -> bool:
        return len(a) >= 1 and a[0] == 0 and a[-1] == end and not (np.diff(a) < 0).any()

    try:
        for db in (route.tdb, route.rdb):
            if db is None:
                continue
            s = db.sections
            n = len(s.node)
            for name, dt in (*SECTION_COLUMNS, ("node", np.int64)):
                if not col(getattr(s, name), n, np.dtype(dt).kind):
                    return False
        if not col(route.section_length, len(route.tdb.sections), "f"):
            return False
        st = route.tsection.sections
        n = len(st.ids)
        if not (
            col(st.ids, n, "iu")
            and all(col(getattr(st, c), n, "f") for c in ("width", "length", "radius", "angle"))
        ):
            return False
        sh = route.tsection.shapes
        n = len(sh.ids)
        if not (
            col(sh.ids, n, "iu")
            and len(sh.filenames) == n
            and all(
                col(getattr(sh, c), n, k)
                for c, k in (("num_paths", "iu"), ("main_route", "iu"), ("clearance", "f"), ("flags", "iu"))
            )
            and col(sh.path_start, n + 1, "iu")
            and col(sh.path_sec_start, None, "iu")
            and col(sh.path_sections, None, "iu")
            and isinstance(sh.path_offset, np.ndarray)
            and sh.path_offset.ndim == 2
            and sh.path_offset.shape[1] == 4
            and sh.path_offset.dtype.kind == "f"
        ):
            return False
        paths = sh.path_offset.shape[0]
        return (
            rising(sh.path_start, paths)
            and len(sh.path_sec_start) == paths + 1
            and rising(sh.path_sec_start, len(sh.path_sections))
        )
    except (AttributeError, TypeError, ValueError, IndexError):
        return False


def refused_by_strict(findings: tuple[Finding, ...] | list[Finding]) -> bool:
    """True if a strict read would have refused what these lenient findings record."""
    return any(f.severity != "info" for f in findings)


__all__ = ["Route", "RouteFiles", "arrays_consistent", "find_route_files", "load_route", "refused_by_strict"]
