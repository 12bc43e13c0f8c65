"""The command line's layout (docs/development.md §7): the last layer, light to import,
one family of commands per module."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import tdbtools.cli

PKG = Path(tdbtools.cli.__file__).resolve().parent
LIBRARY = PKG.parent


def test_importing_the_command_line_loads_no_library_module():
    # `tdbtools --help` imports every command module: the library, numpy, lark and the
    # plotting stacks are imported inside the commands, when one runs.
    code = "import sys, tdbtools.cli; print(sorted(sys.modules))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    loaded = set(ast.literal_eval(p.stdout.splitlines()[-1]))
    ours = {m for m in loaded if m == "tdbtools" or m.startswith("tdbtools.")}
    assert ours - {"tdbtools", "tdbtools.errors"} == {m for m in ours if m.startswith("tdbtools.cli")}
    assert not loaded & {"numpy", "lark", "matplotlib", "pyvista", "numba", "json"}


def test_nothing_in_the_library_imports_the_command_line():
    offenders = []
    for f in LIBRARY.rglob("*.py"):
        rel = f.relative_to(LIBRARY)
        if rel.parts[0] == "cli" or rel.name == "__main__.py":
            continue
        package = ["tdbtools", *rel.parts[:-1]]
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                names = [".".join([*base, *(node.module or "").split(".")]).rstrip(".")]
                names += [f"{names[0]}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any(n == "tdbtools.cli" or n.startswith("tdbtools.cli.") for n in names):
                offenders.append(f"{rel}:{node.lineno}")
    assert offenders == []


def test_every_command_module_stays_small_and_every_command_is_registered():
    for f in PKG.glob("*.py"):
        assert len(f.read_text(encoding="utf-8").splitlines()) < 600, f.name
    assert set(tdbtools.cli.main.commands) == {
        "info", "parse", "signals", "audit", "locate", "profile", "path",
        "export", "convert", "render", "replay", "sweep", "compile", "compare",
    }  # fmt: skip
    for command in tdbtools.cli.main.commands.values():
        assert command.callback.__module__.startswith("tdbtools.cli."), command.name
