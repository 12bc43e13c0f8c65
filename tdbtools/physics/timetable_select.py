"""Which of a timetable's trains and commands a replay runs, as Open Rails decides it
(docs/timetables.md §5): trains named as their columns name them, trains Open Rails
does not include left out, commands naming trains that do not run dropped; what is
left out is said in ``defects``."""

from __future__ import annotations

import dataclasses

from ..formats.timetable import TRAIN_REFS, Command, Timetable, relative_file_name, with_train_refs


def with_canonical_refs(tt: Timetable) -> Timetable:
    """``tt`` with every train a command names spelt as its column spells it: Open Rails
    finds trains case-insensitively and accepts ``name:description`` for the trains of
    the file (:meth:`Timetable.find`)."""

    def canon(v: str) -> str:
        t = tt.find(v)
        return t.name if t is not None else v

    return with_train_refs(tt, canon)


def drop_bad_trains(tt: Timetable, defects: list[str]) -> Timetable:
    """``tt`` without the trains Open Rails does not include (no path, no consist, no
    valid start time, a file name leading out of its folder: TTTrainInfo.BuildTrain),
    each said in ``defects``."""
    keep = []
    for t in tt.trains:
        why = None
        if not t.path:
            why = "no #path"
        elif not t.consist:
            why = "no #consist"
        elif (t.start is None or t.start.seconds is None) and not t.static:
            why = "no start time in #start"
        elif relative_file_name(t.path, ".pat") is None:
            why = f"path {t.path!r} must name a file inside PATHS"
        elif any(relative_file_name(c.name, ".con") is None for c in t.consist):
            why = "a consist must name a file inside TRAINS/CONSISTS"
        if why is None:
            keep.append(t)
        else:
            defects.append(f"train {t.name!r} is left out: {why}")
    return dataclasses.replace(tt, trains=tuple(keep))


def drop_bad_refs(tt: Timetable, names: set[str], defects: list[str]) -> Timetable:
    """``tt`` without the commands that name a train it does not run (Open Rails
    ignores them with a message), each said in ``defects``."""

    def ok(t_name: str, c: Command) -> bool:
        where = TRAIN_REFS.get(c.name, ())
        refs = [v for v in c.values if None in where] + [
            v for q, vs in c.qualifiers if q in where and c.name not in ("create", "static") for v in vs
        ]
        bad = [r for r in refs if r and r not in names]
        for r in bad:
            defects.append(f"train {t_name!r}: ${c.name} names no train of the timetable: {r!r} (ignored)")
        return not bad

    def keep(t_name: str, cs: tuple[Command, ...]) -> tuple[Command, ...]:
        return tuple(c for c in cs if ok(t_name, c))

    trains = tuple(
        dataclasses.replace(
            t,
            note=keep(t.name, t.note),
            dispose=keep(t.name, t.dispose),
            stops=tuple(dataclasses.replace(x, commands=keep(t.name, x.commands)) for x in t.stops),
        )
        for t in tt.trains
    )
    return dataclasses.replace(tt, trains=trains)


__all__ = ["drop_bad_refs", "drop_bad_trains", "with_canonical_refs"]
