"""``tdbtools compile`` (physics.compiled.compile_kernels) warms every kernel a replay runs.

After :func:`compile_kernels`, a replay must find each compiled function already
specialised for the argument types it passes: a new numba signature would mean the first
replay still compiles (the wait ``tdbtools compile`` exists to take ahead), and
``kernels_cached`` would have said "cached" wrongly. Checked in a fresh Python process:
in this one, earlier tests' replays may have compiled those signatures already, which
would hide a missing one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tdbtools.physics import compiled, kernels

_PHYSICS = Path(compiled.__file__).resolve().parent

# (in both children: every kernel module's compiled signatures, by qualified name)
_SIGNATURES = """
def signatures():
    out = {}
    for m in modules:
        mod = importlib.import_module("tdbtools.physics." + m)
        for name, f in vars(mod).items():
            if isinstance(f, Dispatcher):
                out[m + "." + name] = sorted(str(s) for s in f.signatures)
    return out
"""

# Run in the child: warm, note every kernel's signatures, replay the bundled sample under
# both profiles (with the kernels on however small the replay, as the tests run them, and
# under Open Rails' laws with the package's threshold too), note them again; print what the replays added and which lazy kernels they asked for.
_CHILD = (
    r"""
import importlib, json, sys
from numba.core.dispatcher import Dispatcher
from tdbtools.cli import bundled_scenario
from tdbtools.physics import compiled, kernels
from tdbtools.physics.replay import Replay
from tdbtools.physics.scenario import read_scenario, with_settings

modules = json.loads(sys.argv[1])
package_min_work = kernels.COMPILED_MIN_WORK
"""
    + _SIGNATURES
    + r"""


took = compiled.compile_kernels()
before = signatures()
# (a replay below the package's threshold runs the numpy engine, whose arrays may differ
# in kind, but still the Open Rails brakes' kernels: both are checked)
for physics, min_work in (("openrails", 0), ("openrails", package_min_work), ("engineering", 0)):
    kernels.COMPILED_MIN_WORK = min_work
    sc = with_settings(read_scenario(bundled_scenario()), physics=physics, duration=120)
    Replay(sc).run()
