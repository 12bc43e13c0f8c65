"""Nothing a file names is read outside the route or the install (issue 32, docs/security.md §3),
and sizes are checked before reading (§2)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from test_security import hostile

from tdbtools import _fs
from tdbtools.errors import TdbToolsError
from tdbtools.formats import world
from tdbtools.formats.consist import read_consist, resolve_stock
from tdbtools.formats.route import load_route
from tdbtools.formats.sigcfg import read_sigcfg
from tdbtools.signals.objects import load_signals
from tdbtools.signals.script import ScriptError, read_scripts

SIGNALS = Path("ROUTES") / "SIGNALS"


def _utf16(text: str) -> bytes:
    return b"\xff\xfe" + text.replace("\n", "\r\n").encode("utf-16-le")


def _with_script_files(dst: Path, names: list[str]) -> None:
    cfg = dst / "sigcfg.dat"
    raw = cfg.read_bytes()
    text = raw[2:].decode("utf-16-le") if raw[:2] == b"\xff\xfe" else raw.decode()
    files = "".join(f"\tScriptFile ( {n} )\r\n" for n in names)
    text = text.replace("\tScriptFile ( sigscr.dat )\r\n", files)
    cfg.write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))


@pytest.fixture
def inst(tmp_path, monkeypatch):
    monkeypatch.setenv("TDBTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(_fs.FOLLOW_LINKS_ENV, raising=False)
    shutil.copytree(hostile.SAMPLE_INSTALL, tmp_path / "inst")
    world._MEMO.clear()
    yield tmp_path / "inst"
    world._MEMO.clear()


@pytest.mark.parametrize(
    "name", ["/etc/passwd", "../../../secret.dat", '"..\\\\secret.dat"', '"C:\\\\x\\\\sigscr.dat"']
)
def test_sigcfg_script_file_names_stay_in_the_route(inst, tmp_path, name):
    (tmp_path / "secret.dat").write_text("SCRIPT B3\nstate = 7;\n")
    dst = inst / SIGNALS
    _with_script_files(dst, [name, "sigscr.dat"])
    cfg = read_sigcfg(dst / "sigcfg.dat")
    assert cfg.script_files == ("sigscr.dat",)
    assert any("not a name inside the route" in w.message for w in cfg.warnings)
    with pytest.raises(TdbToolsError, match="not a name inside the route"):
        read_sigcfg(dst / "sigcfg.dat", strict=True)


def test_a_script_file_linked_out_of_the_route_is_not_read(inst, tmp_path, monkeypatch):
    secret = tmp_path / "elsewhere" / "sigscr.dat"
    secret.parent.mkdir()
    dst = inst / SIGNALS
    shutil.move(dst / "sigscr.dat", secret)
    (dst / "sigscr.dat").symlink_to(secret)
    route = load_route(dst, cache=False)
    s = load_signals(route, cache=False)
    assert not s.scripts and any("leads outside the route" in w.message for w in s.warnings)
    monkeypatch.setenv(_fs.FOLLOW_LINKS_ENV, "1")  # the user asks for it
    assert load_signals(route, cache=False).scripts


def test_script_size_is_checked_before_reading(tmp_path, monkeypatch):
    p = tmp_path / "big.dat"
    with open(p, "wb") as fh:
        fh.truncate(64 << 20)  # sparse: costs no disk, 64 MiB if read
    read = []
    real = os.read

    def spy(fd, n):
        read.append(n)
        return real(fd, n)

    monkeypatch.setattr(os, "read", spy)
    with pytest.raises(ScriptError, match="larger than"):
        read_scripts(p)
    assert sum(read) == 0


def test_read_bounded_stops_at_the_limit(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"x" * 100)
    assert _fs.read_bounded(p, 100) == b"x" * 100
    with pytest.raises(_fs.FileTooLargeError):
        _fs.read_bounded(p, 99)


CON = """SIMISA@@@@@@@@@@JINX0D0t______

