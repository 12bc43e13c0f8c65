"""Shared test set-up: the real DK24 route and the ``dk24`` marker.

A test needs DK24 when it uses a fixture whose name starts with ``dk24``, names one of
the DK24 paths of :mod:`helpers` (``DK24``, ``DK24_ROUTE``, ``DK24_TEST_ROUTE``, ...),
is parametrised with a path inside DK24, or carries ``@pytest.mark.dk24``. Such tests
are marked ``dk24`` here (so ``-m dk24`` / ``-m "not dk24"`` select them) and, when the
route is absent, skipped with one reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import DK24, DK24_ROUTE, dk24_available

from tdbtools.formats.route import Route, load_route
from tdbtools.track.audit import AuditReport, audit_route

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
def dk24() -> Route:
    """The DK24 route, parsed once for the whole run (without the on-disk cache)."""
    return load_route(DK24_ROUTE, cache=False)


@pytest.fixture(scope="session")
def dk24_audit(dk24: Route) -> AuditReport:
    """DK24's full audit (topology, .pat files, and all 313 paths resolved), made once."""
    return audit_route(dk24, paths=True)
