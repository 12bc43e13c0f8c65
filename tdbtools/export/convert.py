"""Writing a loaded route back as MSTS files, losing nothing the files held.

The model keeps only what tdbtools interprets (a ``.trk`` has Environment, Graphic,
sound defaults … the model does not). So :func:`convert_route` writes each file from
the file it was read from: every block of the original is written back, those the
model interprets taken from the model (``Tr_RouteFile``'s fields, ``TrackDB``'s
tables, the tsection tables) and all others verbatim, in their places. When the model
still says what the original file says, the original tree is written as it is, so the
STF tree of each converted file equals the original's. Without the source files (a
route from a JSON export on another machine) the files are written from the model.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from .._fs import safe_basename, write_text_atomic
from ..errors import Diagnostics, TdbToolsError
from ..formats.route import Route
from ..formats.tdb import tdb_from_document
from ..formats.trk import trk_from_document
from ..formats.tsection import read_tsection
from ..stf import parse_file
from ..stf.parser import is_file
from ..stf.tree import Block, Document
from ..stf.writer import format_stf
from .msts import (
    ExportError,
    check_target,
    split_tsection,
    tdb_block,
    trk_text,
    write_tdb,
    write_trk,
    write_tsection,
)

__all__ = ["convert_route", "merge_blocks"]


def merge_blocks(original: Block, model: Block, depth: int = 2) -> Block:
    """``original`` with the blocks ``model`` writes put in place of the same-named ones.

    At ``depth`` > 1 same-named blocks are merged the same way one level down; at
    depth 1 the model's block replaces the original's. Items of the original the model
    does not write stay where they are (verbatim); model blocks the original lacks are
    added at the end."""
    pending: dict[str, list[Block]] = {}
    for it in model.items:
        if isinstance(it, Block):
            pending.setdefault(it.key, []).append(it)
    items: list = []
    for it in original.items:
        if isinstance(it, Block) and pending.get(it.key):
            mine = pending[it.key].pop(0)
            items.append(merge_blocks(it, mine, depth - 1) if depth > 1 else mine)
        else:
            items.append(it)
    for rest in pending.values():
        items.extend(rest)
    return Block(original.name, items)


def _read(path: str | Path | None, root: str) -> Document | None:
    """The generic tree of an original file, or None when it is not there any more."""
    if path is None or not is_file(Path(path)):
        return None
    try:
        return parse_file(path, diagnostics=Diagnostics(strict=False), root=root)
    except (TdbToolsError, OSError):
        return None


def _write_tree(doc: Block, signature: str, target: Path) -> Path:
    write_text_atomic(target, format_stf(doc, signature=signature))
    return target


def _sources(route: Route) -> dict[str, str | None]:
    """Which original file each output comes from (None: unknown)."""
    folder = Path(route.folder)
    base = (route.trk.filename or "").lower()
    found: dict[str, str | None] = {"trk": None, "tdb": None, "rdb": None}
    for s in route.sources:
        p = Path(s)
        if p.parent == folder and p.stem.lower() == base and p.suffix.lower() in (".tdb", ".rdb"):
            found[p.suffix.lower()[1:]] = s
        elif p.parent == folder and p.suffix.lower() == ".trk":
            found["trk"] = s
    files = list(route.tsection.files)
    local = next(
        (f for f in files if Path(f).parent == folder and Path(f).name.lower() == "tsection.dat"), None
    )
    found["tsection_global"] = files[0] if files and files[0] != local else None
    found["tsection_local"] = local
    return found


def convert_route(route: Route, folder: str | Path, *, overwrite: bool = False) -> list[Path]:
    """Write the route as MSTS files into ``folder`` (which must exist):
    ``<FileName>.trk``, ``<FileName>.tdb``, ``<FileName>.rdb`` (if any),
    ``OPENRAILS/tsection.dat`` (global layout) and ``tsection.dat`` (route-local
    layout, if any), each UTF-16LE with BOM and CRLF, atomically. Each file keeps
    every block of the file it was read from (module docstring); reading the global
    file and then the local one gives ``route.tsection`` again. Nothing is written if
    any target exists (unless ``overwrite``)."""
    out = Path(folder)
    if not out.is_dir():
        raise ExportError(f"output folder {str(out)!r} does not exist")
    # Names derived from route data never leave --out (docs/security.md §5): the
    # FileName is cut to a safe base name, and the .trk written names that file.
    base = safe_basename(route.trk.filename or "route")
    trk = route.trk if base == route.trk.filename else dataclasses.replace(route.trk, filename=base)
    src = _sources(route)
    root = route.install_root
    jobs: list[tuple[Path, object]] = []

    tdb_doc = _read(src["tdb"], root)
    jobs.append((out / f"{base}.tdb", lambda p: _database(route.tdb, tdb_doc, p)))
    jobs.append((out / f"{base}.trk", lambda p: _route_file(trk, _read(src["trk"], root), p)))
    if route.rdb is not None:
        rdb_doc = _read(src["rdb"], root)
        jobs.append((out / f"{base}.rdb", lambda p: _database(route.rdb, rdb_doc, p)))
    g_doc, l_doc = _read(src["tsection_global"], root), _read(src["tsection_local"], root)
    same = g_doc is not None and _tsection_unchanged(route, src)
    glob, local = split_tsection(route.tsection)
    if same:
        assert g_doc is not None
        jobs.append((out / "OPENRAILS" / "tsection.dat", lambda p: _write_tree(g_doc, g_doc.signature, p)))
        if l_doc is not None:
            jobs.append((out / "tsection.dat", lambda p: _write_tree(l_doc, l_doc.signature, p)))
    else:
        jobs.append(
            (
                out / "OPENRAILS" / "tsection.dat",
                lambda p: write_tsection(glob, p, layout="global", overwrite=True),
            )
        )
        if local.track_paths or len(local.sections):
            jobs.append(
                (out / "tsection.dat", lambda p: write_tsection(local, p, layout="local", overwrite=True))
            )
    (out / "OPENRAILS").mkdir(exist_ok=True)
    for p, _ in jobs:
        check_target(p, overwrite)
    return [job(p) for p, job in jobs]  # type: ignore[operator]


def _database(db, doc: Document | None, target: Path) -> Path:  # noqa: ANN001
    if doc is None:
        return write_tdb(db, target, overwrite=True)
    if tdb_from_document(doc, Diagnostics(strict=False)) == db:
        return _write_tree(doc, doc.signature, target)
    return _write_tree(merge_blocks(doc, Block("", [tdb_block(db)])), doc.signature, target)


def _route_file(trk, doc: Document | None, target: Path) -> Path:  # noqa: ANN001 - a formats.trk.RouteFile
    if doc is None:
        return write_trk(trk, target, overwrite=True)
    if trk_from_document(doc, Diagnostics(strict=False)) == trk:
        return _write_tree(doc, doc.signature, target)
    from ..stf import parse_text

    model = parse_text(trk_text(trk))
    return _write_tree(merge_blocks(doc, model), doc.signature, target)


def _tsection_unchanged(route: Route, src: dict[str, str | None]) -> bool:
    if src["tsection_global"] is None:
        return False
    try:
        again = read_tsection(
            [src["tsection_global"]],
            src["tsection_local"],
            diagnostics=Diagnostics(strict=False),
            root=route.install_root,
        )
    except (TdbToolsError, OSError):
        return False
    return again == route.tsection
