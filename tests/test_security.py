"""Hostile files and settings (issue 15, docs/security.md): every test here failed on
the code before the fix it guards."""

from __future__ import annotations

import os
import stat
import time
import tracemalloc
from pathlib import Path

import pytest
from helpers import CpuTimer

from tdbtools import _fs
from tdbtools.errors import DecodeError, Diagnostics, IncludeError
from tdbtools.stf import parse_file


def _load_hostile():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "_tdbtools_hostile", Path(__file__).parent / "data" / "hostile.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


hostile = _load_hostile()

# -- outputs (docs/security.md §5) ------------------------------------------------------


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_new_file_follows_umask(tmp_path):
    old = os.umask(0o022)
    try:
        _fs.write_bytes_atomic(tmp_path / "a.txt", b"x")
        os.umask(0o077)
        _fs.write_bytes_atomic(tmp_path / "b.txt", b"x")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "a.txt") == 0o644
    assert _mode(tmp_path / "b.txt") == 0o600


def test_existing_file_keeps_its_mode(tmp_path):
    p = tmp_path / "keep.txt"
    p.write_bytes(b"old")
    p.chmod(0o640)
    _fs.write_bytes_atomic(p, b"new")
    assert p.read_bytes() == b"new" and _mode(p) == 0o640


def test_stale_temporary_files_are_removed_on_next_write(tmp_path):
    stale = tmp_path / ".out.csv.abc123.tmp"
    fresh = tmp_path / ".out.csv.def456.tmp"
    other = tmp_path / ".other.csv.xyz.tmp"
    for p in (stale, fresh, other):
        p.write_bytes(b"half")
    old = time.time() - 2 * _fs.STALE_TEMP_SECONDS
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    _fs.write_bytes_atomic(tmp_path / "out.csv", b"a,b\n")
    assert not stale.exists()
    assert fresh.exists(), "a temporary file of a live writer must survive"
    assert other.exists(), "only temporaries of the target being written are touched"


def test_one_overwrite_rule(tmp_path):
    p = tmp_path / "x.csv"
    assert _fs.check_target(p, False) == p
    p.write_text("1")
    with pytest.raises(_fs.OutputExistsError, match="exists"):
        _fs.check_target(p, False)
    assert _fs.check_target(p, True) == p
    with pytest.raises(_fs.OutputExistsError, match="folder"):
        _fs.check_target(tmp_path, True)
    with pytest.raises(_fs.OutputExistsError, match="does not exist"):
        _fs.check_target(tmp_path / "no" / "x.csv", True)


@pytest.mark.parametrize(
    "name, want",
    [
        ("DK24", "DK24"),
        ("../../etc/passwd", "passwd"),
        ("/abs/x", "x"),
        ("..", "route"),
        ("C:\\Windows\\evil", "evil"),
        ("a/..", "route"),
        ("CON", "_CON"),
        ("nul.txt", "_nul.txt"),
        ("", "route"),
        ("a\x00b", "a_b"),
        ("x" * 500, "x" * 120),
    ],
)
def test_safe_basename(name, want):
    assert _fs.safe_basename(name) == want


# -- bounded inflation (docs/security.md §4) --------------------------------------------


def test_default_limits_refuse_a_bomb_fast_and_small(tmp_path):
    # ~200 kB that inflates to 200 MB: the old 1 GiB cap inflated it all (and more).
    path = hostile.write_bomb(tmp_path / "tsection.dat", 200 << 20)
    assert path.stat().st_size < 400_000
    tracemalloc.start()
    try:
        with CpuTimer() as cpu, pytest.raises(DecodeError, match="zip bomb"):
            parse_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert cpu.seconds < 2.0
    assert peak < 150 << 20, f"peak {peak / 1e6:.0f} MB"


def test_real_ratio_under_the_limit_is_read(tmp_path):
    from tdbtools.stf import source

    text = "".join(f"A ( {i} {i * 7 % 13} )\r\n" for i in range(20000))
    data = hostile.bomb_bytes(0)[:16] + __import__("zlib").compress(
        b"JINX0T0t______\r\n" + text.encode("ascii")
    )
    p = tmp_path / "ok.dat"
    p.write_bytes(data)
    assert len(text) / (len(data) - 16) < source.MAX_INFLATE_RATIO
    doc = parse_file(p)
    assert len(doc.items) == 20000


# -- include confinement (docs/security.md §3) ------------------------------------------


SIG = "SIMISA@@@@@@@@@@JINX0P0t______\n\n"


