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
    p = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    wheel = next(out.glob("tdbtools-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for g in (REPO / "grammars").glob("*.lark"):
        assert f"tdbtools/grammars/{g.name}" in names
    assert "tdbtools/sample_routes/sample/ROUTES/SAMPLE/SAMPLE.tdb" in names
    assert "tdbtools/grammars/timetable.lark" in names
    assert (
        "tdbtools/sample_routes/sample/ROUTES/SAMPLE/ACTIVITIES/OpenRails/Sampleby day.timetable-or" in names
    )
    assert "tdbtools/render/vendor/plotly-gl3d.min.js" in names  # the HTML pages' viewer
    assert any(n.endswith("entry_points.txt") for n in names)
    assert "tdbtools/py.typed" in names  # downstream type checkers read our annotations
    assert "tdbtools/__main__.py" in names  # python -m tdbtools
    licence = [n for n in names if n.endswith("/LICENSE") and ".dist-info/" in n]
    assert licence, sorted(n for n in names if ".dist-info/" in n)
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License :: OSI Approved :: MIT License" in meta and "Requires-Python: >=3.10" in meta
    assert "Provides-Extra: dev" in meta and "platformdirs" in meta
    # The unpacked wheel works on its own: grammars are found inside the package.
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (
        "import tdbtools.stf.resources as r, tdbtools.cli as c; "
        "print(r.grammar_path('stf.lark')); print(c.bundled_sample_route())"
    )
    q = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": ""},
        timeout=120,
    )
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
    code = (
        "import sys, tdbtools, tdbtools.stf, tdbtools.formats; "
        "heavy = [m for m in ('pyvista', 'matplotlib', 'vtk', 'pyproj') if m in sys.modules]; "
        "print(heavy)"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert p.stdout.strip() == "[]", p.stderr


def _package(module: str) -> str:
    """The package a module belongs to (``track`` for ``track.audit``); a module directly
    in tdbtools is its own package (``cli``, ``errors``, ``_fs``)."""
    return module.split(".")[0]


def _imported_names(path: Path) -> list[tuple[str, str]]:
    """(module, name) for each ``from tdbtools... import name`` in a file (any depth)."""
    parts = path.relative_to(REPO / "tdbtools").with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1] + ("__init__",)
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = list(parts[:-1])[: len(parts) - node.level]
            mod = ".".join([*base, *(node.module or "").split(".")]).strip(".")
        elif node.module and node.module.split(".")[0] == "tdbtools":
            mod = node.module.removeprefix("tdbtools").strip(".")
        else:
            continue
        out.extend((mod, a.name) for a in node.names)
    return out


def test_no_package_imports_another_packages_private_names():
    """Private names (a leading underscore, in the module path or the name) stay inside
    their package; helpers shared on purpose live in public names or in private modules
    directly under tdbtools (``tdbtools/_fs.py``) that say so."""
    bad = []
    for path in sorted((REPO / "tdbtools").rglob("*.py")):
        rel = path.relative_to(REPO / "tdbtools")
        own = _package(rel.with_suffix("").as_posix().replace("/", "."))
        for mod, name in _imported_names(path):
            if not mod or _package(mod) == own:
                continue
            private_module = any(p.startswith("_") for p in mod.split(".")[1:])
            if private_module or (name.startswith("_") and not name.startswith("__")):
                bad.append(f"{rel}: from {mod} import {name}")
    assert bad == []


def test_no_import_cycles_between_modules():
    """Imports inside functions count too: a cycle put off until call time is still a cycle."""
    graph: dict[str, set[str]] = {}
    for path in (REPO / "tdbtools").rglob("*.py"):
        rel = path.relative_to(REPO / "tdbtools").with_suffix("").as_posix().replace("/", ".")
        me = rel.removesuffix(".__init__")
        targets = set()
        for mod, name in _imported_names(path):
            # `from . import x` / `from .pkg import module` name a module, not an attribute.
            sub = f"{mod}.{name}".strip(".")
            is_module = (REPO / "tdbtools" / (sub.replace(".", "/") + ".py")).is_file()
            targets.add(sub if is_module else mod)
        # A package's __init__ re-exports its modules: importing them from it is not a cycle.
        graph[me] = {
            t
            for t in targets
            if t
            and t != me
            and not me.startswith(t + ".")
            and not (rel.endswith("__init__") and t.startswith(me + "."))
        }
    cycles = []

    def visit(node: str, stack: list[str], on_stack: set[str], done: set[str]) -> None:
        on_stack.add(node)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt in on_stack:
                cycles.append(" -> ".join(stack[stack.index(nxt) :] + [nxt]))
            elif nxt not in done:
                visit(nxt, stack, on_stack, done)
        stack.pop()
        on_stack.discard(node)
        done.add(node)

    done: set[str] = set()
    for node in sorted(graph):
        if node not in done:
            visit(node, [], set(), done)
    assert cycles == []


# Documents outside the repository: the specification and seed notes it was written
# from, or anything under ../shared except the DK24 route data that tests may use.
_OUTSIDE = re.compile(
    r"shared/(?!routes/DK24)|msts-formats|signals-and-activities|/work/"
    r"|\b[Ss]pec §|\bseeds? 0\d\d\b|\bseed note\b"
)


def test_nothing_refers_to_documents_outside_the_repository():
    skip = {
        ".git",
        ".venv",
        "venv",
        ".hypothesis",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        "__pycache__",
        "build",
        "dist",
        "mutants",  # mutmut's mutated copy of the tree (docs/mutation.md)
    }
    bad = []
    for path in sorted(REPO.rglob("*")):
        rel = path.relative_to(REPO)
        if any(p in skip or p.endswith(".egg-info") for p in rel.parts):
            continue  # version control, environments, caches
        name = rel.as_posix()
        if name == "tests/test_packaging.py":
            continue  # this test spells the patterns out
        if (
            not path.is_file()
            or path.suffix not in (".py", ".md", ".toml", ".lark", ".txt", "")
            or path.stat().st_size > 1_000_000
        ):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        bad += [
            f"{name}:{i}: {line.strip()}"
            for i, line in enumerate(text.splitlines(), 1)
            if _OUTSIDE.search(line)
        ]
    assert bad == [], "\n".join(bad)
    docs = {p.name for p in (REPO / "docs").glob("*.md")}
    assert {"formats.md", "physics.md"} <= docs


def _pyproject() -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def test_packaging_metadata_is_honest():
    project = _pyproject()["project"]
    extras = project["optional-dependencies"]
    names = {e: {re.split(r"[<>=\[; ]", d)[0] for d in deps} for e, deps in extras.items()}
    # Developer tools are the dev extra; the test extra runs the tests (and builds the wheel).
    assert {"ruff", "mypy"} <= names["dev"] and not {"ruff", "mypy"} & names["test"]
    assert "platformdirs" in {re.split(r"[<>=; ]", d)[0] for d in project["dependencies"]}
    assert project["license"] == {"text": "MIT"} and (REPO / "LICENSE").read_text().startswith("MIT License")
    classifiers = project["classifiers"]
    low = project["requires-python"].removeprefix(">=")
    assert f"Programming Language :: Python :: {low}" in classifiers
    # CI runs the lowest and the highest Python the classifiers claim (where pyenv has them).
    versions = sorted(
        (
            c.rsplit(" ", 1)[1]
            for c in classifiers
            if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
        ),
        key=lambda v: int(v.split(".")[1]),
    )
    ci = (REPO / ".ci" / "run").read_text()
    assert f"for minor in {versions[0]} {versions[-1]}" in ci


def test_every_doc_is_linked_from_the_readme_and_the_index():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    index = (REPO / "docs" / "README.md").read_text(encoding="utf-8")
    for doc in sorted((REPO / "docs").glob("*.md")):
        if doc.name == "README.md":
            continue
        assert f"](docs/{doc.name})" in readme, doc.name
        assert f"]({doc.name})" in index, doc.name
    assert "](docs/README.md)" in readme
    for target in re.findall(r"\]\(([^)#]+)\)", readme):
        if not target.startswith("http"):
            assert (REPO / target).exists(), target
