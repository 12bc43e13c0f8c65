"""Estimate the mutation score of ``tdbtools/physics`` from a uniform random sample.

A full mutmut run over the physics package takes days on a small machine (over 12,000
mutants, a surviving one of the replay runs most of the test selection), so the score is
estimated from a random sample, as docs/mutation.md §1–3 describe:

    mutmut run --max-children 2 "tdbtools.physics.forces.x_gravity__mutmut_1"   # mutants/ + stats
    python tools/mutation_sample.py draw --n 300 --seed 20 > sample.txt
    python tools/mutation_sample.py run sample.txt --jobs 2
    python tools/mutation_sample.py score sample.txt

``draw`` lists every mutant mutmut made under ``tdbtools/physics`` (the keys of the
``mutants/**/*.meta`` files, sorted) and draws ``--n`` of them with Python's
``random.Random(seed).sample``.

``run`` tests each drawn mutant as ``mutmut run`` does, without gathering the line
coverage again (8–10 min per ``mutmut run`` call here): in ``mutants/``, with
``MUTANT_UNDER_TEST`` naming the mutant, pytest runs the tests that mutmut's stats pass
found calling the mutated function (``mutants/mutmut-stats.json``), fastest first, with
``-x`` and the project's ``pytest_add_cli_args``. A failing run kills the mutant; a run
over its time limit counts as a timeout (caught, as mutmut counts it); a function no test
calls is "no tests" (not caught). Verdicts go to ``SAMPLE.results.json`` as they come,
so an interrupted run resumes.

``score`` prints the score, per module and in all, with a 95 % Wilson interval.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

# mutmut's exit codes (mutmut/stats.py): a mutant is caught when its tests fail or time out.
KILLED = {1, 3}
TIMEOUT = {36, -24, 24, 152, 255}
SURVIVED = {0}
NO_TESTS = {5, 33}
MUTANTS = Path("mutants") / "tdbtools" / "physics"


def mutant_names() -> list[str]:
    """Every physics mutant mutmut made, sorted."""
    names: list[str] = []
    for meta in sorted(MUTANTS.rglob("*.meta")):
        names.extend(json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"])
    return sorted(names)


def draw(n: int, seed: int) -> list[str]:
    names = mutant_names()
    if n > len(names):
        raise SystemExit(f"only {len(names)} mutants; cannot draw {n}")
    return random.Random(seed).sample(names, n)


def _results_path(sample: Path) -> Path:
    return sample.with_name(sample.name + ".results.json")


def _pytest_args() -> list[str]:
    cfg = tomllib.loads(Path("pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]
    return ["-x", "-q", "-p", "no:randomly", *cfg.get("pytest_add_cli_args", [])]


def run_one(name: str, tests: list[str], limit_s: float, args: list[str]) -> tuple[int, float]:
    """Run ``tests`` (pytest ``args`` first) against mutant ``name``: the exit code (33
    as mutmut's "no tests" when there are none; 36, mutmut's timeout, past ``limit_s``)
    and the seconds taken."""
    if not tests:
        return 33, 0.0
    env = dict(os.environ, MUTANT_UNDER_TEST=name, PYTHONPATH=str(Path("mutants").resolve()))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    t0 = time.perf_counter()
    try:
        code = subprocess.run(
            [sys.executable, "-m", "pytest", *args, *tests],
            cwd="mutants",
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=limit_s,
            check=False,
        ).returncode
    except subprocess.TimeoutExpired:
        code = 36
    return code, time.perf_counter() - t0


def run(sample: Path, names: list[str], jobs: int) -> None:
    stats = json.loads((Path("mutants") / "mutmut-stats.json").read_text(encoding="utf-8"))
    tests_of = stats["tests_by_mangled_function_name"]
    duration = stats["duration_by_test"]
    out = _results_path(sample)
    done: dict[str, list] = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    todo = [n for n in names if n not in done]
    args = _pytest_args()

    def one(name: str) -> tuple[str, int, float]:
        tests = sorted(tests_of.get(name.partition("__mutmut_")[0], ()), key=lambda t: duration.get(t, 0.0))
        limit = 60.0 + 10.0 * sum(duration.get(t, 0.0) for t in tests)
        code, secs = run_one(name, tests, limit, args)
        return name, code, secs

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for i, (name, code, secs) in enumerate(pool.map(one, todo), 1):
            done[name] = [code, round(secs, 2)]
            out.write_text(json.dumps(done, indent=0, sort_keys=True), encoding="utf-8")
            print(f"{i}/{len(todo)} {code} {secs:6.1f}s {name}", file=sys.stderr, flush=True)


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (centre - half, centre + half)


def module_of(name: str) -> str:
    return name.split(".")[2].split("__mutmut")[0] if name.count(".") >= 3 else name


def score(sample: Path, names: list[str]) -> int:
    out = _results_path(sample)
    ran: dict[str, list] = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    codes = {name: v[0] for name, v in ran.items()}
    tally: Counter[str] = Counter()
    per_module: dict[str, Counter[str]] = {}
    survivors = []
    for name in names:
        code = codes.get(name, None)
        kind = (
            "killed"
            if code in KILLED
            else "timeout"
            if code in TIMEOUT
            else "survived"
            if code in SURVIVED
            else "no tests"
            if code in NO_TESTS
            else "not run"
            if code is None
            else f"other {code}"
        )
        tally[kind] += 1
        per_module.setdefault(module_of(name), Counter())[kind] += 1
        if kind in ("survived", "no tests"):
            survivors.append(name)
    ran = len(names) - tally["not run"]
    caught = tally["killed"] + tally["timeout"]
    low, high = wilson(caught, ran)
    print("| module | sampled | killed | timeout | survived | no tests |")
    print("|---|---|---|---|---|---|")
    for module in sorted(per_module):
        c = per_module[module]
        print(
            f"| {module} | {sum(c.values())} | {c['killed']} | {c['timeout']} | {c['survived']} | {c['no tests']} |"
        )
    print()
    print(f"sampled {len(names)}, run {ran}: {dict(tally)}")
    if ran:
        print(
            f"score {caught}/{ran} = {100 * caught / ran:.1f} % (95 % Wilson {100 * low:.1f}–{100 * high:.1f} %)"
        )
    print()
    print("survivors:")
    for name in survivors:
        print(" ", name)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="what", required=True)
    p_draw = sub.add_parser("draw", help="draw a sample of mutant names")
    p_draw.add_argument("--n", type=int, default=300)
    p_draw.add_argument("--seed", type=int, default=20)
    p_run = sub.add_parser("run", help="run the sampled mutants with mutmut")
    p_run.add_argument("sample", type=Path)
    p_run.add_argument("--jobs", type=int, default=1, help="mutants tested at once")
    p_score = sub.add_parser("score", help="print the sample's score")
    p_score.add_argument("sample", type=Path)
    args = parser.parse_args(argv)
    if args.what == "draw":
        print("\n".join(draw(args.n, args.seed)))
        return 0
    names = [n for n in args.sample.read_text(encoding="utf-8").split() if n]
    if args.what == "run":
        run(args.sample, names, args.jobs)
        return 0
    return score(args.sample, names)


if __name__ == "__main__":
    sys.exit(main())
