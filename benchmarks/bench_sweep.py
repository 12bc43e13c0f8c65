"""Sweep throughput: every DK24 path × 2 sample consists (beyond_path 1000 m), on a
local Dask cluster of 1 and then 2 worker processes; replays per second and the
scaling ratio.

    python benchmarks/bench_sweep.py [--route …/ROUTES/OR_DK24] [--workers 1 2] [--paths "*.pat"]

The rate counts from the moment the cluster is up (``progress`` is first called) to
the last replay, so cluster start-up (about a second) is reported separately.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tdbtools.formats.route import load_route  # noqa: E402
from tdbtools.sweep import run_sweep  # noqa: E402

DK24 = (REPO / ".." / "shared" / "routes" / "DK24" / "ROUTES" / "OR_DK24").resolve()
CONSISTS = REPO / "sample_routes" / "sample" / "TRAINS" / "CONSISTS"


def spec_text(route: Path, pattern: str, duration: float) -> str:
    return (
        f'route = "{route.as_posix()}"\npaths = ["{pattern}"]\n'
        f'consists = ["{(CONSISTS / "sample_passenger.con").as_posix()}", '
        f'"{(CONSISTS / "sample_freight.con").as_posix()}"]\n'
        f"step = 0.1\nduration = {duration}\n[grid]\nbeyond_path = [1000]\n"
    )


def run(spec, workers: int) -> dict:
    marks: dict[str, float] = {}

    def progress(done: int, total: int, rec) -> None:
        marks.setdefault("up", time.perf_counter())
        marks["last"] = time.perf_counter()

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        res = run_sweep(
            spec, out=Path(tmp) / "out", workers=workers, processes=True, dashboard=False, progress=progress
        )
        wall = time.perf_counter() - t0
    s = res.summary()
    busy = marks["last"] - marks["up"]
    # A combination that fails in its setup (a path that does not resolve, a train that does
    # not fit) is no replay: replays/s counts only the ones that ran (status ok).
    return {
        "workers": workers,
        "attempted": res.ran,
        "replays": s["ok"],
        "failed": s["failed"],
        "wall_s": round(wall, 2),
        "startup_s": round(marks["up"] - t0, 2),
        "run_s": round(busy, 2),
        "replays_per_s": round(s["ok"] / busy, 2),
        "attempts_per_s": round(res.ran / busy, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--route", type=Path, default=DK24)
    ap.add_argument("--paths", default="*.pat")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--duration", type=float, default=900.0)
    args = ap.parse_args()
    load_route(args.route)  # the on-disk cache warm, as in normal use
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "sweep.toml"
        f.write_text(spec_text(args.route, args.paths, args.duration), encoding="utf-8")
        from tdbtools.sweep import read_sweep_spec

        spec = read_sweep_spec(f)
    print(
        f"{len(spec.paths)} paths × {len(spec.consists)} consists = {len(spec.combinations)} replays "
        f"on {args.route.name}",
        flush=True,
    )
    results = []
    for w in args.workers:
        r = run(spec, w)
        results.append(r)
        print(json.dumps(r), flush=True)
    if len(results) >= 2:
        base = results[0]["replays_per_s"]
        for r in results[1:]:
            print(
                f"scaling {results[0]['workers']} -> {r['workers']} workers: "
                f"{r['replays_per_s'] / base:.2f}x",
                flush=True,
            )


if __name__ == "__main__":
    main()
