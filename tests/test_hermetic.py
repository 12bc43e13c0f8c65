"""The suite is hermetic: its route cache is a temporary folder of this test process, set
before any test runs (tests/conftest.py), whatever TDBTOOLS_CACHE_DIR said outside."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from helpers import SAMPLE_ROUTE

from tdbtools.formats import load_route
from tdbtools.formats.cache import cache_dir


def test_the_cache_is_a_temporary_folder_of_this_run():
    folder = Path(os.environ["TDBTOOLS_CACHE_DIR"])
    assert cache_dir() == folder
    assert folder.resolve().is_relative_to(Path(tempfile.gettempdir()).resolve())
    assert folder.parent.name.startswith("tdbtools-test-cache-")


def test_a_cached_load_writes_only_there():
    load_route(SAMPLE_ROUTE, cache=True)
    entries = list(cache_dir().rglob("*"))
    assert entries and all(p.resolve().is_relative_to(cache_dir().resolve()) for p in entries)
