"""Joining and splitting timetable trains (docs/timetables.md §5.6): which cars every
run starts with once ``$detach``, ``$attach``, ``$pickup`` and ``$transfer`` have moved
units between trains at their ends.

A train's cars are a list front to back (:class:`Unit`: a car of a ``.con``, turned or
not, and the consist it came from). The manual's portions (``/power``,
``/leadingpower``, ``/units=n``, ``/consist=…``, …) cut such a list
(:func:`cut_portion`); :func:`resolve_units` follows the runs' disposals in order and
gives the cars each run starts with when they are not simply its own consist, and a
sentence per operation for the outcomes (``"detached 2 units forming C"``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..errors import TdbToolsError
from ..formats.consist import CarEntry
from ..formats.timetable import Command

#: The joining and splitting commands (manual, "Timing commands": $detach, $attach,
#: $pickup, $transfer), applied at the train's end.
JOIN_COMMANDS = ("detach", "attach", "pickup", "transfer")


class UnitsError(TdbToolsError):
    """Joins and splits that cannot be worked out (a cycle, a portion of nothing)."""


@dataclass(frozen=True, slots=True)
class Unit:
    """One car: its ``.con`` entry, whether it runs turned, the consist it came from."""

    car: CarEntry
    flipped: bool
    part: str

    @property
    def power(self) -> bool:
        return self.car.kind == "engine"


@dataclass(frozen=True, slots=True)
class JoinOp:
    """A join or split command of run ``train`` at its end."""

    kind: str  # detach | attach | pickup | transfer
    train: str  # the run whose end it happens at
    command: Command
    other: str | None  # attach/pickup/transfer: the other train; detach: the train formed
    static: bool = False  # detach /static: the portion is left standing


@dataclass(slots=True)
class Units:
    """What :func:`resolve_units` works out: the cars each run starts with (only the runs
    whose cars differ from their own consist, or that a join touches), and what each
    operation did."""

    start: dict[str, list[Unit]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)  # run -> sentences, in order


def _run_of(cars: list[Unit], *, power: bool) -> int:
    """How many cars at the front of ``cars`` are (or are not) power units."""
    n = 0
    while n < len(cars) and cars[n].power == power:
        n += 1
    return n


def _lead_power(cars: list[Unit]) -> int:
    return _run_of(cars, power=True)


def _consist_match(cars: list[Unit], names: tuple[str, ...], from_front: bool) -> int:
    """How many cars the consists ``names`` (outermost first) cover at one end, 0 when
    the end does not start with the first of them."""
    seq = cars if from_front else list(reversed(cars))
    i = 0
    for nm in names:
        key = nm.strip().lower()
        if i >= len(seq) or seq[i].part.lower() != key:
            return 0 if i == 0 else i
        while i < len(seq) and seq[i].part.lower() == key:
            i += 1
    return i


def cut_portion(cars: list[Unit], cmd: Command, *, keep_one: bool = True) -> tuple[list[Unit], list[Unit]]:
    """``cars`` split into (what stays, the portion) by the portion qualifiers of
    ``cmd`` as the manual's ``$detach`` defines them: ``/power`` (a power unit at the
    front, else at the rear), ``/leadingpower``, ``/allleadingpower``,
    ``/trailingpower``, ``/alltrailingpower``, ``/nonpower`` (the units without power
    at the end away from the power), ``/units=n`` (n > 0 at the front, n < 0 at the
    rear, at most all but one), ``/consist=a+b`` (those consists at either end,
    outermost first). A portion that is not there is empty. ``/onepower`` and
    ``/allpower`` (``$transfer``) are ``/power`` and the power units at either end."""
    n = len(cars)
    front = rear = 0
    if cmd.has("power") or cmd.has("onepower"):
        if n and cars[0].power:
            front = 1
        elif n and cars[-1].power:
            rear = 1
    elif cmd.has("leadingpower"):
        front = 1 if n and cars[0].power else 0
    elif cmd.has("allleadingpower"):
        front = _lead_power(cars)
    elif cmd.has("trailingpower"):
        rear = 1 if n and cars[-1].power else 0
    elif cmd.has("alltrailingpower"):
        rear = _lead_power(list(reversed(cars)))
    elif cmd.has("allpower"):
        front = _lead_power(cars)
        if not front:
            rear = _lead_power(list(reversed(cars)))
    elif cmd.has("nonpower"):
        pf, pr = bool(n and cars[0].power), bool(n and cars[-1].power)
        if pr and not pf:
            front = _run_of(cars, power=False)
        elif not pr:
            # power at the front, or at neither end: from the rear
            rear = _run_of(list(reversed(cars)), power=False)
    elif cmd.has("units"):
        v = (cmd.qualifier("units") or ("",))[0]
        try:
            k = int(v)
        except ValueError:
            raise UnitsError(f"${cmd.name} /units={v!r}: not a whole number") from None
        if k == 0:
            raise UnitsError(f"${cmd.name} /units=0: the manual does not allow 0")
        if k > 0:
            front = k
        else:
            rear = -k
    elif cmd.has("consist"):
        names = cmd.qualifier("consist") or ()
        front = _consist_match(cars, names, True)
        if not front:
            rear = _consist_match(cars, names, False)
    else:
        raise UnitsError(f"${cmd.name}: no portion given (/power, /units=n, /consist=…, …)")
    limit = n - 1 if keep_one else n
    front, rear = min(front, max(limit, 0)), min(rear, max(limit, 0))
    if front:
        return cars[front:], cars[:front]
    if rear:
        return cars[: n - rear], cars[n - rear :]
    return list(cars), []


def _units_word(k: int) -> str:
    return f"{k} unit{'s' if k != 1 else ''}"


def resolve_units(
    runs: Iterable[str],
    own: Callable[[str], list[Unit]],
    keeps_consist_of: dict[str, str],
    ops: list[JoinOp],
) -> Units:
    """The cars every run starts with after the joins and splits ``ops`` (docs §5.6).

    ``own(run)``: the run's own consist; ``keeps_consist_of[run]``: the run it is formed
    out of by ``$forms`` (it starts with that one's cars after its end). At a run's end
    its operations act in the order written: ``$detach`` cuts a portion that starts
    train ``/forms=C`` (or is left standing, ``/static``); ``$pickup=B`` adds B's cars
    behind its own; ``$transfer=B`` moves units between it and B (B starts with the
    result); ``$attach=B`` puts all its cars behind B's (B starts with both)."""
    by_train: dict[str, list[JoinOp]] = {}
    into: dict[str, list[JoinOp]] = {}  # runs whose start a join changes -> the ops doing it
    for op in ops:
        by_train.setdefault(op.train, []).append(op)
        if op.other is not None and op.kind in ("detach", "attach", "transfer"):
            into.setdefault(op.other, []).append(op)
    out = Units()
    start_memo: dict[str, list[Unit]] = {}
    end_memo: dict[str, list[Unit]] = {}
    given: dict[tuple[int, str], list[Unit]] = {}  # (op id, target) -> cars it starts with
    busy: set[str] = set()

    def base(r: str) -> list[Unit]:
        src = keeps_consist_of.get(r)
        return list(end(src)) if src is not None else list(own(r))

    def start(r: str) -> list[Unit]:
        if r in start_memo:
            return start_memo[r]
        if r in busy:
            raise UnitsError(f"the joins and splits of {r!r} go round in a circle")
        busy.add(r)
        cars = base(r)
        for op in into.get(r, ()):
            end(op.train)  # works out what it gives
            cars = given[(id(op), r)] if op.kind in ("detach", "transfer") else cars + given[(id(op), r)]
        busy.discard(r)
        start_memo[r] = cars
        return cars

    def end(r: str) -> list[Unit]:
        """The cars run ``r`` still has once its end's operations are done."""
        if r in end_memo:
            return end_memo[r]
        if r in busy:
            raise UnitsError(f"the joins and splits of {r!r} go round in a circle")
        cars = list(start(r))
        busy.add(r)
        notes = out.notes.setdefault(r, [])
        for op in by_train.get(r, ()):
            if op.kind == "detach":
                cars, part = cut_portion(cars, op.command)
                if op.other is not None:
                    given[(id(op), op.other)] = part
                    notes.append(f"detached {_units_word(len(part))} forming {op.other}")
                else:
                    notes.append(f"detached {_units_word(len(part))} left standing")
            elif op.kind == "pickup" and op.other is not None:
                b = end(op.other)
                cars = cars + b
                notes.append(f"picked up {op.other} ({_units_word(len(b))})")
            elif op.kind == "transfer" and op.other is not None:
                b = base(op.other)
                c = op.command
                if c.has("give"):
                    cars, part = cut_portion(cars, c)
                    b = b + part
                elif c.has("take"):
                    b, part = cut_portion(b, c, keep_one=False)
                    cars = cars + part
                elif c.has("keep"):
                    part, kept = cut_portion(cars, c)
                    cars, b = kept, b + part
                elif c.has("leave"):
                    part, kept = cut_portion(b, c, keep_one=False)
                    b, cars = kept, cars + part
                else:
                    raise UnitsError(f"train {r!r}: $transfer needs /give, /take, /keep or /leave")
                if not any(u.power for u in cars):
                    raise UnitsError(
                        f"train {r!r}: $transfer would leave it without a power unit (the manual forbids it)"
                    )
                moved = abs(len(b) - len(base(op.other)))
                given[(id(op), op.other)] = b
                notes.append(f"transferred {_units_word(moved)} with {op.other}")
            elif op.kind == "attach" and op.other is not None:
                given[(id(op), op.other)] = cars
                notes.append(f"attached to {op.other} ({_units_word(len(cars))})")
                cars = []
        busy.discard(r)
        end_memo[r] = cars
        return cars

    touched = set(into) | {k for k, v in keeps_consist_of.items() if v in by_train}
    # a run formed ($forms) out of one whose consist a join changed, and so on down
    changed = True
    while changed:
        changed = False
        for k, v in keeps_consist_of.items():
            if v in touched and k not in touched:
                touched.add(k)
                changed = True
    for r in runs:
        if r in by_train:
            end(r)
        if r in touched:
            out.start[r] = start(r)
    return out


__all__ = ["JOIN_COMMANDS", "JoinOp", "Unit", "Units", "UnitsError", "cut_portion", "resolve_units"]