after = signatures()
added = {k: sorted(set(v) - set(before.get(k, ()))) for k, v in after.items()}
asked = sorted(k.module + "." + k.name for k in kernels._LAZY if k.value)
print(json.dumps({
    "groups": sorted(took),
    "added": {k: v for k, v in added.items() if v},
    "asked": asked,
    "warmed": sorted(k for k, v in before.items() if v),
}))
"""
)


def _needs_numba() -> None:
    pytest.importorskip("numba", reason="the compiled kernels need numba (tdbtools[fast])")
    if kernels.pure_python_requested():
        pytest.skip("the whole run is on the reference code (TDBTOOLS_PURE_PYTHON)")
    if not kernels.numba_usable():
        pytest.skip("numba does not import here: nothing is compiled")


def _kernel_modules() -> list[str]:
    return sorted(p.stem for p in _PHYSICS.glob("_*kernel.py"))


def test_every_physics_kernel_module_is_compiled_and_looked_for():
    """kernels_cached looks at every kernel module of the physics package, so a module
    added later cannot be left out of its guess (or out of compile_kernels: below)."""
    assert sorted(compiled._KERNEL_MODULES) == _kernel_modules()
    assert "orts" in compiled.KERNEL_GROUPS


def test_a_replay_after_compile_kernels_compiles_nothing_new():
    _needs_numba()
    modules = _kernel_modules()
    env = dict(os.environ)
    env.pop(kernels.PURE_PYTHON_ENV, None)
    root = str(Path(compiled.__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    p = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(modules)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert p.returncode == 0, p.stderr[-4000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["groups"] == sorted(compiled.KERNEL_GROUPS)
    # the replays went through the compiled Open Rails brakes (so the check below means
    # something): the brake plan steps the pipe and valves, the replay's brakes take the
    # one-call step (train_brakes, which calls the pipe, valves and brake forces)
    # (and the sample's locomotives are units the compiled power units cover)
    for name in (
        "_orts_kernel.step_pipe", "_orts_kernel.step_valves", "_orts_kernel.train_brakes",
        "_orts_kernel.unit_force", "_orts_kernel.unit_capacity",
    ):  # fmt: skip
        assert name in got["asked"], got["asked"]
    # ... and no compiled function met an argument type compile_kernels did not give it
    assert not got["added"], "signatures a replay added after compile_kernels:\n" + json.dumps(
        got["added"], indent=1
    )
    warmed = {"_orts_kernel.step_pipe", "_orts_kernel.step_valves", "_orts_kernel.brake_forces"}
    assert warmed | {
        "_orts_kernel.train_brakes",
        "_orts_kernel.unit_force",
        "_orts_kernel.unit_capacity",
    } <= set(got["warmed"])


def test_a_small_open_rails_replay_does_not_import_numba(tmp_path):
    """The bundled scenario under Open Rails' laws (a few cars: its work is below
    kernels.COMPILED_MIN_WORK) runs on the numpy code alone, its air brakes and brake plan
    included, so numba is never imported (~0.3 s of CPU for a replay of ~0.3 s)."""
    code = (
        "import sys; from tdbtools.cli import bundled_scenario; "
        "from tdbtools.physics.replay import Replay; "
        "from tdbtools.physics.scenario import read_scenario, with_settings; "
        "sc = with_settings(read_scenario(bundled_scenario()), physics='openrails', duration=120); "
        "r = Replay(sc).run(); print(r.summary['simulated_seconds'] > 0, 'numba' in sys.modules)"
    )
    root = str(Path(compiled.__file__).resolve().parents[2])
    env = {"PYTHONPATH": root, "PATH": "/usr/bin:/bin", "TDBTOOLS_CACHE_DIR": str(tmp_path)}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-4000:]
    assert p.stdout.split()[-2:] == ["True", "False"]


# Run in the child: one replay of the bundled sample under ``physics`` with the kernels on
# (no compile_kernels first: what a fresh `tdbtools replay` does); its kernels' signatures
# after the set-up and after the run.
_LOAD_CHILD = (
    r"""
import importlib, json, sys
from numba.core.dispatcher import Dispatcher
from tdbtools.cli import bundled_scenario
from tdbtools.physics import kernels
from tdbtools.physics.replay import Replay
from tdbtools.physics.scenario import read_scenario, with_settings

modules, physics = json.loads(sys.argv[1]), sys.argv[2]
"""
    + _SIGNATURES
    + r"""


kernels.COMPILED_MIN_WORK = 0
rep = Replay(with_settings(read_scenario(bundled_scenario()), physics=physics, duration=120))
before = signatures()
rep.run()
after = signatures()
added = {k: sorted(set(v) - set(before.get(k, ()))) for k, v in after.items()}
print(json.dumps({"added": {k: v for k, v in added.items() if v}, "loaded": sorted(k for k, v in before.items() if v)}))
"""
)


@pytest.mark.parametrize("physics", ["openrails", "engineering"])
def test_a_replay_loads_its_kernels_in_its_set_up(physics):
    """A fresh process's replay loads (from numba's cache) every compiled function its
    loop calls when it is built (compiled.load_replay_kernels), not in its first steps: no
    kernel gains a signature while it runs (the loop's time, which the CLI's real-time
    factor divides by, holds no loading)."""
    _needs_numba()
    env = dict(os.environ)
    env.pop(kernels.PURE_PYTHON_ENV, None)
    root = str(Path(compiled.__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    p = subprocess.run(
        [sys.executable, "-c", _LOAD_CHILD, json.dumps(_kernel_modules()), physics],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert p.returncode == 0, p.stderr[-4000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert not got["added"], "kernels loaded in the loop:\n" + json.dumps(got["added"], indent=1)
    # the loop's own calls, loaded before it (so the check above means something)
    need = {"_engine_kernel.step", "_driver_kernel.one_step", "_lookup_kernel.on_lines"}
    if physics == "openrails":
        need |= {"_orts_step_kernel.train_step", "_orts_kernel.train_brakes"}
    assert need <= set(got["loaded"]), sorted(need - set(got["loaded"]))
