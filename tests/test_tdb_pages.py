"""formats/_pages.py: numpy's huge-page switch turned off inside ``small_pages`` and set
back as it was after it, also when the block raises."""

from __future__ import annotations

import numpy as np
import pytest

from tdbtools.formats import _pages

pytestmark = pytest.mark.filterwarnings("error")


def _state() -> bool:
    switch = _pages._SWITCH
    assert switch is not None
    was = switch(False)
    switch(was)
    return bool(was)


@pytest.mark.parametrize("before", [True, False])
def test_off_inside_and_restored_after(before):
    switch = _pages._SWITCH
    if switch is None:
        pytest.skip("this numpy has no huge-page switch")
    was = switch(before)
    try:
        with _pages.small_pages():
            assert _state() is False
            a = np.ones(1 << 20)
        assert _state() is before
        assert a.sum() == 1 << 20
        with pytest.raises(ZeroDivisionError), _pages.small_pages():
            1 / 0  # noqa: B018
        assert _state() is before
    finally:
        switch(was)


def test_without_a_switch_nothing_changes(monkeypatch):
    monkeypatch.setattr(_pages, "_SWITCH", None)
    with _pages.small_pages():
        assert np.zeros(3).tolist() == [0.0, 0.0, 0.0]