def _write(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def test_lone_file_cannot_include_above_its_folder(tmp_path):
    # A home folder with a Trains folder: the old rule took it for an install root.
    home = tmp_path / "home"
    (home / "Trains").mkdir(parents=True)
    secret = _write(home / ".ssh" / "id_rsa", SIG + "Key ( SECRET )\n")
    pat = _write(
        home / "Downloads" / "evil.pat", "SIMISA@@@@@@@@@@JINX0P0t______\n\ninclude ( ../.ssh/id_rsa )\n"
    )
    with pytest.raises(IncludeError, match="outside"):
        parse_file(pat)
    diags = Diagnostics(strict=False)
    doc = parse_file(pat, diagnostics=diags)
    assert "SECRET" not in repr(doc.items)
    # An explicit root allows it.
    assert parse_file(pat, root=home).find("Key").items == ["SECRET"]
    assert secret.exists()


def test_lone_file_may_include_below_its_folder(tmp_path):
    _write(tmp_path / "parts" / "a.inc", SIG + "A ( 1 )\n")
    top = _write(tmp_path / "top.dat", "SIMISA@@@@@@@@@@JINX0P0t______\n\ninclude ( parts/a.inc )\n")
    assert parse_file(top).find("A").items == ["1"]


def test_install_includes_stay_in_the_install(tmp_path):
    inst = tmp_path / "inst"
    (inst / "Global").mkdir(parents=True)
    _write(inst / "GLOBAL" / "common.inc", SIG + "C ( 2 )\n")
    _write(tmp_path / "outside.inc", SIG + "O ( 3 )\n")
    f = _write(
        inst / "routes" / "R" / "x.dat",
        "SIMISA@@@@@@@@@@JINX0P0t______\n\ninclude ( ../../GLOBAL/common.inc )\n",
    )
    assert parse_file(f).find("C").items == ["2"]
    g = _write(
        inst / "routes" / "R" / "y.dat",
        "SIMISA@@@@@@@@@@JINX0P0t______\n\ninclude ( ../../../outside.inc )\n",
    )
    with pytest.raises(IncludeError, match="outside"):
        parse_file(g)


def test_the_install_is_looked_for_only_when_a_file_includes(tmp_path, monkeypatch):
    # The search lists every folder above the file: reading 313 .pat files one by one
    # listed their PATHS folder 313 times for nothing (none has an include).
    from tdbtools.stf import parser

    calls: list[Path] = []
    real = parser.find_install_root
    monkeypatch.setattr(parser, "find_install_root", lambda p: calls.append(p) or real(p))
    inst = tmp_path / "inst"
    (inst / "GLOBAL").mkdir(parents=True)
    plain = _write(inst / "ROUTES" / "R" / "plain.dat", SIG + "A ( 1 )\n")
    assert parse_file(plain).find("A").items == ["1"] and calls == []
    _write(tmp_path / "outside.inc", SIG + "O ( 3 )\n")
    g = _write(inst / "ROUTES" / "R" / "y.dat", SIG + "include ( ../../../outside.inc )\n")
    with pytest.raises(IncludeError, match="outside"):
        parse_file(g)
    assert calls == [g.resolve()]


def test_cli_parse_root_option(tmp_path):
    from click.testing import CliRunner

    from tdbtools.cli import main

    home = tmp_path / "home"
    (home / "Trains").mkdir(parents=True)
    _write(home / ".ssh" / "id_rsa", SIG + "Key ( SECRET )\n")
    pat = _write(
        home / "Downloads" / "evil.pat", "SIMISA@@@@@@@@@@JINX0P0t______\n\ninclude ( ../.ssh/id_rsa )\n"
    )
    r = CliRunner().invoke(main, ["parse", "--strict", str(pat)])
    assert r.exit_code == 2 and "SECRET" not in r.output
    r = CliRunner().invoke(main, ["parse", str(pat)])  # tolerated: the include is skipped, not read
    assert r.exit_code == 0 and "SECRET" not in r.output and "INCLUDE_BROKEN" in r.stderr
    r = CliRunner().invoke(main, ["parse", "--root", str(home), str(pat)])
    assert r.exit_code == 0 and "SECRET" in r.output


# -- the route cache (docs/security.md §1) ----------------------------------------------


@pytest.fixture
def sample_copy(tmp_path, monkeypatch):
    import shutil

    monkeypatch.setenv("TDBTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    dst = tmp_path / "inst"
    shutil.copytree(hostile.SAMPLE_INSTALL, dst)
    return dst / "ROUTES" / "SAMPLE"


class _Planted:
    """Pickled, this runs ``touch marker`` when unpickled."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_planted_cache_entry_cannot_run_code(sample_copy, tmp_path):
    import pickle
    import zlib

    from tdbtools.formats import cache, find_route_files, load_route

    good = load_route(sample_copy, cache=False)
    marker = tmp_path / "pwned"
    store = cache.RouteCache()
    files = find_route_files(sample_copy)
    entry = store._entry(files, True)
    entry.parent.mkdir(parents=True, exist_ok=True)
    payload = pickle.dumps(_Planted(marker))
    # Both the old layout (magic, pickled header) and a plain pickle, at the entry's name.
    header = pickle.dumps(_Planted(marker))
    old = b"TDBTOOLS-ROUTE-CACHE\n" + len(header).to_bytes(8, "little") + header + payload
    for data in (old, payload, cache._MAGIC + b"\0" * 12 + payload):
        entry.write_bytes(data)
        entry.chmod(0o600)
        assert store.get(files, True) is None
        assert load_route(sample_copy) == good
        assert not marker.exists()
    assert zlib.crc32(b"") == 0


def test_cache_round_trip_keeps_everything(sample_copy):
    from tdbtools.formats import cache, find_route_files, load_route

    (sample_copy / "tsection.dat").unlink()  # lenient findings must survive the cache
    cold = load_route(sample_copy, strict=False)
    warm = cache.RouteCache().get(find_route_files(sample_copy), False)
    assert warm is not None and warm is not cold
    assert warm == cold and warm.warnings == cold.warnings and warm.sources == cold.sources
    assert warm.section_length.flags.writeable == cold.section_length.flags.writeable


def test_cache_refuses_a_folder_others_can_write(sample_copy, tmp_path):
    from tdbtools.formats import cache, find_route_files, load_route

    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    folder.chmod(0o777)
    load_route(sample_copy)
    assert list(folder.iterdir()) == [], "nothing written into a folder others can write"
    # An entry that was there is not read either.
    folder.chmod(0o700)
    load_route(sample_copy)
    files = find_route_files(sample_copy)
    assert cache.RouteCache().get(files, True) is not None
    folder.chmod(0o777)
    assert cache.RouteCache().get(files, True) is None
    # Sticky (like /tmp): other users cannot replace this user's entries, so it is used.
    folder.chmod(0o1777)
    assert cache.RouteCache().get(files, True) is not None


def test_cache_ignores_entries_others_own_or_can_write(sample_copy):
    from tdbtools.formats import cache, find_route_files, load_route

    load_route(sample_copy)
    files = find_route_files(sample_copy)
    store = cache.RouteCache()
    entry = store._entry(files, True)
    entry.chmod(0o666)
    assert store.get(files, True) is None
    entry.chmod(0o600)
    assert store.get(files, True) is not None
    if os.getuid() == 0:  # only root can give a file away
        os.chown(entry, 54321, 54321)
        assert store.get(files, True) is None


def test_cache_removes_temporaries_of_killed_runs(sample_copy, tmp_path):
    from tdbtools.formats import cache, load_route

    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    stale = folder / ".tmp-abcd.route"
    stale.write_bytes(b"x" * 1000)
    old = time.time() - 2 * cache.STALE_TEMP_SECONDS
    os.utime(stale, (old, old))
    load_route(sample_copy)
    assert not stale.exists()


def test_damaged_cache_entries_are_ignored(sample_copy):
    import json

    from tdbtools.formats import cache, find_route_files, load_route

    good = load_route(sample_copy)
    files = find_route_files(sample_copy)
    store = cache.RouteCache()
    entry = store._entry(files, True)
    data = entry.read_bytes()
    pos = len(cache._MAGIC)
    n = int.from_bytes(data[pos : pos + 8], "little")
    header = json.loads(data[pos + 12 : pos + 12 + n])
    for bad in ([["os.system", 1, []]], [["Route", 10**9, []]], [["Route", 1, [["x"]]]]):
        body = data[pos + 12 + n :]
        doc = json.loads(body[: header["records"]])
        doc["classes"] = bad
        rec = json.dumps(doc).encode()
        h = dict(header, records=len(rec))
        hb = json.dumps(h).encode()
        pad = b"\0" * (-(pos + 12 + len(hb) + len(rec)) % 8)
        rest = rec + pad + body[header["records"] :].lstrip(b"\0")
        crc = __import__("zlib").crc32(rest)
        entry.write_bytes(
            cache._MAGIC + len(hb).to_bytes(8, "little") + crc.to_bytes(4, "little") + hb + rest
        )
        assert store.get(files, True) is None
    assert load_route(sample_copy) == good


# -- writes only inside --out, reads only inside the install (docs/security.md §3, §5) ---


@pytest.mark.parametrize("filename", ["../../escaped", "/tmp/abs_escape_tdbtools", "..\\..\\win", "CON"])
def test_convert_writes_only_inside_out(sample_copy, tmp_path, filename):
    import dataclasses

    from tdbtools.export import convert_route
    from tdbtools.formats import load_route

    r = load_route(sample_copy, cache=False)
    evil = dataclasses.replace(r, trk=dataclasses.replace(r.trk, filename=filename))
    out = tmp_path / "out" / "a"
    out.mkdir(parents=True)
    before = {p for p in tmp_path.rglob("*")}
    written = convert_route(evil, out)
    new = {p for p in tmp_path.rglob("*")} - before
    assert new and all(p.resolve().is_relative_to(out.resolve()) for p in new), new
    assert all(p.resolve().is_relative_to(out.resolve()) for p in written)
    assert not Path("/tmp/abs_escape_tdbtools.tdb").exists()
    # The route written is loadable and names the database it wrote.
    route_dir = out
    (route_dir.parent / "GLOBAL").mkdir(exist_ok=True)
    trk = next(p for p in written if p.suffix == ".trk")
    assert f'"{trk.stem}"' in trk.read_bytes().decode("utf-16")


def test_trk_filename_cannot_leave_the_route(sample_copy, tmp_path):
    from tdbtools.errors import RouteError
    from tdbtools.formats import load_route

    outside = tmp_path / "secret"
    outside.mkdir()
    import shutil

    shutil.copy(sample_copy / "SAMPLE.tdb", outside / "SAMPLE.tdb")
    trk = sample_copy / "SAMPLE.trk"
    text = trk.read_bytes().decode("utf-16")
    import re

    text = re.sub(r'FileName \( "?SAMPLE"? \)', 'FileName ( "../../../secret/SAMPLE" )', text, flags=re.I)
    assert "secret" in text
    trk.write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    with pytest.raises(RouteError, match="bare file name"):
        load_route(sample_copy, cache=False)
    r = load_route(sample_copy, cache=False, strict=False)  # the route's own SAMPLE.tdb
    assert any("UNSAFE_FILENAME" in str(w) for w in r.warnings)
    assert all("secret" not in s for s in r.sources)


def test_echoed_values_are_truncated():
    from tdbtools.errors import truncate_value
    from tdbtools.stf.units import split_quantity

    assert truncate_value("abc") == "'abc'"
    long = "9" * 5000 + "x"
    cut = truncate_value(long)
    assert len(cut) < 120 and "5001 characters" in cut
    with pytest.raises(ValueError) as exc:
        split_quantity(long)
    assert len(str(exc.value)) < 200


# -- limits on requested work (docs/security.md §2) -------------------------------------


@pytest.mark.parametrize(
    "step, duration",
    [
        (0.0, 60.0),
        (-0.1, 60.0),
        (float("nan"), 60.0),
        (float("inf"), 60.0),
        (2.0, 60.0),
        (0.1, 0.0),
        (0.1, float("inf")),
        (0.1, -5.0),
        (1e-4, 1e7),
        (0.001, 1e6),
    ],
)
def test_replay_step_and_duration_limits(step, duration):
    from tdbtools.physics.scenario import Scenario, ScenarioError, TrainSpec

    with pytest.raises(ScenarioError):
        Scenario(
            Path("r"), (TrainSpec(name="a", consist=Path("c"), path=Path("p")),), step=step, duration=duration
        )


def test_toml_allows_no_more_steps_than_the_limit(tmp_path):
    from tdbtools.physics.scenario import ScenarioError, scenario_from_text

    base = 'route = "R"\n[[train]]\nname = "a"\nconsist = "c"\npath = "p"\n'
    # Accepted by the old limits (which allowed 1e11 steps): 1e10 steps.
    with pytest.raises(ScenarioError, match="steps, over the limit") as exc:
        scenario_from_text("step = 1e-4\nduration = 1e6\n" + base, "s.toml")
    assert exc.value.line == 2
    with pytest.raises(ScenarioError, match="step"):
        scenario_from_text("step = 5\n" + base, "s.toml")
    sc = scenario_from_text("step = 1.0\nduration = 86400\n" + base, "s.toml")
    assert sc.step == 1.0


@pytest.mark.parametrize(
    "args",
    [
        ["--step", "0"],
        ["--step", "nan"],
        ["--step", "-1"],
        ["--step", "2"],
        ["--duration", "inf"],
        ["--duration", "0"],
        ["--step", "0.0001", "--duration", "999999"],
    ],
)
def test_cli_replay_validates_step_and_duration(args, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from tdbtools.cli import main

    monkeypatch.setenv("TDBTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    with CpuTimer() as cpu:
        r = CliRunner().invoke(main, ["replay", "--out", str(tmp_path / "o"), *args])
    assert r.exit_code == 2, r.output
    assert "step" in r.output or "duration" in r.output
    assert cpu.seconds < 10
    assert not (tmp_path / "o").exists()


def test_sweep_counts_combinations_before_building_them(tmp_path):
    import shutil

    from tdbtools.sweep.spec import TooManyCombinations, read_sweep_spec

    inst = tmp_path / "sample"
    shutil.copytree(hostile.SAMPLE_INSTALL, inst)
    grid = "\n".join(
        f"{k} = [{', '.join(str(i) for i in range(30))}]"
        for k in ("beyond_path", "start_speed", "deceleration", "start_offset")
    )
    spec = inst / "big.toml"
    spec.write_text(
        f'route = "ROUTES/SAMPLE"\npaths = ["*.pat"]\nconsists = ["sample_passenger"]\n[grid]\n{grid}\n',
        encoding="utf-8",
    )
    with CpuTimer() as cpu, pytest.raises(TooManyCombinations, match="3,240,000 combinations") as exc:
        read_sweep_spec(spec)
    assert cpu.seconds < 2
    assert "--max-combinations" in str(exc.value)
    small = inst / "small.toml"
    small.write_text(
        'route = "ROUTES/SAMPLE"\npaths = ["*.pat"]\nconsists = ["sample_passenger"]\n'
        "[grid]\nbeyond_path = [0, 100]\n",
        encoding="utf-8",
    )
    with pytest.raises(TooManyCombinations):  # the sample's 4 paths x 2 values
        read_sweep_spec(small, max_combinations=7)
    assert len(read_sweep_spec(small, max_combinations=8).combinations) == 8


# -- geometry validated at load; the spatial index bounded (docs/security.md §2) --------


@pytest.mark.parametrize(
    "sid, size, curve, why",
    [
        (2, "1.5 -100", None, "negative"),
        (5, "1.5 0", "0 -5", "not positive"),
        (5, "1.5 0", "-500 -5", "not positive"),
        (5, "1.5 0", "500 1e30", "full turn"),
        (8, "1.5 0", "500 -400", "full turn"),
    ],
)
def test_impossible_geometry_strict_and_lenient(sample_copy, sid, size, curve, why):
    from tdbtools.errors import FormatError
    from tdbtools.formats import load_route

    hostile.set_section(sample_copy.parents[1], sid, size, curve)
    with pytest.raises(FormatError, match=f"BAD_SECTION_GEOMETRY: TrackSection {sid}: .*{why}"):
        load_route(sample_copy, cache=False)
    r = load_route(sample_copy, cache=False, strict=False)
    found = [str(w) for w in r.warnings if str(w.message).startswith("BAD_SECTION_GEOMETRY")]
    assert any(f"TrackSection {sid}" in w and "node" in w for w in found), found
    assert r.track_km < 1e3  # the bad section adds nothing (was 9.3e29 km for angle 1e30)


def test_degenerate_real_world_curves_still_load(tmp_path):
    from tdbtools.formats.tsection import geometry_problem

    # DK24 holds route-local curves of radius 5.2e-43 and 30 rad; and zero-length straights.
    assert geometry_problem(1.5, 0.0, 5.19882e-43, 1718.87) is None
    assert geometry_problem(1.5, 0.0, float("nan"), float("nan")) is None
    assert geometry_problem(1.5, float("inf"), float("nan"), float("nan")) is not None


def test_tdb_positions_beyond_any_tile_are_refused(sample_copy):
    import re

    from tdbtools.errors import FormatError
    from tdbtools.formats import load_route

    tdb = sample_copy / "SAMPLE.tdb"
    raw = tdb.read_bytes()
    text = raw.decode("utf-16") if raw[:2] == b"\xff\xfe" else raw.decode("utf-8")
    # The first vector section: 16 values; the 13th is X in its tile.
    m = re.search(r"TrVectorSections \( \d+ ((?:\S+ ){12})(\S+)", text)
    assert m
    text = text[: m.start(2)] + "1e300" + text[m.end(2) :]
    tdb.write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    with pytest.raises(FormatError, match="BAD_SECTION_GEOMETRY"):
        load_route(sample_copy, cache=False)
    r = load_route(sample_copy, cache=False, strict=False)
    assert any("BAD_SECTION_GEOMETRY" in str(w) for w in r.warnings)


@pytest.mark.parametrize("length", [1e6, 1e7])
def test_spatial_index_memory_is_bounded_for_long_sections(sample_copy, length):
    from tdbtools.formats import load_route
    from tdbtools.track.geometry import point_at
    from tdbtools.track.spatial import SectionGrid, track_geometry

    hostile.set_section(sample_copy.parents[1], 2, f"1.5 {length:g}")
    r = load_route(sample_copy, cache=False)
    geom = track_geometry(r)
    tracemalloc.start()
    try:
        with CpuTimer() as cpu:
            grid = SectionGrid.build(geom)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert cpu.seconds < 10
    assert peak < 300 << 20, f"{peak / 1e6:.0f} MB"
    # Still exact: a point on the far end of the long section finds it.
    row = int(next(i for i in range(len(geom.length)) if geom.length[i] == length))
    p = point_at(geom, row, length * 0.999, 1.0)
    X = float(p.tile_x) * 2048 + float(p.x)
    Z = float(p.tile_z) * 2048 + float(p.z)
    assert row in grid.candidates(X, Z).tolist()


# -- one overwrite rule for every command that writes (docs/security.md §5) --------------


def _cli(*args: str):
    from click.testing import CliRunner

    from tdbtools.cli import main

    return CliRunner().invoke(main, list(args))


def test_profile_refuses_to_overwrite_csv_and_plot(sample_copy, tmp_path):
    pat = sample_copy / "PATHS" / "MainWE.pat"
    for opt, name in (("--csv", "p.csv"), ("--plot", "p.png")):
        target = tmp_path / name
        target.write_text("keep")
        r = _cli("profile", str(sample_copy), "--path", str(pat), opt, str(target))
        assert r.exit_code == 2 and "exists" in r.output, r.output
        assert target.read_text() == "keep"
    target = tmp_path / "p.csv"
    r = _cli("profile", str(sample_copy), "--path", str(pat), "--csv", str(target), "--overwrite")
    assert r.exit_code == 0, r.output
    assert target.read_text().startswith("distance")


def test_render_refuses_to_overwrite(sample_copy, tmp_path):
    target = tmp_path / "r.png"
    target.write_text("keep")
    r = _cli("render", str(sample_copy), "--out", str(target))
    assert r.exit_code == 2 and "exists" in r.output, r.output
    assert target.read_text() == "keep"


def test_replay_out_folder_reuse_rule(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "summary.json").write_text("{}")
    r = _cli("replay", "--out", str(out), "--duration", "5")
    assert r.exit_code == 2 and "not empty" in r.output, r.output
    assert (out / "summary.json").read_text() == "{}"
    r = _cli("replay", "--out", str(out), "--duration", "5", "--overwrite")
    assert r.exit_code == 0, r.output
    assert (out / "summary.json").read_text() != "{}"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _cli("replay", "--out", str(empty), "--duration", "5").exit_code == 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["profile", "{R}", "--path", "{R}/PATHS/MainWE.pat", "--step", "1e-300"], "over the limit"),
        (["profile", "{R}", "--path", "{R}/PATHS/MainWE.pat", "--step", "inf"], "finite"),
        (
            [
                "profile",
                "{R}",
                "--from-tile",
                "-5680",
                "15116",
                "--from-pos",
                "nan",
                "0",
                "--distance",
                "100",
            ],
            "finite",
        ),
        (["audit", "{R}", "--gap", "nan"], "finite"),
        (["audit", "{R}", "--gap", "-1"], "finite"),
        (["export", "{R}", "--format", "csv", "--step", "1e-300"], "over the limit"),
        (["locate", "{R}", "--tile", "0", "0", "--pos", "1e308", "1e308"], "1e+308"),
    ],
)
def test_requested_work_is_bounded_and_echoes_are_short(sample_copy, args, message):
    with CpuTimer() as cpu:
        r = _cli(*[a.replace("{R}", str(sample_copy)) for a in args])
    assert r.exit_code == 2, r.output
    assert message in r.output
    assert max(len(line) for line in r.output.splitlines()) < 400
    assert cpu.seconds < 10
