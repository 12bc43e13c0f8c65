"""Route loading (finding the files as Open Rails does) and the on-disk cache."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers import DK24_ROUTE, DK24_TEST_ROUTE, SAMPLE_INSTALL, SAMPLE_ROUTE, CpuTimer, needs_dk24

import tdbtools
from tdbtools.errors import FormatError, RouteError
from tdbtools.formats import find_route_files, load_route
from tdbtools.formats.cache import RouteCache


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TDBTOOLS_CACHE_DIR", str(tmp_path / "cache"))


def copy_sample(tmp_path: Path) -> Path:
    dst = tmp_path / "install"
    shutil.copytree(SAMPLE_INSTALL, dst)
    return dst / "ROUTES" / "SAMPLE"


def test_sample_route_loads():
    r = tdbtools.load_route(SAMPLE_ROUTE, cache=False)
    s = r.summary()
    assert s["nodes"] == {"vector": 3, "junction": 1, "end": 3, "total": 7}
    assert s["sections"] == 17 and 1.5 < s["track_km"] < 3
    assert r.warnings == ()
    assert r.node_length(2) > 0 and r.node_length(3) == 0


def test_files_found_in_open_rails_order(tmp_path):
    route = copy_sample(tmp_path)
    files = find_route_files(route)
    assert files.tsection_global == (route.parent.parent / "GLOBAL" / "tsection.dat").resolve()
    # A route GLOBAL folder wins over the install's; an OPENRAILS override over both.
    (route / "GLOBAL").mkdir()
    shutil.copy(files.tsection_global, route / "GLOBAL" / "tsection.dat")
    assert find_route_files(route).tsection_global.parent == (route / "GLOBAL").resolve()
    (route / "OpenRails").mkdir()
    (route / "OpenRails" / "tsection.dat").write_text('\ninclude ( "../../../GLOBAL/tsection.dat" )\n')
    assert find_route_files(route).tsection_global.parent.name == "OpenRails"
    assert load_route(route, cache=False).summary()["sections"] == 17


def test_not_a_route_folder(tmp_path):
    with pytest.raises(RouteError, match="no .trk"):
        load_route(tmp_path)
    with pytest.raises(RouteError, match="not found"):
        load_route(tmp_path / "missing")


def test_strict_raises_and_lenient_warns_on_unknown_sections(tmp_path):
    route = copy_sample(tmp_path)
    local = route / "tsection.dat"
    local.unlink()  # the dynamic-track sections are now unknown
    with pytest.raises(FormatError, match="not in tsection.dat"):
        load_route(route, cache=False)
    r = load_route(route, cache=False, strict=False)
    assert len(r.warnings) == 4 and all("not in tsection.dat" in w.message for w in r.warnings)
    assert {w.section for w in r.warnings} == {40000, 40001, 40002, 40003}
    assert r.track_km < load_route(SAMPLE_ROUTE, cache=False).track_km


def test_cache_hits_and_is_rebuilt_when_stale(tmp_path):
    route = copy_sample(tmp_path)
    cold = load_route(route)
    store = RouteCache()
    files = find_route_files(route)
    assert store.get(files, True) is not None
    assert load_route(route) == cold
    # Touching a source file makes the entry stale.
    tdb = route / "SAMPLE.tdb"
    st = tdb.stat()
    os.utime(tdb, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert store.get(files, True) is None
    assert load_route(route) == cold
    # A new override file that would change which files are read makes it stale too.
    assert store.get(files, True) is not None
    (route / "OPENRAILS").mkdir()
    (route / "OPENRAILS" / "tsection.dat").write_text('\ninclude ( "../../../GLOBAL/tsection.dat" )\n')
    assert store.get(find_route_files(route), True) is None


def test_corrupt_cache_is_never_used(tmp_path):
    route = copy_sample(tmp_path)
    good = load_route(route)
    entries = list((tmp_path / "cache").glob("*.route"))
    assert len(entries) == 1
    data = bytearray(entries[0].read_bytes())
    data[-20] ^= 0xFF  # flip a byte in the payload
    entries[0].write_bytes(bytes(data))
    assert RouteCache().get(find_route_files(route), True) is None
    assert load_route(route) == good
    entries[0].write_bytes(b"garbage")
    assert load_route(route) == good


def test_strict_and_lenient_are_cached_apart(tmp_path):
    route = copy_sample(tmp_path)
    (route / "tsection.dat").unlink()
    lenient = load_route(route, strict=False)
    assert lenient.warnings
    with pytest.raises(FormatError):
        load_route(route, strict=True)
    assert load_route(route, strict=False).warnings == lenient.warnings


@needs_dk24
def test_dk24_route_summary_and_warm_cache():
    with CpuTimer() as cold_cpu:
        cold = load_route(DK24_ROUTE)
    with CpuTimer() as warm_cpu:
        warm = load_route(DK24_ROUTE)
    assert warm == cold
    s = cold.summary()
    assert s["nodes"] == {"vector": 1381, "junction": 819, "end": 321, "total": 2521}
    assert s["sections"] == 18562
    assert s["items"] == {"crossover": 124, "platform": 6, "signal": 95, "speedpost": 102}
    assert 800 < s["track_km"] < 850
    assert warm_cpu.seconds < cold_cpu.seconds  # the ratio itself is measured by benchmarks/bench_load.py


@needs_dk24
def test_dk24_test_route_shares_the_global_tsection():
    r = load_route(DK24_TEST_ROUTE, cache=False)
    assert r.summary()["nodes"]["total"] == 151
