"""The compiled engine's impulses alone, on the runs of cars the 1,000-car train resolves (issue 32).

    python benchmarks/bench_engine_impulses.py STEPS_PKL --old CHECKOUT [--steps 1000] [--repeat 5]

STEPS_PKL is the steps ``bench_engine_long.py OUT`` recorded (OUT/engine_steps.pkl). The
first ``--steps`` of them run on the Python engine, which hands every run of cars it
resolves by impulses (``engine_contacts.impulse_block``/``impulse_small``) to a spy that
keeps its masses, limits, speeds, violated joints and closing speeds. Then this checkout's
and CHECKOUT's ``_engine_kernel._impulse_run`` resolve every kept run, called from one
compiled loop each (no dispatch per run), in turns, timed in CPU seconds; the fastest of
``--repeat`` is reported per class of run length, and the speeds the two give must be
equal bit for bit. Both kernels are loaded from their files without numba's cache (each
compiles, ~1 min), so neither has an advantage from how it was loaded.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pickle
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tdbtools.physics import engine as E  # noqa: E402
from tdbtools.physics import engine_contacts as C  # noqa: E402


def record_runs(rec: dict, steps: int) -> tuple[list, float, float]:
    """The runs of cars the Python engine resolves by impulses in the first ``steps``."""
    bodies, x0, v0, kw = rec["init"]
    eng = E.Engine(bodies, x0, v0, **dict(kw, compiled=False))
    runs: list = []
    originals = C.impulse_block, C.impulse_small

    def spy(orig):
        def f(eng, s, e, js, dvs, v, events):
            atz, att = eng._atz, eng._att
            runs.append((eng._m[s:e].copy(), atz[s : e - 1].copy(), att[s : e - 1].copy(), v[s:e].copy(),
                         np.array(js, np.int64) - s, np.array(dvs, np.float64)))  # fmt: skip
            return orig(eng, s, e, js, dvs, v, events)

        return f

    C.impulse_block, C.impulse_small = (spy(o) for o in originals)
    try:
        for dt, drive, resist in rec["steps"][:steps]:
            eng.step(dt, drive, resist)
    finally:
        C.impulse_block, C.impulse_small = originals
    return runs, eng.rest_speed, rec["quiet"]


def pack(runs: list, rest: float, quiet: float) -> tuple:
    lens = np.array([len(r[0]) for r in runs], np.int64)
    offs = np.concatenate(([0], np.cumsum(lens)))
    nj = np.array([len(r[4]) for r in runs], np.int64)
    return (
        np.concatenate([r[0] for r in runs]),
        np.concatenate([np.append(r[1], False) for r in runs]),
        np.concatenate([np.append(r[2], False) for r in runs]),
        np.concatenate([r[3] for r in runs]),
        offs,
        np.concatenate([r[4] for r in runs]),
        np.concatenate([r[5] for r in runs]),
        np.concatenate(([0], np.cumsum(nj))),
        np.zeros(int(lens.max()) + 1, np.int64),
        rest,
        quiet,
    )


def load_kernel(name: str, checkout: Path):
    """``checkout``'s _engine_kernel, compiled here without numba's cache."""
    src = (checkout / "tdbtools/physics/_engine_kernel.py").read_text().replace("cache=True", "cache=False")
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    exec(compile(src, f"{checkout}/_engine_kernel.py", "exec"), mod.__dict__)
    return mod


def driver(K):
    """A compiled loop resolving every packed run with ``K._impulse_run``."""
    imp = K._impulse_run
    scratch = K._scratch

    @njit
    def run_all(M, Z, T, V, offs, JS, DV, joffs, LINE, rest, quiet, out):
        nmax = 0
        for r in range(offs.size - 1):
            nmax = max(nmax, offs[r + 1] - offs[r])
        sc = scratch(nmax)
        ev = np.empty((16, 8))
        for r in range(offs.size - 1):
            s = offs[r]
            e = offs[r + 1]
            v = V[s:e].copy()
            a, b = joffs[r], joffs[r + 1]
            ev, cnt, dq = imp(
                M[s:e], Z[s:e], T[s:e], v, np.int64(0), e - s, JS[a:b], DV[a:b], b - a, rest, 0.0, LINE, ev,
                np.int64(0), quiet, sc,
            )  # fmt: skip
            out[s:e] = v

    return run_all


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("steps_pkl", type=Path)
    ap.add_argument(
        "--old", type=Path, required=True, help="another checkout whose kernel resolves the same runs"
    )
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with open(args.steps_pkl, "rb") as f:
        rec = pickle.load(f)
    runs, rest, quiet = record_runs(rec, args.steps)
    kernels = {
        "this": driver(load_kernel("_ek_this", HERE.parent)),
        "old": driver(load_kernel("_ek_old", args.old)),
    }
    same = True
    for lo, hi in ((0, 50), (50, 200), (200, 1 << 40), (0, 1 << 40)):
        sel = [r for r in runs if lo <= len(r[0]) < hi]
        if not sel:
            continue
        packed = pack(sel, rest, quiet)
        outs: dict = {}
        best = {name: float("inf") for name in kernels}
        for _ in range(args.repeat + 1):  # (the first: compiling)
            for name, run_all in kernels.items():
                out = np.empty_like(packed[3])
                c = time.process_time()
                run_all(*packed, out)
                best[name] = min(best[name], time.process_time() - c)
                outs[name] = out
        same &= np.array_equal(outs["this"], outs["old"])
        cars = int(packed[4][-1])
        print(
            f"runs of {lo}-{hi if hi < 1 << 40 else 'any'} cars ({len(sel)} runs, {cars} cars): "
            + ", ".join(f"{name} {t * 1e3:.1f} ms" for name, t in best.items())
        )
    print(
        f"{len(runs)} runs over {args.steps} steps; load average {os.getloadavg()[0]:.2f}; speeds equal bit for bit: {same}"
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
