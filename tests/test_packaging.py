"""Packaging and the repository's promises: the wheel carries the grammars and the sample
route, the README's commands are what CI runs, the layers import only downwards."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import REPO

LAYERS = ["stf", "formats", "track", "signals", "physics", "render", "export", "sweep", "cli"]


@pytest.mark.slow
def test_wheel_contains_grammars_and_sample_route(tmp_path):
    out = tmp_path / "dist"
    p = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    wheel = next(out.glob("tdbtools-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for g in (REPO / "grammars").glob("*.lark"):
        assert f"tdbtools/grammars/{g.name}" in names
    assert "tdbtools/sample_routes/sample/ROUTES/SAMPLE/SAMPLE.tdb" in names
    assert any(n.endswith("entry_points.txt") for n in names)
    # The unpacked wheel works on its own: grammars are found inside the package.
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = ("import tdbtools.stf.resources as r, tdbtools.cli as c; "
            "print(r.grammar_path('stf.lark')); print(c.bundled_sample_route())")
    q = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                       env={"PYTHONPATH": str(site), "PATH": ""}, timeout=120)
    assert q.returncode == 0, q.stderr
    assert str(site / "tdbtools" / "grammars") in q.stdout
    assert str(site / "tdbtools" / "sample_routes") in q.stdout


def _quick_start() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)\n```", section, re.S)


def test_readme_quick_start_is_two_commands_that_ci_runs():
    cmds = _quick_start()
    assert len(cmds) == 2 and all("\n" not in c for c in cmds)
    ci = (REPO / ".ci" / "run").read_text()
    # CI runs the same install + main job, then the README's test command.
    install_and_run = cmds[0].split("&& ", 2)[-1]
    assert install_and_run in ci
    test_cmd = cmds[1].split("&& ", 1)[1]
    assert test_cmd in ci


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            parts = path.relative_to(REPO / "tdbtools").parts
            base = list(parts[:-1])[: len(parts) - node.level]
            mod = (node.module or "").split(".")
            found.add(".".join([*base, *mod]).strip("."))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tdbtools"):
            found.add(node.module.removeprefix("tdbtools").strip("."))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("tdbtools"):
                    found.add(a.name.removeprefix("tdbtools").strip("."))
    return found


def _layer(module: str) -> int | None:
    head = module.split(".")[0]
    return LAYERS.index(head) if head in LAYERS else None


def test_layers_import_only_downwards():
    bad = []
    for path in (REPO / "tdbtools").rglob("*.py"):
        rel = path.relative_to(REPO / "tdbtools")
        own = _layer(rel.with_suffix("").as_posix().replace("/", "."))
        if own is None:
            continue
        for mod in _imports(path):
            other = _layer(mod)
            if other is not None and other > own:
                bad.append(f"{rel} imports {mod}")
    assert bad == []


def test_import_is_light():
    code = ("import sys, tdbtools, tdbtools.stf, tdbtools.formats; "
            "heavy = [m for m in ('pyvista', 'matplotlib', 'vtk', 'pyproj') if m in sys.modules]; "
            "print(heavy)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert p.stdout.strip() == "[]", p.stderr
