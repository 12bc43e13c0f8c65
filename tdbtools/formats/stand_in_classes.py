"""Class designations of common railways, for choosing stand-in stock (docs/stand-ins.md §4).

A missing ``.eng`` is often named after its class (``EN57``, ``SM42``, ``BR218``,
``BB67400``, ``Class 158``). The table below says what such a class is: diesel or
electric, locomotive or multiple unit. Each entry is a pattern on the file, folder and
consist names (case-insensitive, the class letters at a word start, an optional space
or hyphen before the number) and what it means. The first entry that matches wins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CLASS_TABLE", "ClassHint", "class_hint"]


@dataclass(frozen=True, slots=True)
class ClassHint:
    traction: str  # "diesel" | "electric"
    unit: bool  # a multiple unit (its cars are power cars, not locomotives)
    label: str  # what the table says, for the stand-in message

    @property
    def variant(self) -> str:
        """The generic stand-in (Stock.generic's variant)."""
        if self.unit:
            return "dmu" if self.traction == "diesel" else "emu"
        return self.traction


def _e(pattern: str, traction: str, unit: bool, label: str) -> tuple[re.Pattern[str], ClassHint]:
    # a class word: not preceded by a letter or digit, the number not followed by a digit
    return re.compile(rf"(?<![A-Za-z0-9])(?:{pattern})(?!\d)", re.I), ClassHint(traction, unit, label)


_SEP = r"[ _-]?"
#: (pattern, meaning), most specific first.
CLASS_TABLE: tuple[tuple[re.Pattern[str], ClassHint], ...] = (
    # PKP / PLK (Poland): S… diesel, E… electric; second letter: M shunter, T freight,
    # U universal, P passenger locomotive; A/N railbus/railcar; N/D/Z multiple unit.
    _e(rf"S[MTUP]{_SEP}\d{{2,3}}", "diesel", False, "PKP S…: diesel locomotive"),
    _e(rf"S[AN]{_SEP}\d{{2,3}}", "diesel", True, "PKP SA/SN: diesel railbus or multiple unit"),
    _e(rf"E[NDZ]{_SEP}\d{{2,3}}", "electric", True, "PKP EN/ED/EZ: electric multiple unit"),
    _e(rf"E[UPM]{_SEP}\d{{2,3}}|ET{_SEP}\d{{2}}", "electric", False, "PKP EU/EP/ET/EM: electric locomotive"),
    # DB (Germany), Baureihe: 1xx electric, 2xx/3xx diesel locomotives, 4xx EMU, 6xx DMU.
    _e(rf"(?:BR|Baureihe){_SEP}1\d\d", "electric", False, "DB Baureihe 1xx: electric locomotive"),
    _e(rf"(?:BR|Baureihe){_SEP}[23]\d\d", "diesel", False, "DB Baureihe 2xx/3xx: diesel locomotive"),
    _e(rf"(?:BR|Baureihe){_SEP}4\d\d", "electric", True, "DB Baureihe 4xx: electric multiple unit"),
    _e(rf"(?:BR|Baureihe){_SEP}6\d\d", "diesel", True, "DB Baureihe 6xx: diesel multiple unit"),
    # SNCF (France): BB/CC 6xxxx-7xxxx diesel, other BB/CC electric; X railcars/DMU,
    # Z electric multiple units.
    _e(rf"(?:BB|CC){_SEP}[67]\d{{4}}", "diesel", False, "SNCF BB/CC 6xxxx-7xxxx: diesel locomotive"),
    _e(rf"(?:BB|CC){_SEP}\d{{3,5}}", "electric", False, "SNCF BB/CC: electric locomotive"),
    _e(rf"X{_SEP}\d{{4,5}}", "diesel", True, "SNCF X: diesel railcar or multiple unit"),
    _e(rf"Z{_SEP}\d{{4,5}}", "electric", True, "SNCF Z: electric multiple unit"),
    # Britain (TOPS): 01-79 diesel, 80-99 electric locomotives; 1xx-2xx DMU, 3xx-5xx EMU.
    _e(rf"Class{_SEP}(?:1\d\d|2[0-2]\d)", "diesel", True, "British class 1xx-2xx: diesel multiple unit"),
    _e(rf"Class{_SEP}[3-5]\d\d", "electric", True, "British class 3xx-5xx: electric multiple unit"),
    _e(rf"Class{_SEP}(?:8\d|9\d)", "electric", False, "British class 80-99: electric locomotive"),
    _e(rf"Class{_SEP}[0-7]?\d", "diesel", False, "British class 01-79: diesel locomotive"),
)


def class_hint(text: str) -> ClassHint | None:
    """What the first class designation found in ``text`` says, or None."""
    for pattern, hint in CLASS_TABLE:
        if pattern.search(text):
            return hint
    return None
