"""Paths shared by the tests (imported as a plain module; pytest puts tests/ on sys.path)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLE_INSTALL = REPO / "sample_routes" / "sample"
SAMPLE_ROUTE = SAMPLE_INSTALL / "ROUTES" / "SAMPLE"
DK24 = (REPO / ".." / "shared" / "routes" / "DK24").resolve()
DK24_ROUTE = DK24 / "ROUTES" / "OR_DK24"
DK24_TEST_ROUTE = DK24 / "ROUTES" / "OR_DK24TEST"


#: Whether pyvista is installed (looked up, not imported: importing it takes a second).
HAVE_PYVISTA = importlib.util.find_spec("pyvista") is not None
NO_PYVISTA = "pyvista is not installed (pip install 'tdbtools[render]')"
needs_pyvista = pytest.mark.skipif(not HAVE_PYVISTA, reason=NO_PYVISTA)


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
