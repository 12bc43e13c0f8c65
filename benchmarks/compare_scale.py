"""Old and new code side by side: bench_scale.py per size, alternating between two checkouts.

    python benchmarks/compare_scale.py cars|trains|route OLD_SRC [--sizes ...] [--repeat N]
        [--seconds S] [--out DIR]

OLD_SRC is a checkout of the code to compare with (e.g. ``git archive <commit> tdbtools
grammars | tar -x -C /tmp/old``); the new code is this repository's. For each size the two
run one after the other in fresh processes, ``--repeat`` times, so a busy machine slows
both alike; the best of each goes to ``DIR/old.json`` / ``DIR/new.json`` in bench_scale's
format (then ``bench_scale.py plot --plot old=DIR/old.json new=DIR/new.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_scale import exponent  # noqa: E402

KEYS = {"cars": ("cars", "wall_s"), "trains": ("trains", "wall_s"), "route": ("copies", "cold_s")}


def run_one(what: str, src: str, size: int, seconds: float | None, tmp: Path) -> dict:
    out = tmp / f"{what}-{size}-{abs(hash(src))}.json"
    flag = {"cars": "--cars", "trains": "--trains", "route": "--copies"}[what]
    cmd = [sys.executable, str(HERE / "bench_scale.py"), what, flag, str(size), "--json", str(out)]
    if seconds is not None:
        cmd += ["--seconds", str(seconds)]
    subprocess.run(cmd, check=True, env=dict(os.environ, BENCH_SRC=src))
    return json.loads(out.read_text())[what]["rows"][0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=tuple(KEYS))
    ap.add_argument("old", type=Path)
    ap.add_argument("--sizes", type=int, nargs="+", required=True)
    ap.add_argument("--old-sizes", type=int, nargs="+", help="sizes to run the old code on (default all)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--out", type=Path, default=Path("."))
    ap.add_argument(
        "--cpu", action="store_true", help="compare CPU time, not wall time (route: the cold load's)"
    )
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    size_key, time_key = KEYS[args.what]
    if args.cpu:
        time_key = "cold_cpu_s" if args.what == "route" else "cpu_s"
    best: dict[str, dict[int, dict]] = {"old": {}, "new": {}}
    for size in args.sizes:
        for _ in range(args.repeat):
            for label, src in (("old", str(args.old)), ("new", str(HERE.parent))):
                if label == "old" and args.old_sizes and size not in args.old_sizes:
                    continue
                row = run_one(args.what, src, size, args.seconds, args.out)
                cur = best[label].get(size)
                if cur is None or row[time_key] < cur[time_key]:
                    best[label][size] = row
                extra = (
                    f", CPU {row['cold_cpu_s']:.2f} s, peak +{row['peak_mb']:.0f} MB"
                    if "cold_cpu_s" in row
                    else ""
                )
                print(
                    f"{label} {size}: {row[time_key]:.2f} s{extra} (load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
    for label, rows_by in best.items():
        rows = [rows_by[s] for s in sorted(rows_by)]
        exp = (
            exponent(
                [r[size_key] if args.what != "route" else r["tdb_mb"] for r in rows],
                [r[time_key] for r in rows],
            )
            if len(rows) > 1
            else float("nan")
        )
        path = args.out / f"{label}.json"
        data = json.loads(path.read_text()) if path.exists() else {}
        data[args.what] = {"rows": rows, "exponent": exp}
        path.write_text(json.dumps(data, indent=1))
        print(f"{label}: exponent {exp:.2f} -> {path}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