Train (
\tTrainCfg ( "hostile"
\t\tName ( "hostile" )
{cars}
\t)
)
"""


def _consist(tmp_path: Path, cars: str) -> Path:
    p = tmp_path / "h.con"
    p.write_bytes(_utf16(CON.replace("{cars}", cars)))
    return p


def test_a_consist_without_cars_is_a_located_error_also_lenient(tmp_path):
    p = _consist(tmp_path, "")
    for strict in (True, False):
        with pytest.raises(TdbToolsError, match="no cars") as e:
            read_consist(p, strict=strict)
        assert e.value.location is not None and e.value.location.line >= 4


@pytest.mark.parametrize(
    ("file", "folder"),
    [("passwd", "/etc"), ("x", "../../../../tmp"), ("../../x", "F"), ("x", "C:\\\\Windows")],
)
def test_stock_names_stay_in_trainset(tmp_path, file, folder):
    wagon = f"\t\tWagon ( UiD ( 1 ) WagonData ( {file} {folder} ) )\n"
    good = "\t\tWagon ( UiD ( 2 ) WagonData ( Sample_Eanos SAMPLE_FREIGHT ) )\n"
    p = _consist(tmp_path, wagon + good)
    with pytest.raises(TdbToolsError, match="inside TRAINS/TRAINSET"):
        read_consist(p)
    c = read_consist(p, strict=False)
    assert [car.file for car in c.cars] == ["Sample_Eanos"]


def test_stock_linked_out_of_the_install_is_refused_unless_asked(inst, tmp_path, monkeypatch):
    trainset = inst / "TRAINS" / "TRAINSET"
    outside = tmp_path / "outside"
    shutil.move(trainset / "SAMPLE_FREIGHT", outside)
    (trainset / "SAMPLE_FREIGHT").symlink_to(outside)
    c = read_consist(inst / "TRAINS" / "CONSISTS" / "sample_freight.con")
    with pytest.raises(TdbToolsError, match="leads outside the install"):
        resolve_stock(c, inst)
    monkeypatch.setenv(_fs.FOLLOW_LINKS_ENV, "1")
    assert len(resolve_stock(c, inst)) == len(c.cars)


# -- writers (docs/security.md §5) ---------------------------------------------------------


def test_atomic_output_never_follows_a_planted_link(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out" / "X.png"
    out.parent.mkdir()
    for name in (".X.png.tmp.png", ".X.png.tmp", ".X.png.tmp.html", "X.png.tmp"):
        (out.parent / name).symlink_to(victim)
    with _fs.atomic_output(out) as tmp:
        assert tmp.parent == out.parent and tmp.suffix == ".png" and not tmp.is_symlink()
        tmp.write_bytes(b"picture")
    assert out.read_bytes() == b"picture" and victim.read_text() == "precious"


def test_atomic_output_leaves_nothing_when_the_writer_fails(tmp_path):
    out = tmp_path / "X.gif"
    out.write_bytes(b"old")
    with pytest.raises(RuntimeError), _fs.atomic_output(out) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("killed")
    assert out.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["X.gif"]


def test_save_figure_goes_through_a_private_temporary_file(tmp_path):
    pytest.importorskip("matplotlib")
    from tdbtools.render.plots import pyplot, save_figure

    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / ".p.png.tmp.png").symlink_to(victim)
    fig = pyplot().figure()
    save_figure(fig, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG" and victim.read_text() == "precious"


def test_no_writer_uses_a_predictable_temporary_name():
    # Every temporary file is made by _fs (mkstemp): no writer builds a ".tmp" name itself.
    root = Path(__file__).resolve().parents[1] / "tdbtools"
    offenders = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if p.name not in ("_fs.py", "_outputs.py") and ('.tmp"' in p.read_text() or ".tmp{" in p.read_text())
    ]
    assert offenders == []


def test_signals_strict_refuses_a_defective_script(inst):
    from click.testing import CliRunner

    from tdbtools.cli import main

    dst = inst / SIGNALS
    with open(dst / "sigscr.dat", "ab") as fh:
        fh.write("\r\nSCRIPT BROKEN\r\nstate = (1 + ;\r\n".encode("utf-16-le"))  # the file is UTF-16
    r = CliRunner().invoke(main, ["signals", str(dst)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["signals", str(dst), "--strict"])
    assert r.exit_code == 2 and "signalling defect" in r.output
    r = CliRunner().invoke(main, ["signals", str(inst / "ROUTES" / "SAMPLE"), "--strict"])
    assert r.exit_code == 0, r.output  # no signalling at all is no defect


@pytest.mark.parametrize("kind", ["pat", "world"])
def test_over_large_path_and_world_files_are_refused_before_parsing(tmp_path, monkeypatch, kind):
    from tdbtools.formats import pat as pat_mod
    from tdbtools.formats import world as world_mod
    from tdbtools.formats.pat import read_pat
    from tdbtools.formats.world import read_world

    limit = pat_mod.MAX_PAT_BYTES if kind == "pat" else world_mod.MAX_WORLD_BYTES
    p = tmp_path / ("big.pat" if kind == "pat" else "w-000001+000001.w")
    with open(p, "wb") as fh:
        fh.write(b"SIMISA@@@@@@@@@@JINX0P0t______\n\n")
        fh.truncate(limit + 1)  # sparse: a million nodes' worth costs no disk
    parsed = []
    monkeypatch.setattr(pat_mod, "parse_file", lambda *a, **k: parsed.append(1))
    monkeypatch.setattr(world_mod, "parse_file", lambda *a, **k: parsed.append(1))
    for strict in (True, False):
        with pytest.raises(TdbToolsError, match="more than the limit") as e:
            (read_pat if kind == "pat" else read_world)(p, strict=strict)
        assert (e.value.location.line, e.value.location.column) == (1, 1)
    assert parsed == []


@pytest.mark.parametrize(
    "rel",
    [
        "ROUTES/SAMPLE/SAMPLE.tdb",
        "ROUTES/SAMPLE/SAMPLE.trk",
        "ROUTES/SAMPLE/tsection.dat",
        "GLOBAL/tsection.dat",
    ],
)
def test_route_files_linked_out_of_the_install_are_refused(inst, tmp_path, monkeypatch, rel):
    """A route's own files (.trk, .tdb, tsection.dat) are checked like every other link
    (docs/security.md §3): one leading outside the install is not read, cached or not,
    unless the user asks for it."""
    from tdbtools.errors import RouteError

    folder = inst / "ROUTES" / "SAMPLE"
    good = load_route(folder)  # (cached now)
    outside = tmp_path / "elsewhere" / Path(rel).name
    outside.parent.mkdir()
    shutil.move(inst / rel, outside)
    (inst / rel).symlink_to(outside)
    with pytest.raises(RouteError, match="leads outside the install"):
        load_route(folder)
    with pytest.raises(RouteError, match="leads outside the install"):
        load_route(folder, cache=False)
    monkeypatch.setenv(_fs.FOLLOW_LINKS_ENV, "1")
    assert load_route(folder) == good


def test_route_files_linked_inside_the_install_are_read(inst):
    folder = inst / "ROUTES" / "SAMPLE"
    good = load_route(folder, cache=False)
    shutil.move(folder / "SAMPLE.tdb", inst / "SAMPLE.tdb")
    (folder / "SAMPLE.tdb").symlink_to(inst / "SAMPLE.tdb")
    assert load_route(folder) == good
