"""Names a timetable's cells hold (docs/timetables.md §2): the commands that name
other trains (and rewriting them), and path or consist names as relative file names."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from .timetable_cells import Command

if TYPE_CHECKING:
    from .timetable import Timetable


#: Commands whose value (None) or qualifiers name another train.
TRAIN_REFS: dict[str, tuple[str | None, ...]] = {
    "forms": (None,),
    "triggers": (None,),
    "wait": (None,),
    "follow": (None,),
    "connect": (None,),
    "activate": (None,),
    "stable": ("forms", "triggers"),
    "create": ("ahead",),
    "static": ("ahead",),
}


def with_train_refs(tt: Timetable, canon: Callable[[str], str]) -> Timetable:
    """``tt`` with every train name a command holds replaced by ``canon(name)``."""

    def fix(c: Command) -> Command:
        where = TRAIN_REFS.get(c.name)
        if not where:
            return c
        vals = tuple(canon(v) for v in c.values) if None in where else c.values
        quals = tuple((q, tuple(canon(v) for v in vs) if q in where else vs) for q, vs in c.qualifiers)
        return dataclasses.replace(c, values=vals, qualifiers=quals)

    def fixall(cs: tuple[Command, ...]) -> tuple[Command, ...]:
        return tuple(fix(c) for c in cs)

    trains = tuple(
        dataclasses.replace(
            t,
            start_commands=fixall(t.start_commands),
            note=fixall(t.note),
            dispose=fixall(t.dispose),
            stops=tuple(dataclasses.replace(x, commands=fixall(x.commands)) for x in t.stops),
        )
        for t in tt.trains
    )
    return dataclasses.replace(tt, trains=trains)


def relative_file_name(name: str, suffix: str) -> str | None:
    """A path or consist name of a timetable as a relative file name (``/``-separated)
    without ``suffix``; None when it would lead outside its folder (``..``, a root, a
    drive). Open Rails joins the name to PATHS or TRAINS/CONSISTS and adds the suffix
    when it has none (ProcessTimetable.cs), so ``MainWE.pat`` and a subfolder written
    the Windows way (``Sub\\Set``) both name files."""
    parts = [x.strip() for x in name.replace("\\", "/").split("/")]
    if not name.strip() or ":" in name or any(x in ("", ".", "..") for x in parts):
        return None
    rel = "/".join(parts)
    return rel[: -len(suffix)] if rel.lower().endswith(suffix) else rel


__all__ = ["TRAIN_REFS", "relative_file_name", "with_train_refs"]
