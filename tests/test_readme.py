"""Every code example in README.md runs as written (issue 10).

The command list is run line by line on the sample route and on a synthetic route with
real-world defects (tests/data/realworld.py): placeholders become real files, optional
``[...]`` parts are left out, and every command must exit 0 without a special flag
(``audit``: 0 or 1). The Python and TOML examples run on DK24 when it is present.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import DK24_ROUTE, REPO, SAMPLE_INSTALL, SAMPLE_ROUTE, needs_dk24

from tdbtools.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))
import realworld  # noqa: E402

README = (REPO / "README.md").read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def command_lines() -> list[str]:
    """The lines of the README's command list (comments cut off)."""
    block = README.split("## Command line", 1)[1]
    body = _blocks_in(block, "sh")[0]
    lines: list[str] = []
    for raw in body.splitlines():
        line = raw.split("  #")[0].strip()
        if not line:
            continue
        if line.startswith("tdbtools") or not lines:
            lines.append(line)
        else:  # a continuation of the command above
            lines[-1] += " " + line
    return lines


def _blocks_in(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


@dataclass
class Ctx:
    route: Path
    consist: str
    path: str
    stf_file: Path
    spec: Path
    tile: tuple[str, str]
    pos: tuple[str, str]
    places: tuple[str, str] = ("1", "3")  # two track nodes for `path --from --to`
    keep: set[str] = field(default_factory=set)  # optional groups to keep (e.g. --stand-in)


def concrete(line: str, ctx: Ctx, tmp: Path) -> list[str]:
    """The argv of a README command line for ``ctx``."""

    def optional(m: re.Match) -> str:
        group = m.group(0)
        return " " + group.strip(" []") if any(k in group for k in ctx.keep) else ""

    s = re.sub(r"\s*\[[^\]]*\]", optional, line)
    s = s.replace("geojson|json|csv|vtk", "geojson").replace("ROUTE|MODEL.json", "ROUTE")
    words = s.split()[1:]
    if words and words[0] == "render":  # without --out it opens a window
        words += ["--out", str(tmp / "route.png")]
    if words and words[0] in ("replay", "sweep"):
        words += ["--out", str(tmp / f"{words[0]}-out")]
    if words and words[0] == "path":
        words = [w for w in words if w != "--out"] + ["--out", str(tmp / "built.pat")]
        words = [w if w != "NAME.pat" else "" for w in words]
        words = [w for w in words if w]
    places = iter(ctx.places)
    words = [next(places) if w == "PLACE" else w for w in words]
    act = ctx.route / "ACTIVITIES"
    acts = sorted(act.glob("*.act")) if act.is_dir() else []
    if "ROUTE/ACTIVITIES/NAME.act" in words:
        if not acts:
            pytest.skip(f"{ctx.route.name} has no activity")
        words = [str(acts[0]) if w == "ROUTE/ACTIVITIES/NAME.act" else w for w in words]
    subs = {
        "TX,TZ,X,Z": ",".join((*ctx.tile, *ctx.pos)),
        "FILE.csv": str(tmp / "profile.csv"),
        "ROUTE": str(ctx.route),
        "NAME.con": ctx.consist,
        "NAME.pat": ctx.path,
        "FILE.pat": ctx.path,
        "FILE": str(ctx.stf_file),
        "FOLDER": str(tmp / "converted"),
        "SPEC.toml": str(ctx.spec),
    }
    out: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("--tile", "--from-tile"):
            out += [w, *ctx.tile]
            i += 3
        elif w in ("--pos", "--from-pos"):
            out += [w, *ctx.pos]
            i += 3
        elif w == "--distance":
            out += [w, "100"]
            i += 2
        else:
            out.append(str(REPO / w) if w.startswith("sample_routes/") else subs.get(w, w))
            i += 1
    assert not [w for w in out if re.fullmatch(r"[A-Z][A-Z_.]*", w)], out  # no placeholder left
    return out


def _sample_ctx(tmp: Path) -> Ctx:
    spec = tmp / "sweep.toml"
    spec.write_text(
        f'route = "{SAMPLE_ROUTE.as_posix()}"\npaths = ["MainWE.pat"]\n'
        'consists = ["sample_passenger"]\nduration = 600\n',
        encoding="utf-8",
    )
    return Ctx(
        SAMPLE_ROUTE,
        "sample_passenger",
        "MainWE.pat",
        SAMPLE_ROUTE / "SAMPLE.trk",
        spec,
        ("-5631", "15116"),
        ("-212.95441", "-380.181"),
        ("1", "5"),
    )


def _realworld_ctx(tmp: Path) -> Ctx:
    route = realworld.make_route(tmp / "rw", missing_section=True)
    spec = tmp / "sweep.toml"
    spec.write_text(
        f'route = "{route.as_posix()}"\npaths = ["line.pat"]\nconsists = ["rw_dmu"]\n'
        "stand_in = true\nduration = 300\n",
        encoding="utf-8",
    )
    # Its stock is not installed: stand-ins are what the README's [--stand-in] is for.
    return Ctx(
        route,
        "rw_dmu",
        "line.pat",
        route / "carspawn.dat",
        spec,
        (str(realworld.TILE[0]), str(realworld.TILE[1])),
        ("0.5", "-250"),
        keep={"--stand-in"},
    )


LINES = command_lines()


def test_the_command_list_names_every_route_command():
    names = {line.split()[1] for line in LINES if len(line.split()) > 1}
    assert {
        "replay",
        "info",
        "parse",
        "audit",
        "render",
        "export",
        "convert",
        "sweep",
        "locate",
        "profile",
        "path",
        "signals",
        "compile",
    } <= names


def walkthrough_lines() -> list[str]:
    """The commands of the README's "Your own route" walkthrough."""
    block = README.split("## Your own route", 1)[1]
    body = _blocks_in(block, "sh")[0]
    return [line.split("  #")[0].strip() for line in body.splitlines() if line.strip()]


@pytest.mark.slow
def test_your_own_route_walkthrough_runs(tmp_path, monkeypatch):
    """info → audit → path → replay → render on a copy of the sample install, each
    command as written (ROUTE, PLACE and NAME.con filled in), exit 0."""
    import shutil

    lines = walkthrough_lines()
    assert [line.split()[1] for line in lines] == ["info", "audit", "path", "replay", "render"]
    inst = tmp_path / "install"
    shutil.copytree(SAMPLE_INSTALL, inst)
    route = inst / "ROUTES" / "SAMPLE"
    monkeypatch.chdir(tmp_path)
    for line in lines:
        words = line.replace("ROUTE", str(route)).split()[1:]
        places = iter(("Sampleby", "1"))
        words = [
            next(places) if w == "PLACE" else "sample_passenger" if w == "NAME.con" else w for w in words
        ]
        if words[0] == "render":
            pytest.importorskip("pyvista")
        r = CliRunner().invoke(main, words)
        assert r.exit_code == 0, f"{words}: exit {r.exit_code}\n{r.output}"
    assert (route / "PATHS" / "mine.pat").is_file() and (tmp_path / "my-replay" / "summary.json").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sample", "realworld"])
@pytest.mark.parametrize(
    "index", range(len(LINES)), ids=[f"{i}:{' '.join(x.split()[:2])}" for i, x in enumerate(LINES)]
)
def test_every_readme_command_runs(kind, index, tmp_path, monkeypatch):
    line = LINES[index]
    if " render " in f" {line} ":
        pytest.importorskip("pyvista")
    if " sweep " in f" {line} ":
        pytest.importorskip("distributed")
    monkeypatch.chdir(tmp_path)
    ctx = _sample_ctx(tmp_path) if kind == "sample" else _realworld_ctx(tmp_path)
    argv = concrete(line, ctx, tmp_path)
    r = CliRunner().invoke(main, argv)
    allowed = (0, 1) if argv[:1] == ["audit"] else (0,)
    assert r.exit_code in allowed, f"{argv}: exit {r.exit_code}\n{r.output}"
    if kind == "realworld" and str(ctx.route) in argv and argv[0] != "audit":
        assert "SECTION_UNKNOWN" in r.stderr and "tdbtools audit" in r.stderr  # one summary
        assert r.stderr.count("tolerated") == 1


@needs_dk24
@pytest.mark.dk24
@pytest.mark.slow
def test_readme_python_example_runs(monkeypatch, dk24, dk24_audit):
    (code,) = _blocks("python")
    monkeypatch.chdir(REPO)
    # Its `audit_route(route, paths=True)` on DK24 is the run's shared dk24_audit (the
    # same call on the same route, made once per run: ~8 s); any other call runs.
    import tdbtools.track

    real = tdbtools.track.audit_route

    def audit_route(route, **kw):
        if kw == {"paths": True} and Path(route.folder).resolve() == Path(dk24.folder).resolve():
            return dk24_audit
        return real(route, **kw)

    monkeypatch.setattr(tdbtools.track, "audit_route", audit_route)
    code = code.replace("…/ROUTES/OR_DK24", DK24_ROUTE.as_posix())
    exec(compile(code, "README.md", "exec"), {})  # noqa: S102 - our own README


@needs_dk24
@pytest.mark.dk24
@pytest.mark.slow
def test_readme_scenario_example_runs(dk24, dk24_signals):
    from tdbtools.physics.replay import Replay
    from tdbtools.physics.scenario import scenario_from_text

    (text,) = _blocks("toml")
    # As if saved in the repository root (the README's paths are relative to the file).
    sc = scenario_from_text(text, str(REPO / "readme-example.toml"), base=REPO)
    assert Path(sc.route).resolve() == Path(dk24.folder).resolve()
    result = Replay(sc, route=dk24, signals=dk24_signals).run()  # DK24 and its signals, read once per run
    t = result.summary["trains"]["freight"]
    assert t["distance_m"] > 100 and not t["derailed"]
    assert any(e.kind == "switch" for e in result.events)


def test_sample_install_is_where_the_examples_expect_it():
    assert (SAMPLE_INSTALL / "replay.toml").is_file() and (SAMPLE_INSTALL / "TRAINS" / "CONSISTS").is_dir()
