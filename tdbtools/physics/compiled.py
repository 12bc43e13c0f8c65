"""The replay's compiled parts (numba, ``pip install "tdbtools[fast]"``; docs/physics.md §1.1).

Five kernel modules give the numbers of the numpy code they stand for, bit for bit: the
engine's step, the batch drivers' arithmetic, the line-table lookups (with the collision
checks' pairing of nearby cars), the per-car arithmetic of a replay step around the
engine, and the Open Rails profile's brakes (its pipe, triple valves and per-car brake
forces). numba compiles each on its first use on a machine (about 30 s in all) and caches
the machine code beside the modules; :func:`compile_kernels` does that now, by running
each once on a tiny case with exactly the argument types the replay gives it (a numba
function is compiled once per distinct set of argument types: one it has not met would be
compiled again in the replay), so that a first replay, a test run or a worker of a sweep
does not pay it (the CI does it after installing). tests/test_compile_kernels.py checks
that a replay after it adds no specialisation to any kernel.

The .tdb reader's number kernel (``formats/_numbers_kernel.py``) is not among them: it
runs only when a route's TrackNodes table has 64 MB or more, the load of such a route
compiles it on first use (about 1.2 s of CPU, measured; then cached) the same way, and warming it here would cost
every user of ``tdbtools compile`` (and the replay's first-run notice, which warms these
groups) its compile time for routes few of them have.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .kernels import compiled_available, pure_python_requested

__all__ = [
    "KERNEL_GROUPS",
    "compile_kernels",
    "compiled_available",
    "kernels_cached",
    "load_replay_kernels",
    "load_step_kernels",
]

#: The kernels' groups, in the order :func:`compile_kernels` makes them.
KERNEL_GROUPS = ("engine", "drivers", "lookups", "step", "orts")
#: The modules whose functions numba compiles (one cache index file per function).
_KERNEL_MODULES = (
    "_engine_kernel",
    "_driver_kernel",
    "_lookup_kernel",
    "_step_kernel",
    "_orts_kernel",
    "_orts_step_kernel",
)


def kernels_cached(folder: Path | None = None) -> bool:
    """Whether numba's cache seems to hold every kernel module's machine code already
    (an index file, newer than the module, for this Python, beside the module or in
    ``NUMBA_CACHE_DIR``): if not, the first replay compiles them (about 30 s). A guess
    from the files numba writes; used only to tell the user before the wait. ``folder``:
    where the kernel modules are (default: this package). numba itself is imported only
    when a file is missing (its import alone costs a small replay more than it saves)."""
    if pure_python_requested() or importlib.util.find_spec("numba") is None:
        return True  # nothing to compile
    here = folder if folder is not None else Path(__file__).resolve().parent
    tag = f"py{sys.version_info[0]}{sys.version_info[1]}"
    folders = [here / "__pycache__"]
    if os.environ.get("NUMBA_CACHE_DIR"):
        folders.append(Path(os.environ["NUMBA_CACHE_DIR"]))
    for mod in _KERNEL_MODULES:
        src = here / f"{mod}.py"
        newest = src.stat().st_mtime if src.exists() else 0.0
        found = False
        for folder in folders:
            pattern = f"{mod}.*.{tag}.nbi"
            hits = folder.glob(pattern) if folder == here / "__pycache__" else folder.rglob(pattern)
            if any(h.stat().st_mtime >= newest for h in hits):
                found = True
                break
        if not found:
            return not compiled_available()  # (a numba that does not import: nothing to compile)
    return True


def compile_kernels(progress: Callable[[str], None] | None = None) -> dict[str, float]:
    """Compile (or load from numba's cache) every kernel; seconds per kernel group.
    ``progress(group)`` is told before each group of :data:`KERNEL_GROUPS`. Does
    nothing (an empty dict) when numba is not installed."""
    if not compiled_available():
        return {}
    from .driver import AutoDriver, DriverBatch, Stop
    from .engine import Bodies, Engine

    def tell(group: str) -> None:
        if progress is not None:
            progress(group)

    took: dict[str, float] = {}
    tell("engine")
    t = time.perf_counter()
    eng = Engine(Bodies.trains([[80e3, 40e3, 40e3]], [[20.0] * 3]), [0.0, -20.0, -40.0], [0.0] * 3)
    eng.step(0.1, np.array([1e5, 0.0, 0.0]), np.full(3, 500.0))
    # and its building blocks on their own, as tests/test_engine_kernel.py calls them
    from . import _engine_kernel as K

    w = np.array([40e3, 50e3, 60e3])
    f = np.array([1e3, -2e3, 5e2])
    types = np.array([1, 2], dtype=np.int64)
    y, cuts = np.empty(3), np.empty(3, dtype=np.int64)
    K._seg_sum(f, 0, 3)
    K._fsum(f, 0, 3)
    K._solve_chain(w, f, types, 1e-9, y, cuts)
    K._solve_static(w, f, np.abs(f), types, 1e-9, y, cuts)
    took["engine"] = time.perf_counter() - t

    tell("drivers")
    t = time.perf_counter()
    drivers = []
    for k in range(2):
        d = AutoDriver([0.0, 500.0], [20.0, 10.0], 900.0, max_speed=None, deceleration=0.5)
        d.stops.append(Stop(700.0 + k, 0.0, "waiting point"))
        drivers.append(d)
    batch = DriverBatch(drivers, [None, None], [None, None], 1.0)
    front = np.array([100.0, 150.0])
    batch.drive(0.0, 0.1, front, np.array([5.0, 6.0]), front - 60.0, np.ones(2, dtype=bool))
    from ._driver_kernel import controls

    one, no = np.ones(2), np.zeros(2, dtype=bool)
    controls(*(one,) * 8, no, *(one,) * 6, 0.1, 1.15, 0.05, np.empty(2), np.empty(2), np.empty(2))
    _warm_one_step()
    took["drivers"] = time.perf_counter() - t

    tell("lookups")
    t = time.perf_counter()
    from ._lookup_kernel import interp

    xp = np.linspace(0.0, 100.0, 11)
    x = np.array([5.0, 50.0])
    out1, out2 = np.empty(2), np.empty(2)
    interp(x, xp, xp * 2.0, xp * 3.0, out1, out2, np.full(2, -1, dtype=np.int64), True)
    from ._lookup_kernel import boxes_near, owner_cross

    one, two = np.array([0], dtype=np.int64), np.array([1], dtype=np.int64)
    box = np.array([0.0, 1.0])
    owner_cross(
        one,
        two,
        np.array([0, 1]),
        np.array([1, 1]),
        box,
        box + 1.0,
        box,
        box + 1.0,
        box,
        box + 1.0,
        box,
        box + 1.0,
        10.0,
    )
    boxes_near(box, box + 1.0, box, box + 1.0, 10.0, np.argsort(box, kind="stable"))
    _warm_on_lines()
    took["lookups"] = time.perf_counter() - t

    tell("step")
    t = time.perf_counter()
    load_step_kernels()
    took["step"] = time.perf_counter() - t

    tell("orts")
    t = time.perf_counter()
    _warm_orts_kernels()
    took["orts"] = time.perf_counter() - t
    return took


def _warm_one_step() -> None:
    """The automatic driver's compiled step (``_driver_kernel.one_step``) with the types
    ``driver_step.CompiledStep`` hands it: three float64 arrays, Python floats and bools."""
    from ._driver_kernel import one_step

    front, one, lim = np.array([100.0, 150.0]), np.ones(2), np.zeros((1, 3))
    one_step(front, one, lim, *(1.0,) * 12, True, False, True, 1.0, True, 1.0, True, 1.0, 0.3, 0.02, 2.0)


def _warm_on_lines() -> None:
    """The line table's placing of cars on their lines (``_lookup_kernel.on_lines``, the
    collision checks' and the derailments' call, ``stages/linetable.py``)."""
    from ._lookup_kernel import on_lines

    one = np.array([0], dtype=np.int64)
    box = np.array([0.0, 1.0])
    ends = np.array([0, 2], dtype=np.int64)
    out = [np.empty(2, dtype=np.int64), np.empty(2), np.empty(2), np.empty(2)]
    on_lines(one, np.array([0.5]), np.zeros(1), ends, box, box, ends, box, box, ends, box, box, box, *out)


_REPLAY_LOADED: set[str] = set()  # the parts loaded in this process


def load_replay_kernels(openrails: bool) -> None:
    """Load (or compile) now, once per process, the kernels a compiled replay's loop calls
    that its set-up does not call itself: the automatic driver's step, the line table's
    placing of cars (the collision checks) and, under Open Rails' laws
    (``openrails``), that profile's brakes, power units and one-call train step. The
    replay calls this when it is built, so that its first steps cost what later steps do
    (a fresh process paid ~45 ms in them, measured, loading two kernels from numba's
    cache: 5 % of a 1,000-car train's loop); the cost moves to the set-up, which the CLI
    prints beside the loop's time. The engine's and the step's kernels are loaded where
    they are made (:class:`~tdbtools.physics.engine.Engine`, :func:`load_step_kernels`).
    Nothing without numba or under ``TDBTOOLS_PURE_PYTHON``."""
    if not compiled_available():
        return
    if "base" not in _REPLAY_LOADED:
        _warm_one_step()
        _warm_on_lines()
        _REPLAY_LOADED.add("base")
    if openrails and "orts" not in _REPLAY_LOADED:
        _warm_orts_kernels()
        _REPLAY_LOADED.add("orts")


def _warm_orts_kernels() -> None:
    """The Open Rails profile's kernels (``_orts_kernel``) with the argument types of
    their callers: the pipe and the valves through :class:`AirBrakeTrain` itself (its
    step hands them float64 arrays, an int8 valve state and Python floats and bools), and
    the per-car forces as ``orts/replay_forces.py`` calls them: the cars' speeds a slice
    of the engine's read-only ``v``, the shoe law a Python int, the rest float64."""
    from ..formats.stock_parts import BRAKE_SHOE_FACTOR_MAX, BRAKE_SHOE_FACTOR_MIN
    from . import _orts_kernel as K
    from .orts.airbrake import AirBrakeTrain, Handle
    from .orts.brakes import DEFAULT_SHOE_NORMALISER

    air = AirBrakeTrain([20.0, 20.0], app_rate=1.0, rel_rate=1.0, aux_rate=1.0, ratio=2.5)
    air.step(Handle("service", 10.0), 0.1)
    v = np.array([5.0, 5.0])
    v.flags.writeable = False
    one = np.ones(2)
    force, frac = np.empty(2), np.empty(2)
    K.brake_forces(
        v[0:2], air.cyl, one * 50.0, np.zeros(2), one * 1e4, K.LAW_FACTOR, float(DEFAULT_SHOE_NORMALISER),
        float(BRAKE_SHOE_FACTOR_MIN), float(BRAKE_SHOE_FACTOR_MAX), force, frac,
    )  # fmt: skip
    # the one-call step (orts/replay_forces.py: _TrainBrakes.step): the air brakes' own
    # arrays, the packed constants, Python float/bool scalars, the speeds a read-only
    # slice, the forces a slice of the train's brake column
    cars, consts = np.ones((K.N_BRAKE_ROWS, 2)), np.ones(K.N_BRAKE_CONSTS)
    consts[K.P_LAW] = K.LAW_FACTOR
    brk = np.zeros(2)
    K.train_brakes(
        air.bp, air.aux, air.cyl, air.state, cars, consts, 80.0, True, False, 0.1, v[0:2], brk[0:2], frac,
        np.zeros(K.N_BRAKE_MEMO),
    )  # fmt: skip
    # the power units' force and capacity (orts/unit.py: PowerUnit.compile): the packed
    # spec and Python floats
    spec = np.zeros(K.N_UNIT_SPEC)
    spec[K.U_ENGINES], spec[K.U_DIESEL_LAW], spec[K.U_MAX_RPM], spec[K.U_DRIVE_MASS] = 1.0, 1.0, 600.0, 9e4
    K.unit_force(spec, 0.5, 5.0, 0.1, 300.0, 0.0, 0.0, 0.0, 0.0)
    K.unit_capacity(spec, 5.0, 300.0)
    # a train's gravity and resistance sums (rows of the step's per-car forces, Python int
    # bounds) and the brake plan's full force (its float64 capacities, a Python float)
    rows = np.zeros((4, 2))
    K.two_sums(rows[0], rows[3], 0, 2)
    K.scaled_sum(np.ones(2), 0.5)
    # one train's step in one call (orts/replay_forces.py: step_fused) with the step's
    # arrays (the engine's x and v read-only, ForceStage's car tables), Python int, float
    # and bool scalars, the train's packed units and brakes
    from . import _orts_step_kernel as F
    from . import _step_kernel as S

    load_step_kernels()
    x = np.array([0.0, -20.0])
    x.flags.writeable = False
    fbrb = np.array([[-2.0, -12.0], [-22.0, -32.0]])
    ctab = np.ones((S.N_CAR_ROWS, 1))
    ctab[S.C_LINE_LEN] = 500.0
    lines = S.line_table(np.array([-100.0, 0.0, 100.0]), np.array([-1.0, 0.0, 1.0]))
    pieces = np.array([[0.0, 100.0], [0.0, 1e-3]])
    bounds = np.array([0, 2], dtype=np.int64)
    units = np.zeros((1, F.N_UNIT_COLS))
    units[0, : K.N_UNIT_SPEC] = spec
    F.train_step(
        True, x, v, fbrb, ctab, np.zeros(2, dtype=np.int64), np.array([1.0, 0.0, 0.0, 1.15, 0.05]), lines,
        pieces, np.full(6, -1, dtype=np.int64), np.empty(8), bounds, np.empty((S.N_OUT_ROWS, 2)), np.empty((2, 1)),
        0, 0.5, True, 5.0, False, 80.0, True, False, 0.1,
        np.concatenate((consts, np.zeros(K.N_BRAKE_MEMO), np.ones(F.N_TRAIN_Q))), units,
        np.zeros((2, 1), dtype=np.int64), np.empty(2), air.bp, air.aux, air.cyl, air.state, cars, frac,
    )  # fmt: skip


_STEP_LOADED = False


def load_step_kernels() -> None:
    """Load (or compile) the replay step's kernels now, once per process: a replay calls
    this when it is built, so that its first step does not pay for it. They run on one
    train of two cars, with the array kinds the replay gives them (the engine's x and v
    read-only)."""
    global _STEP_LOADED
    if _STEP_LOADED:
        return
    from . import _step_kernel as K

    n = 2
    x, v = np.array([0.0, -20.0]), np.array([5.0, 5.0])
    x.flags.writeable = v.flags.writeable = False
    fbrb = np.array([[-2.0, -12.0], [-22.0, -32.0]])
    cars = np.ones((K.N_CAR_ROWS, n))
    cars[K.C_LINE_LEN] = 500.0
    consts = np.array([1.0, 1.0, 0.0, 1.15, 0.05])
    lines = K.line_table(np.array([-100.0, 0.0, 100.0]), np.array([-1.0, 0.0, 1.0]))
    pieces = np.array([[0.0, 100.0], [0.0, 1e-3]])
    rows = np.full(3 * n, -1, dtype=np.int64)
    work = np.empty(4 * n)
    out = np.empty((K.N_OUT_ROWS, n))
    ctab, ctype = cars[:, :1].copy(), np.zeros(n, dtype=np.int64)
    K.car_forces(x, v, fbrb, ctab, ctype, consts, lines, pieces, rows, work, out[:4].copy())
    ctl = np.array([[1.0, 10.0, 1.0, 0.0, 0.0, 0.0]])
    trains = np.ones((K.N_TRAIN_ROWS, 1))
    engines = np.array([[0.0], [0.0], [1e5], [1e6], [1.0], [0.0]])
    bounds = np.array([0, n], dtype=np.int64)
    K.few_train_forces(
        x, v, fbrb, ctl, 0.1, cars, ctab, ctype, consts, lines, pieces, rows, work, trains, bounds, engines,
        np.zeros(1), out, np.empty(1),
    )  # fmt: skip
    K.after_step(x, x, v, out[K.F_TRAC], out[K.F_BRAKE], np.zeros((3, n)), fbrb, ctab, ctype)
    K.car_forces_sums(
        x, v, fbrb, ctab, ctype, consts, lines, pieces, rows, work, np.empty((4, n)), bounds, np.empty((2, 1))
    )
    _STEP_LOADED = True
