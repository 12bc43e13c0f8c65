# ruff: noqa: E402, B018
"""Every task of README.md done through the library only, as in a notebook, cell by cell.

tests/test_notebook.py runs this file (``runpy``) with ``OUT`` (a temporary folder) and
``RENDER`` (whether offscreen pictures work here) set, then checks what the cells left
in ``SHOWN``: every object a notebook would display, whose repr and HTML summary must
stay short. Run by hand: ``python tests/notebook.py`` (writes into a temporary folder).
"""

# %% set-up: where the outputs go, and what a notebook would display
import shutil
import tempfile
from pathlib import Path

OUT = Path(globals().get("OUT") or tempfile.mkdtemp(prefix="tdbtools-notebook-"))
RENDER = bool(globals().get("RENDER", True))
SHOWN: dict[str, object] = {}  # name -> object a notebook cell would end with


def show(name: str, obj: object) -> object:
    SHOWN[name] = obj
    return obj


# The sample install copied, so that a built path can be written into the route.
import tdbtools
from tdbtools.cli import bundled_sample_route

INSTALL = OUT / "sample"
shutil.copytree(bundled_sample_route().parents[1], INSTALL)
ROUTE = INSTALL / "ROUTES" / "SAMPLE"

# %% info: load and summarise a route (tdbtools info)
route = tdbtools.load_route(ROUTE, strict=False)
show("route", route)
info = route.summary()
assert info["nodes"]["total"] > 0 and info["track_km"] > 0
show("tdb", route.tdb)
show("tsection", route.tsection)

# %% parse: any STF file as a generic tree (tdbtools parse)
doc = tdbtools.stf.parse_file(ROUTE / "SAMPLE.trk")
assert doc.find("Tr_RouteFile") is not None
tree = doc.to_json()

# %% audit: defects and paths (tdbtools audit)
report = show("audit", tdbtools.track.audit_route(route, paths=True))
assert report.path_resolution is not None

# %% locate: the track at a world point (tdbtools locate --at TX,TZ,X,Z)
point = tdbtools.track.parse_world_point("-5631,15116,-43,-364.7")
where = show("location", tdbtools.track.locate_point(route, *point))
assert where.node == 2

# %% path: build one and write it (tdbtools path --from --to --out)
built = show("built path", tdbtools.track.build_path(route, "Sampleby", "1"))
pat = tdbtools.track.write_path(route, built, ROUTE / "PATHS" / "mine.pat")
try:
    tdbtools.track.write_path(route, built, pat)  # as on the command line: never replaced silently
    raise AssertionError("an existing .pat was overwritten")
except FileExistsError:
    pass

# %% profile: along a path given by name, as the command takes it (tdbtools profile --path)
prof = show("profile", tdbtools.track.profile_path(route, "MainWE.pat"))
assert len(prof) > 10
resolved = show("resolved path", tdbtools.track.resolve_path(route, "mine.pat"))
assert resolved.ok

# %% replay: the bundled scenario, with the command's options as keywords (tdbtools replay)
from tdbtools.physics import one_train_scenario, replay

scenario_file = INSTALL / "replay.toml"
result = show("replay", replay(scenario_file, duration=120.0))
assert result.summary["trains"]
result.write(OUT / "replay-out")

# One train on the built path, running on past its end (--route/--consist/--path --beyond-path)
one = one_train_scenario(ROUTE, "sample_passenger", "mine.pat", stand_in=True, beyond_path=50.0)
mine = show("my replay", replay(one, route=route))
assert mine.summary["trains"]["sample_passenger"]["distance_m"] > 0

# %% an activity: player and AI services with a timetable (tdbtools replay X.act)
act = show("activity", replay(ROUTE / "ACTIVITIES" / "Morning.act", route=route))
assert act.timetable and not act.failed
act.write(OUT / "activity-out")

# %% signals (tdbtools signals)
signal_data = tdbtools.signals.signal_report(route)
show("signals", tdbtools.signals.load_signals(route))

# %% export and convert (tdbtools export, tdbtools convert)
model_json = tdbtools.export.export_route(route, "json")  # the whole model, lossless
try:
    import pyproj  # noqa: F401  (CSV and GeoJSON carry longitude/latitude: tdbtools[geo])
except ImportError:
    pass
else:
    csv_text = tdbtools.export.export_route(route, "csv", step=25.0)
tdbtools.export.export_route(route, "vtk", OUT / "route.vtp")
(OUT / "converted").mkdir()
written = tdbtools.export.convert_route(route, OUT / "converted")
assert written

# %% sweep: every path x consist x parameter (tdbtools sweep), on a small local cluster
try:
    import distributed  # noqa: F401
except ImportError:
    pass
else:
    spec = OUT / "sweep.toml"
    spec.write_text(
        f'route = "{ROUTE.as_posix()}"\npaths = ["MainWE.pat"]\nconsists = ["sample_passenger"]\n'
        'duration = 300\n[grid]\nmax_speed = ["40km/h", "60km/h"]\n',
        encoding="utf-8",
    )
    swept = show(
        "sweep",
        tdbtools.sweep.run_sweep(spec, out=OUT / "sweep-out", workers=1, processes=False, dashboard=False),
    )
    assert swept.summary()["ok"] == 2

# %% render: a PNG straight from the route, and a page (tdbtools render)
PNG = OUT / "route.png"
if RENDER:
    tdbtools.render.render_png(route, PNG, window_size=(320, 240))
    assert PNG.stat().st_size > 1000
try:
    import plotly  # noqa: F401
except ImportError:
    pass
else:
    tdbtools.render.write_html(route, OUT / "route.html")

# %% compile: the replay's kernels now (tdbtools compile)
kernels = tdbtools.physics.compile_kernels()

# %% errors are the builtins a caller catches without knowing tdbtools
try:
    tdbtools.load_route(OUT / "no such route")
    raise AssertionError("a missing route loaded")
except FileNotFoundError as exc:
    assert isinstance(exc, tdbtools.TdbToolsError)
try:
    tdbtools.track.parse_world_point("1 2 3 4")
    raise AssertionError("a point with spaces was taken")
except ValueError as exc:
    assert isinstance(exc, tdbtools.TdbToolsError)
