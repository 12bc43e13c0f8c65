"""The consists of joined and split timetable trains (docs/timetables.md §5.6): each
run whose cars a ``$detach``, ``$attach``, ``$pickup`` or ``$transfer`` changes gets a
``.con`` of its own, written into the replay's temporary folder, so the physics runs
the cars it really has (their number, masses and lengths)."""

from __future__ import annotations

from pathlib import Path

from ..formats.consist import Consist, read_consist
from .scenario import resolve_file
from .timetable_plan import TimetableReplayError, TTPlan, file_name
from .timetable_units import JoinOp, Unit, Units, UnitsError, resolve_units


def _q(s: str) -> str:
    if '"' in s or "\n" in s or "\r" in s:
        raise TimetableReplayError(f"consist entry {s!r} cannot be written")
    return f'"{s}"'


def units_consist_text(units: list[Unit], name: str, vmax: float | None) -> str:
    """The text of a ``.con`` holding ``units`` front to back."""
    lines = [
        "SIMISA@@@@@@@@@@JINX0D0t______",
        "",
        "Train (",
        f"\tTrainCfg ( {_q(name)}",
        f"\t\tName ( {_q(name)} )",
        "\t\tSerial ( 1 )",
    ]
    if vmax:
        lines.append(f"\t\tMaxVelocity ( {vmax:.5f} 0.00100 )")
    lines.append(f"\t\tNextWagonUID ( {len(units)} )")
    for uid, u in enumerate(units):
        kind, data = ("Engine", "EngineData") if u.car.kind == "engine" else ("Wagon", "WagonData")
        lines.append(
            f"\t\t{kind} ( UiD ( {uid} ) {'Flip ( ) ' if u.flipped else ''}{data} ( {_q(u.car.file)} {_q(u.car.folder)} ) )"
        )
    lines += ["\t)", ")", ""]
    return "\r\n".join(lines)


def join_consists(
    plan: TTPlan, route_install: Path, route_folder: Path, tmp: Path
) -> tuple[dict[str, str], Units]:
    """Run name -> the consist file (without ``.con``) of each run whose cars joins
    change, written into ``tmp``; and what every join did (:func:`resolve_units`)."""
    ops: list[JoinOp] = [j for r in plan.runs for j in r.joins]
    if not ops:
        return {}, Units()
    folders = (route_install / "TRAINS" / "CONSISTS", route_folder / "CONSISTS", route_install)
    by_name = {r.name: r for r in plan.runs}
    read: dict[str, Consist] = {}

    def consist(name: str, who: str) -> Consist:
        if name not in read:
            f = resolve_file(Path(file_name(name, ".con", f"{who}: consist")), *folders, suffix=".con")
            if f is None:
                raise TimetableReplayError(f"{who}: consist {name!r} not found in TRAINS/CONSISTS")
            read[name] = read_consist(f)
        return read[name]

    def own(run: str) -> list[Unit]:
        r = by_name[run]
        src = plan.timetable.train(r.source or r.name)
        if src is None:
            raise TimetableReplayError(f"train {run!r}: its consist cannot be joined or split")
        out: list[Unit] = []
        for cp in src.consist:
            con = consist(cp.name, f"train {run!r}")
            seq = list(reversed(con.cars)) if cp.reverse else list(con.cars)
            out.extend(Unit(c, c.flipped != cp.reverse, cp.name) for c in seq)
        return out

    keeps = {r.name: r.keeps_consist_of for r in plan.runs if r.keeps_consist_of}
    try:
        units = resolve_units([r.name for r in plan.runs], own, keeps, ops)
    except UnitsError as exc:
        raise TimetableReplayError(str(exc)) from None
    files: dict[str, str] = {}
    for k, (run, cars) in enumerate(units.start.items()):
        if not cars:
            raise TimetableReplayError(
                f"train {run!r} would start without any car after the joins and splits"
            )
        vmax = [v for p in {u.part for u in cars} if p in read and (v := read[p].max_velocity)]
        target = tmp / f"tt_joined_{k}.con"
        target.write_text(
            units_consist_text(cars, f"{run} (joined)", min(vmax) if vmax else None), encoding="utf-8"
        )
        files[run] = str(target.with_suffix(""))
    return files, units


__all__ = ["join_consists", "units_consist_text"]
