"""Shared test set-up: the real DK24 route and the ``dk24`` marker.

A test needs DK24 when it uses a fixture whose name starts with ``dk24``, names one of
the DK24 paths of :mod:`helpers` (``DK24``, ``DK24_ROUTE``, ``DK24_TEST_ROUTE``, ...),
is parametrised with a path inside DK24, or carries ``@pytest.mark.dk24``. Such tests
are marked ``dk24`` here (so ``-m dk24`` / ``-m "not dk24"`` select them) and, when the
route is absent, skipped with one reason.

Hermetic: every test process gets its own temporary cache folder (``TDBTOOLS_CACHE_DIR``
points into a fresh temporary folder from the start of the run), so the suite neither
reads nor writes the user's tdbtools cache, whatever the environment says.

The expensive DK24 fixtures (the parsed route, its audit with paths, the converted
files) are made once per run even under pytest-xdist: the first worker makes and
pickles them, the other loads them (:func:`_once_per_run`).
"""

from __future__ import annotations

import os
import pickle
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import DK24, DK24_ROUTE, HAVE_PYVISTA, NO_PYVISTA, dk24_available

from tdbtools.errors import TdbToolsError
from tdbtools.formats.route import Route, load_route
from tdbtools.signals.objects import SignalSet, load_signals
from tdbtools.track.audit import AuditReport, audit_route

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: each worker makes its own
    fcntl = None  # type: ignore[assignment]

_PRIVATE_CACHE: str | None = None


def pytest_configure(config: pytest.Config) -> None:
    """A temporary cache for this test process (each xdist worker runs this too), set
    before any test imports or loads anything."""
    global _PRIVATE_CACHE
    _PRIVATE_CACHE = tempfile.mkdtemp(prefix="tdbtools-test-cache-")
    os.environ["TDBTOOLS_CACHE_DIR"] = os.path.join(_PRIVATE_CACHE, "tdbtools")
    # (process-wide: module- and session-scoped fixtures replay before any test's own)
    os.environ["TDBTOOLS_PHYSICS"] = "engineering"
    config.addinivalue_line(
        "markers", "by_stock: the replay's profile is chosen by the stock (the default outside the tests)"
    )


@pytest.fixture(autouse=True)
def _engineers_profile_unless_by_stock(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The suite's replays were written for the engineers' laws, and the sample's stock
    comes from .eng/.wag files, whose default is Open Rails' profile: pin the engineers'
    (TDBTOOLS_PHYSICS) but in the tests marked ``by_stock`` (docs/physics.md §7)."""
    if request.node.get_closest_marker("by_stock") is not None:
        monkeypatch.delenv("TDBTOOLS_PHYSICS", raising=False)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _PRIVATE_CACHE is not None:
        shutil.rmtree(_PRIVATE_CACHE, ignore_errors=True)


SKIP_DK24 = pytest.mark.skip(
    reason=f"the real DK24 route is not at {DK24} (../shared/routes/DK24 beside the repository)"
)


def _names_dk24(func) -> bool:  # noqa: ANN001
    """Whether a test function (or a function nested in it) uses a DK24_* name."""
    stack = [getattr(func, "__code__", None)]
    while stack:
        code = stack.pop()
        if code is None:
            continue
        if any(n.startswith("DK24") for n in code.co_names):
            return True
        stack.extend(c for c in code.co_consts if hasattr(c, "co_names"))
    return False


def _param_in_dk24(item: pytest.Item) -> bool:
    spec = getattr(item, "callspec", None)
    if spec is None:
        return False
    base = str(DK24)
    return any(isinstance(v, (str, Path)) and str(v).startswith(base) for v in spec.params.values())


def needs_dk24(item: pytest.Item) -> bool:
    return (
        item.get_closest_marker("dk24") is not None
        or any(name.startswith("dk24") for name in getattr(item, "fixturenames", ()))
        or _names_dk24(getattr(item, "function", None))
        or _param_in_dk24(item)
    )


#: Fixtures that take more than 5 s to make (measured on an idle 2-core machine): a
#: test using one is ``slow`` (run on its own it takes that long).
SLOW_FIXTURES = {
    "dk24_audit": "DK24's audit with all 313 paths resolved, ~8 s",
    "full_sweep": "a 24-replay sweep on two workers, ~8 s",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    have = dk24_available()
    for item in items:
        if SLOW_FIXTURES.keys() & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
        if needs_dk24(item):
            item.add_marker(pytest.mark.dk24)
            if not have:
                item.add_marker(SKIP_DK24)


@pytest.fixture(scope="session")
def renderer() -> None:
    """Skips the test unless pyvista renders offscreen here (probed once per worker)."""
    if not HAVE_PYVISTA:
        pytest.skip(NO_PYVISTA)
    from tdbtools.render import backend

    try:
        backend.check_renderer()
    except TdbToolsError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def northsouth(tmp_path_factory: pytest.TempPathFactory) -> Route:
    """The sample route turned by 90°: runs from south to north (tests/data/northsouth.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))
    try:
        from northsouth import make_northsouth
    finally:
        sys.path.pop(0)
    return load_route(make_northsouth(tmp_path_factory.mktemp("ns")), cache=False)


