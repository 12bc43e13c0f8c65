"""Every README task through the library only (tests/notebook.py, a notebook-style
script), and the displays a notebook shows of what it made stay short."""

from __future__ import annotations

import runpy

import pytest
from helpers import HAVE_PYVISTA, REPO

import tdbtools

#: A notebook shows a repr or an HTML table of each object: it must fit on a screen.
MAX_DISPLAY = 2000


def _renders() -> bool:
    if not HAVE_PYVISTA:
        return False
    from tdbtools.render import backend

    try:
        backend.check_renderer()
    except tdbtools.TdbToolsError:
        return False
    return True


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    out = tmp_path_factory.mktemp("notebook")
    return runpy.run_path(
        str(REPO / "tests" / "notebook.py"), init_globals={"OUT": out, "RENDER": _renders()}
    )


def test_every_readme_task_runs_through_the_library(notebook):
    shown = notebook["SHOWN"]
    for name in ("route", "audit", "location", "built path", "profile", "replay", "my replay", "activity"):
        assert name in shown, name
    assert notebook["act"].timetable  # an activity replayed
    assert (notebook["OUT"] / "activity-out" / "timetable.csv").is_file()
    assert (notebook["OUT"] / "replay-out" / "summary.json").is_file()
    assert (notebook["ROUTE"] / "PATHS" / "mine.pat").is_file()


def test_a_png_is_rendered_from_a_route(notebook):
    if not notebook["RENDER"]:
        pytest.skip("no offscreen rendering here (pyvista or OpenGL missing)")
    png = notebook["PNG"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "name",
    [
        "route",
        "tdb",
        "tsection",
        "audit",
        "location",
        "built path",
        "profile",
        "resolved path",
        "replay",
        "my replay",
        "activity",
        "signals",
        "sweep",
    ],
)
def test_displays_are_short(notebook, name):
    obj = notebook["SHOWN"].get(name)
    if obj is None:
        pytest.skip(f"{name}: not made here (an optional extra is missing)")
    text = repr(obj)
    assert len(text) < MAX_DISPLAY, f"{name}: repr of {len(text)} characters"
    assert type(obj).__name__ in text
    html = getattr(obj, "_repr_html_", None)
    if html is not None:
        page = html()
        assert len(page) < MAX_DISPLAY and page.startswith("<")


def test_a_route_with_a_hostile_name_displays_escaped(notebook):
    import dataclasses

    route = notebook["route"]
    bad = dataclasses.replace(route.trk, name="<script>alert(1)</script>" + "x" * 5000)
    shown = dataclasses.replace(route, trk=bad)
    assert "<script>" not in shown._repr_html_()
    assert len(repr(shown)) < MAX_DISPLAY


def test_lazy_names_complete():
    names = dir(tdbtools)
    for n in ("load_route", "stf", "formats", "track", "signals", "physics", "render", "export", "sweep"):
        assert n in names
        getattr(tdbtools, n)
    with pytest.raises(AttributeError):
        tdbtools.no_such_name  # noqa: B018


def test_python_m_tdbtools_is_the_command_line():
    import subprocess
    import sys

    p = subprocess.run(
        [sys.executable, "-m", "tdbtools", "--version"], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert p.returncode == 0 and p.stdout.startswith("tdbtools, version"), p.stderr


def test_a_display_is_bounded_whatever_it_is_given():
    from tdbtools._display import MAX_REPR, html_summary, short_repr

    facts = [(f"key{i}", "v" * 500) for i in range(100)]
    assert len(short_repr("Big", facts)) <= MAX_REPR
    assert len(html_summary("<b>" * 100, facts)) <= MAX_REPR
    assert "<b><b>" not in html_summary("<b>" * 100, facts)
