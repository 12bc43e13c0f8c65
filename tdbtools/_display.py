"""Short displays of big objects for a console or a notebook (shared on purpose by every
package: a private module directly under tdbtools, like ``_fs``).

A loaded route or a replay result holds megabytes of arrays; the repr a dataclass
writes prints them all (a million characters for DK24). Objects that can be big use
:func:`short_repr` and :func:`html_summary` instead: one line of facts, and a small HTML
table for Jupyter's ``_repr_html_``. Both are bounded (:data:`MAX_REPR`) whatever the
object holds, and every value is escaped (a route's name comes from its files).
"""

from __future__ import annotations

import html
from collections.abc import Iterable

#: No display is longer than this many characters.
MAX_REPR = 1500
#: A single value is cut to this many characters.
MAX_VALUE = 120


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def short_repr(kind: str, facts: Iterable[tuple[str, object]]) -> str:
    """``Kind(key=value, key=value, …)`` with each value cut to :data:`MAX_VALUE` and the
    whole to :data:`MAX_REPR` characters."""
    parts = [f"{k}={_cut(repr(v), MAX_VALUE)}" for k, v in facts]
    return _cut(f"{kind}({', '.join(parts)})", MAX_REPR)


def html_summary(title: str, rows: Iterable[tuple[str, object]]) -> str:
    """A small HTML table (title, then one row per fact), escaped and bounded."""
    cells = "".join(
        f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
        f"<td style='text-align:left'>{html.escape(_cut(str(v), MAX_VALUE))}</td></tr>"
        for k, v in rows
    )
    out = f"<table><caption style='text-align:left'><b>{html.escape(_cut(title, MAX_VALUE))}</b></caption>{cells}</table>"
    # A table cut in the middle would be broken HTML: keep the rows that fit.
    if len(out) > MAX_REPR:
        return f"<b>{html.escape(_cut(title, MAX_VALUE))}</b>"
    return out
