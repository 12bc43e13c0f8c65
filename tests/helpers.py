"""Paths shared by the tests (imported as a plain module; pytest puts tests/ on sys.path)."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLE_INSTALL = REPO / "sample_routes" / "sample"
SAMPLE_ROUTE = SAMPLE_INSTALL / "ROUTES" / "SAMPLE"
DK24 = (REPO / ".." / "shared" / "routes" / "DK24").resolve()
DK24_ROUTE = DK24 / "ROUTES" / "OR_DK24"
DK24_TEST_ROUTE = DK24 / "ROUTES" / "OR_DK24TEST"
SAMPLE_PATHS = SAMPLE_ROUTE / "PATHS"
CONSISTS = SAMPLE_INSTALL / "TRAINS" / "CONSISTS"
#: the sample's Class 66 (a diesel with a governor, the long-train benchmark's engine)
SAMPLE_DL66 = SAMPLE_INSTALL / "TRAINS" / "TRAINSET" / "SAMPLE_DL" / "SAMPLE_DL66.eng"
#: the sample route's track nodes (sample_routes/README.md): V_a, junction J1, V_main, the siding
V_A, J1, V_MAIN, V_SID = 2, 3, 4, 6


def sample_timetable(tmp_path: Path, grid: Any, name: str) -> tuple[Path, Path]:
    """A copy of the sample install whose ACTIVITIES/OpenRails holds only the timetable
    ``grid`` (rows of cells, :func:`~tdbtools.formats.timetable.make_timetable`) as
    ``name``: (the route folder, the timetable's path)."""
    import shutil

    from tdbtools.formats.timetable import make_timetable, write_timetable

    inst = tmp_path / "sample"
    shutil.copytree(SAMPLE_INSTALL, inst)
    folder = inst / "ROUTES" / "SAMPLE"
    tt_dir = folder / "ACTIVITIES" / "OpenRails"
    for p in tt_dir.iterdir():
        p.unlink()
    path = tt_dir / name
    write_timetable(make_timetable(grid), path)
    return folder, path


def load_script(path: Path) -> Any:
    """A script of the repository that is not a package module (benchmarks/, tools/) as a
    module, for the tests that reuse what it builds."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@functools.lru_cache(maxsize=1)
def sample_route() -> Any:
    """The sample route, read once (no cache: the tests stay hermetic)."""
    from tdbtools.formats import load_route

    return load_route(SAMPLE_ROUTE, cache=False)


def sample_line(name: str = "MainWE.pat", **kw: Any) -> Any:
    """The TrackLine of a sample path (TrackLine.from_path's keywords)."""
    from tdbtools.physics.trackline import TrackLine

    return TrackLine.from_path(sample_route(), SAMPLE_PATHS / name, **kw)


def sample_scenario(*trains: Any, **kw: Any) -> Any:
    """A Scenario of ``trains`` (TrainSpec) on the sample route (Scenario's keywords)."""
    from tdbtools.physics.scenario import Scenario

    return Scenario(SAMPLE_ROUTE, tuple(trains), **kw)


#: Whether pyvista is installed (looked up, not imported: importing it takes a second).
HAVE_PYVISTA = importlib.util.find_spec("pyvista") is not None
NO_PYVISTA = "pyvista is not installed (pip install 'tdbtools[render]')"
needs_pyvista = pytest.mark.skipif(not HAVE_PYVISTA, reason=NO_PYVISTA)


def _reference_only() -> bool:
    from tdbtools.physics import kernels

    return kernels.pure_python_requested()


#: Marks a test that compares the compiled kernels with their reference or looks inside
#: them: skipped when the whole run is on the reference code (TDBTOOLS_PURE_PYTHON, the
#: CI's reference run), where there is no kernel to compare.
needs_kernels = pytest.mark.skipif(
    _reference_only(), reason="the whole run is on the reference code (TDBTOOLS_PURE_PYTHON)"
)


def dk24_available() -> bool:
    return (DK24_ROUTE / "DK24.tdb").is_file()


#: Marks a test as needing DK24 (conftest.py skips it, with one reason, when DK24 is
#: absent). Tests that use a ``dk24*`` fixture or a DK24 path are marked automatically.
needs_dk24 = pytest.mark.dk24


def signalled_sample_activity(tmp_path: Path, hour: int = 8 * 3600) -> tuple:
    """A copy of the signalled sample route with an activity: eastbound and westbound
    enter together and cross at the loop; the player enters on the eastbound's line a
    minute later, when its start is still held. Returns (route, activity path)."""
    import shutil

    from tdbtools.formats.route import load_route
    from tdbtools.physics.activity_build import ServiceSpec, write_activity_files

    dst = tmp_path / "sample"
    shutil.copytree(SAMPLE_INSTALL, dst)
    route = load_route(dst / "ROUTES" / "SIGNALS", cache=False)
    act = write_activity_files(
        route,
        "Signalled",
        [
            ServiceSpec("Eastbound", "sample_freight", hour, "East_main"),
            ServiceSpec("Westbound", "sample_passenger", hour, "West_loop"),
            ServiceSpec("Follower", "sample_passenger", hour + 60, "East_main", player=True),
        ],
        duration=3600,
    )
    return route, act


def _tdb_readers() -> dict:
    from tdbtools.formats import tdb as tdb_mod

    return {name: getattr(tdb_mod, name) for name in ("read_bulk_nodes", "read_bulk_items")}


#: The .tdb bulk readers as they are before any test replaces them.
_TDB_BULK_READERS = _tdb_readers()


def read_tdb_spying(path: Path, reader: str, *, use: bool, plain: bool, strict: bool, monkeypatch) -> tuple:
    """Read a .tdb/.rdb with the bulk reader ``reader`` ("read_bulk_nodes" or
    "read_bulk_items") used or turned down (``use``), after a bulk parse or, with
    ``plain``, the plain STF parse: (model or None, error, findings, whether the reader
    gave its table)."""
    from tdbtools.errors import Diagnostics, TdbToolsError
    from tdbtools.formats import tdb as tdb_mod
    from tdbtools.formats.tdb import parse_tdb, tdb_from_document
    from tdbtools.stf import parse_file

    real = _TDB_BULK_READERS[reader]
    used = []

    def spy(blk):  # noqa: ANN001, ANN202
        out = real(blk) if use else None
        used.append(out is not None)
        return out

    monkeypatch.setattr(tdb_mod, reader, spy)
    diags = Diagnostics(strict=strict)
    try:
        doc = parse_file(path, diagnostics=diags) if plain else parse_tdb(path, diags)
        db = tdb_from_document(doc, diags)
        err = None
    except TdbToolsError as exc:
        db, err = None, (type(exc).__name__, str(exc))
    return db, err, [(f.message, f.location, f.code) for f in diags.findings], any(used)


#: Work limits in the tests are CPU seconds of this process (``time.process_time``, all
#: its threads), never wall-clock seconds: another process's load cannot stretch them.
#: Each limit is about CPU_SLACK times what the work takes on an idle machine.
CPU_SLACK = 3.0


class CpuTimer:
    """``with CpuTimer() as t: ...``, then ``t.seconds``: the CPU seconds the block used."""

    seconds: float = 0.0

    def __enter__(self) -> CpuTimer:
        import time

        self._t0 = time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        import time

        self.seconds = time.process_time() - self._t0


def force_full_grammar(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """From now on in the test, every STF parse takes the full grammar (stf.lark), as text
    holding a bare comment marker would, whatever the prescan finds. Returns the list that
    counts the full grammar's parses: a test asserts it grew, so that the forcing cannot
    silently stop working (patching ``needs_full_grammar`` had done nothing since the
    parser asked ``_scan_markers`` directly, and the "both grammars" tests compared the
    fast grammar with itself)."""
    from tdbtools.stf import parser as stf_parser

    real = stf_parser._scan_markers
    monkeypatch.setattr(stf_parser, "_scan_markers", lambda *a, **k: (True, real(*a, **k)[1]))
    full = stf_parser._POOL.full
    parse = full.parse
    calls: list[int] = []

    def counted(*a: Any, **k: Any) -> Any:
        calls.append(1)
        return parse(*a, **k)

    monkeypatch.setattr(full, "parse", counted)
    return calls
