"""Signals: signal scripts, signal objects and the signalling runtime (docs/signals.md).

Public API: :func:`load_signals` (a route's :class:`SignalSet`), :func:`signal_report` (what
``tdbtools signals`` prints), :func:`read_scripts` and :class:`Interlocking` (the runtime).
"""

from __future__ import annotations

from typing import Any

from ..formats.route import Route
from .objects import Head, SignalObject, SignalSet, WorldSignal, load_signals
from .runtime import Interlocking
from .script import Script, ScriptError, ScriptFile, read_scripts


def signal_report(route: Route) -> dict[str, Any]:
    """The route's signals as JSON-able data: ``signals``, ``heads``, ``scripts``
    (``parsed``, ``errors``, ...), ``warnings`` and a few counts."""
    return load_signals(route).summary()


__all__ = [
    "Head",
    "Interlocking",
    "Script",
    "ScriptError",
    "ScriptFile",
    "SignalObject",
    "SignalSet",
    "WorldSignal",
    "load_signals",
    "read_scripts",
    "signal_report",
]
