"""Estimate the mutation score of ``tdbtools/physics`` from a uniform random sample.

A full mutmut run over the physics package takes days on a small machine (over 12,000
mutants, a surviving one of the replay runs most of the test selection), so the score is
estimated from a random sample, as docs/mutation.md §1–3 describe:

    mutmut run --max-children 1 "tdbtools.physics.events.x_*"     # makes mutants/ and the stats
    python tools/mutation_sample.py draw --n 300 --seed 20 > sample.txt
    python tools/mutation_sample.py run sample.txt --max-children 2
    python tools/mutation_sample.py score sample.txt

``draw`` lists every mutant mutmut made under ``tdbtools/physics`` (the keys of the
``mutants/**/*.meta`` files, sorted) and draws ``--n`` of them with Python's
``random.Random(seed).sample``. ``run`` hands them to ``mutmut run`` in batches, so the
verdicts are mutmut's own. ``score`` reads the verdicts back and prints the score, per
module and in all, with a 95 % Wilson interval.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

# mutmut's exit codes (mutmut/stats.py): a mutant is caught when its tests fail or time out.
KILLED = {1, 3}
TIMEOUT = {36, -24, 24, 152, 255}
SURVIVED = {0}
NO_TESTS = {5, 33}
MUTANTS = Path("mutants") / "tdbtools" / "physics"


def verdicts() -> dict[str, int | None]:
    """Every physics mutant mutmut knows, with its last exit code (None: not run yet)."""
    out: dict[str, int | None] = {}
    for meta in sorted(MUTANTS.rglob("*.meta")):
        data = json.loads(meta.read_text(encoding="utf-8"))
        out.update(data["exit_code_by_key"])
    return out


def draw(n: int, seed: int) -> list[str]:
    names = sorted(verdicts())
    if n > len(names):
        raise SystemExit(f"only {len(names)} mutants; cannot draw {n}")
    return random.Random(seed).sample(names, n)


def run(names: list[str], batch: int, max_children: int) -> None:
    for start in range(0, len(names), batch):
        part = names[start : start + batch]
        print(f"batch {start // batch + 1}: {len(part)} mutants", file=sys.stderr, flush=True)
        subprocess.run(["mutmut", "run", "--max-children", str(max_children), *part], check=False)


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (centre - half, centre + half)


def module_of(name: str) -> str:
    return name.split(".")[2].split("__mutmut")[0] if name.count(".") >= 3 else name


def score(names: list[str]) -> int:
    codes = verdicts()
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
    p_run.add_argument("--batch", type=int, default=100)
    p_run.add_argument("--max-children", type=int, default=1)
    p_score = sub.add_parser("score", help="print the sample's score")
    p_score.add_argument("sample", type=Path)
    args = parser.parse_args(argv)
    if args.what == "draw":
        print("\n".join(draw(args.n, args.seed)))
        return 0
    names = [n for n in args.sample.read_text(encoding="utf-8").split() if n]
    if args.what == "run":
        run(names, args.batch, args.max_children)
        return 0
    return score(names)


if __name__ == "__main__":
    sys.exit(main())