def _once_per_run(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], Any]) -> Any:
    """``make(folder)`` run once for the whole run, even with several xdist workers.

    A session fixture is per process: with two workers each would parse DK24 (and
    audit it) again. The first worker to get here makes the value under a file lock
    and pickles it into the run's shared temporary folder; the others load it.
    ``make`` may write files into ``folder`` (shared too) and return their path.
    """
    if fcntl is None or not os.environ.get("PYTEST_XDIST_WORKER"):
        return make(factory.mktemp(name))
    root = factory.getbasetemp().parent  # the same folder for every worker of this run
    folder, done = root / name, root / f"{name}.pickle"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.is_file():
            return pickle.loads(done.read_bytes())
        folder.mkdir(exist_ok=True)  # (left by a worker whose make failed: made again)
        value = make(folder)
        tmp = done.with_suffix(".part")
        tmp.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        tmp.replace(done)
        return value


@pytest.fixture(scope="session")
def dk24(tmp_path_factory: pytest.TempPathFactory) -> Route:
    """The DK24 route, parsed once for the whole run (without the on-disk cache)."""
    return _once_per_run(tmp_path_factory, "dk24", lambda _: load_route(DK24_ROUTE, cache=False))


@pytest.fixture(scope="session")
def dk24_audit(tmp_path_factory: pytest.TempPathFactory, dk24: Route) -> AuditReport:
    """DK24's full audit (topology, .pat files, and all 313 paths resolved), made once."""
    return _once_per_run(tmp_path_factory, "dk24_audit", lambda _: audit_route(dk24, paths=True))


@pytest.fixture(scope="session")
def dk24_signals(dk24: Route) -> SignalSet:
    """DK24's signal objects (38 world files, read once per run and then from the signal cache), made once per worker (the
    compiled scripts cannot be pickled); read-only."""
    return load_signals(dk24)


@pytest.fixture(scope="session")
def dk24_converted(tmp_path_factory: pytest.TempPathFactory, dk24: Route) -> Path:
    """DK24 written out by ``convert_route`` once (a folder: do not write into it)."""
    from tdbtools.export import convert_route

    def make(folder: Path) -> Path:
        convert_route(dk24, folder)
        return folder

    return _once_per_run(tmp_path_factory, "dk24_converted", make)


# the replays' own threshold for the compiled kernels (kernels.COMPILED_MIN_WORK) as the
# package sets it, before _kernels_on_every_replay lowers it to 0
_PACKAGE_MIN_WORK: list[int] = []


@pytest.fixture(autouse=True, scope="session")
def _kernels_on_every_replay() -> Iterator[None]:
    """Where numba is installed the tests run the compiled kernels on every replay, however
    small (a replay below kernels.COMPILED_MIN_WORK would run the reference code, and most
    test replays are small): the kernels stay covered by every replay test, and the
    reference code by the ``implementation`` fixture and the CI's TDBTOOLS_PURE_PYTHON
    run. The ``package_threshold`` fixture gives a test the package's threshold back."""
    from tdbtools.physics import kernels

    saved = kernels.COMPILED_MIN_WORK
    _PACKAGE_MIN_WORK[:] = [saved]
    kernels.COMPILED_MIN_WORK = 0
    try:
        yield
    finally:
        kernels.COMPILED_MIN_WORK = saved


@pytest.fixture
def package_threshold(monkeypatch: pytest.MonkeyPatch) -> int:
    """For one test, kernels.COMPILED_MIN_WORK as the package sets it (returned)."""
    from tdbtools.physics import kernels

    monkeypatch.setattr(kernels, "COMPILED_MIN_WORK", _PACKAGE_MIN_WORK[0])
    return _PACKAGE_MIN_WORK[0]


@pytest.fixture(params=["compiled", "reference"])
def implementation(request: pytest.FixtureRequest) -> Iterator[str]:
    """Runs a behavioural test body once on the compiled kernels and once on their numpy
    reference (the ``TDBTOOLS_PURE_PYTHON`` switch of tdbtools/physics/kernels.py), so one
    body checks every implementation. Under that switch for the whole run (the CI's
    reference job) the compiled run is skipped."""
    from tdbtools.physics import kernels

    if request.param == "compiled":
        pytest.importorskip("numba", reason="the compiled kernels need numba (tdbtools[fast])")
        if kernels.pure_python_requested():
            pytest.skip("the whole run is on the reference code (TDBTOOLS_PURE_PYTHON)")
    saved = os.environ.get(kernels.PURE_PYTHON_ENV)
    os.environ[kernels.PURE_PYTHON_ENV] = "1" if request.param == "reference" else "0"
    kernels.reset()
    try:
        yield request.param
    finally:
        if saved is None:
            del os.environ[kernels.PURE_PYTHON_ENV]
        else:
            os.environ[kernels.PURE_PYTHON_ENV] = saved
        kernels.reset()
