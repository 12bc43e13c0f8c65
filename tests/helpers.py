"""Paths shared by the tests (imported as a plain module; pytest puts tests/ on sys.path)."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLE_INSTALL = REPO / "sample_routes" / "sample"
SAMPLE_ROUTE = SAMPLE_INSTALL / "ROUTES" / "SAMPLE"
DK24 = (REPO / ".." / "shared" / "routes" / "DK24").resolve()
DK24_ROUTE = DK24 / "ROUTES" / "OR_DK24"
DK24_TEST_ROUTE = DK24 / "ROUTES" / "OR_DK24TEST"

needs_dk24 = pytest.mark.skipif(
    not (DK24_ROUTE / "DK24.tdb").is_file(),
    reason=f"the real DK24 route is not at {DK24} (../shared/routes/DK24 beside the repository)",
)
