"""Large arrays of the .tdb bulk reader made on ordinary (4 KiB) memory pages.

numpy asks the kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``) for every
array of 4 MiB or more. Where the kernel makes huge pages only for such requests and
compacts memory to find them (``/sys/kernel/mm/transparent_hugepage/defrag`` =
``madvise``, the usual default), the first write to each 2 MiB of an array may wait for
that compaction: on the development machine the section columns of a 200 MB .tdb (~205
MB written once) cost 0.02-0.65 s of system time from one run to the next, against a
steady ~0.11 s on small pages (benchmarks/README.md, issue 32, "h32l"). The bulk reader
writes each of those arrays once, front to back, so huge pages buy it nothing.

The switch is numpy's own (``_set_madvise_hugepage``, process-wide, as the environment
variable NUMPY_MADVISE_HUGEPAGE): it is turned off while the arrays are made and set
back at once. Only performance depends on it, so another thread's array made meanwhile
merely gets small pages. Where a numpy lacks it, nothing changes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["small_pages"]


def _find_switch() -> Callable[[bool], bool] | None:
    # numpy >= 2 keeps it in numpy._core (numpy.core warns there); numpy 1 in numpy.core
    for name in ("numpy._core.multiarray", "numpy.core.multiarray"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        switch = getattr(mod, "_set_madvise_hugepage", None)
        if callable(switch):
            return switch
    return None


_SWITCH = _find_switch()


@contextmanager
def small_pages() -> Iterator[None]:
    """Arrays made inside the block are not given huge pages (see the module's text)."""
    switch = _SWITCH
    if switch is None:
        yield
        return
    was = switch(False)
    try:
        yield
    finally:
        switch(bool(was))
