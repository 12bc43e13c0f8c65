"""Consist files ``.con`` (docs/formats.md §9) and finding the rolling stock they name.

::

    Train (
      TrainCfg ( <label>
         Name ( s )  Serial ( n )  MaxVelocity ( A B )  NextWagonUID ( n )  Durability ( f )
         Engine ( UiD ( n ) [Flip ( )] EngineData ( <file> <folder> ) )
         Wagon  ( UiD ( n ) [Flip ( )] WagonData  ( <file> <folder> ) )
         …
      )
    )

Cars are listed front (first) to back (last). As in Open Rails the kind of a car comes from
its ``EngineData`` / ``WagonData`` block (``.eng`` / ``.wag``), whichever block holds it;
**any** ``Flip`` block marks the car reversed, even ``Flip ( 0 )`` (Open Rails only warns).

:func:`resolve_stock` finds ``<root>/TRAINS/TRAINSET/<folder>/<file>.eng|.wag`` (any case),
preferring the ``<folder>/OpenRails/<file>.<ext>`` override as Open Rails does, and reads
every file once.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path

from .._fs import FOLLOW_LINKS_ENV, inside, is_file, is_relative_name
from ..errors import Diagnostics, FormatError, RouteError, truncate_value
from ..stf import parse_file, resolve_case_insensitive
from ..stf.tree import Block, Document
from ._read import Reader, to_int
from ._records import fast_pickle
from .stand_in_classes import ClassHint, class_hint
from .stock import Stock, read_stock

__all__ = [
    "CarEntry",
    "Consist",
    "EmptyConsistError",
    "StandInWarning",
    "consist_from_document",
    "read_consist",
    "resolve_stock",
    "stand_in_class",
    "stand_in_variant",
    "stock_path",
]

#: Consist name when the file gives neither a label nor ``Name``.
DEFAULT_NAME = "Loose consist."


class EmptyConsistError(FormatError):
    """A consist without a car: nothing can run, in lenient mode either (docs/security.md §2)."""


class StandInWarning(UserWarning):
    """A consist names rolling stock that is not installed; a generic stand-in is used."""


@dataclass(frozen=True, slots=True)
class CarEntry:
    """One car of a consist: ``file`` (no extension) in ``TRAINS/TRAINSET/<folder>``."""

    kind: str  # "engine" (EngineData, .eng) | "wagon" (WagonData, .wag)
    uid: int
    flipped: bool
    file: str
    folder: str

    @property
    def extension(self) -> str:
        return ".eng" if self.kind == "engine" else ".wag"


@dataclass(frozen=True, slots=True)
class Consist:
    """A ``.con`` file: ``cars`` front to back; ``max_velocity`` in m/s (MaxVelocity's A)."""

    path: str
    name: str
    label: str
    serial: int
    max_velocity: float | None
    cars: tuple[CarEntry, ...]

    def __len__(self) -> int:
        return len(self.cars)


def read_consist(path: str | Path, *, strict: bool = True, diagnostics: Diagnostics | None = None) -> Consist:
    diags = diagnostics if diagnostics is not None else Diagnostics(strict=strict)
    return consist_from_document(parse_file(path, diagnostics=diags), diags)


def consist_from_document(doc: Document, diags: Diagnostics) -> Consist:
    rd = Reader(diags)
    train = doc.find("Train")
    cfg = train.find("TrainCfg") if train is not None else None
    if cfg is None:
        rd.problem(train if train is not None else doc, "no Train ( TrainCfg ( … ) ) block in consist file")
        return Consist(doc.path, DEFAULT_NAME, "", 0, None, ())
    items = cfg.items
    label = str(items[0]) if items and items[0].__class__ is not Block else ""
    name: str | None = None
    serial = 0
    max_velocity: float | None = None
    cars: list[CarEntry] = []
    for blk in cfg.blocks():
        k = blk.key
        if k == "name":
            name = rd.string(blk, 0, "")
        elif k == "serial":
            serial = rd.value(blk, 0, to_int, 0, "Serial")
        elif k == "maxvelocity":
            max_velocity = rd.quantity(blk, 0, "speed", default=0.0)
        elif k in ("engine", "wagon"):
            car = _car(rd, blk, diags)
            if car is not None:
                cars.append(car)
    if not cars:
        # Nothing can run without a car: an error in lenient mode too (docs/security.md §2).
        raise rd.error(cfg, "consist has no cars (no readable Engine or Wagon block)", cls=EmptyConsistError)
    return Consist(
        doc.path,
        name if name is not None else (label or DEFAULT_NAME),
        label,
        serial,
        max_velocity,
        tuple(cars),
    )


def _car(rd: Reader, blk: Block, diags: Diagnostics) -> CarEntry | None:
    uid = 0
    flipped = False
    data: tuple[str, str, str] | None = None
    for sub in blk.blocks():
        k = sub.key
        if k == "uid":
            uid = rd.value(sub, 0, to_int, 0, "UiD")
        elif k == "flip":
            flipped = True  # Open Rails: MustMatch("("), MustMatch(")"), then flipped
            if sub.items:
                diags.note(
                    f"Flip ( {' '.join(str(i) for i in sub.values)} ): Open Rails expects "
                    "an empty Flip ( ) and still reverses the car",
                    sub.location,
                )
        elif k in ("enginedata", "wagondata"):
            vals = sub.values
            if len(vals) < 2:
                rd.problem(sub, f"{sub.name}: expected ( file folder ), found {len(vals)} value(s)")
                continue
            data = ("engine" if k == "enginedata" else "wagon", str(vals[0]), str(vals[1]))
            bad = next((v for v in data[1:] if not is_relative_name(v)), None)
            if bad is not None:
                # The stock must stay in TRAINS/TRAINSET (docs/security.md §3).
                rd.problem(sub, f"{sub.name}: {truncate_value(bad)} is not a name inside TRAINS/TRAINSET")
                return None
    if data is None:
        rd.problem(blk, f"{blk.name}: no EngineData or WagonData block")
        return None
    kind, file, folder = data
    if kind != blk.key:
        diags.note(
            f"{blk.name} block holds {'EngineData' if kind == 'engine' else 'WagonData'}: "
            f"the car is read as {'an engine' if kind == 'engine' else 'a wagon'} "
            f"(as Open Rails does)",
            blk.location,
        )
    return CarEntry(kind, uid, flipped, file, folder)


# -- finding the stock -----------------------------------------------------------------------


def stock_path(install_root: str | Path, car: CarEntry) -> tuple[Path, Path | None]:
    """``(expected path, existing file or None)`` for a car: the ``OpenRails/`` override if
    it exists, else the plain file; names match in any case."""
    trainset = Path(install_root) / "TRAINS" / "TRAINSET"
    folder = trainset / car.folder.replace("\\", "/")
    name = car.file.replace("\\", "/") + car.extension
    if not (is_relative_name(car.folder) and is_relative_name(car.file)):
        return folder / name, None  # never looked up outside TRAINSET
    for candidate in (folder / "OpenRails" / name, folder / name):
        found = resolve_case_insensitive(candidate)
        if is_file(found) and inside(found, install_root):
            return folder / name, found
    return folder / name, None


_FREIGHT = re.compile(r"freight|goods|wagon|cargo|hopper|tanker|container|gondola|boxcar", re.I)
_COACH = re.compile(r"coach|carriage|passenger|sleeper|couchette|diner|restaurant|bistro", re.I)


#: Names that say diesel: the word, DMU, and classes named on real routes (DSB MX/MY/MZ/ME,
#: IC3 = DSB MF, EMD Class 66, Coradia LINT, Desiro, Sprinter).
_DIESEL = re.compile(
    r"diesel|\bdsl|dmu|railcar|\bic ?3\b|\bm[efrqxyz]\b|class ?66|\blint|desiro|sprinter", re.I
)
#: Names that say electric: the word, EMU, overhead voltages and common electric families.
_ELECTRIC = re.compile(
    r"electric|\bemu\b|\bel\b|\d+ ?kv|traxx|vectron|\bir ?4\b|\bea\b|\beg\b|\bet\b|"
    r"tgv|\bice\b|flirt|talent|pendolino",
    re.I,
)


def stand_in_class(car: CarEntry, consist: Consist | None = None) -> ClassHint | None:
    """The class designation an engine's file or folder name (else its consist's name)
    carries, per the table of :mod:`tdbtools.formats.stand_in_classes`; None for wagons
    and unknown names."""
    if car.kind != "engine":
        return None
    return class_hint(f"{car.file} {car.folder}") or (
        class_hint(consist.name) if consist is not None else None
    )


def stand_in_variant(car: CarEntry, consist: Consist | None = None) -> str:
    """The generic stand-in for a missing car.

    An engine whose names carry a class designation of the table in
    :mod:`tdbtools.formats.stand_in_classes` (``EN57``, ``SM42``, ``BR 642``,
    ``BB 67400``, ``Class 158``) gets what the table says (a multiple unit's power car
    also when its wagons share its folder). Otherwise:

    Engines: a multiple unit (``"dmu"``/``"emu"``) when a wagon of the consist comes from
    the engine's own folder (its stock is one unit), else a locomotive
    (``"diesel"``/``"electric"``); diesel when the file, folder or consist name says so
    (``_DIESEL``) and nothing says electric, otherwise electric. Wagons get a freight
    wagon when the file or folder name says so (freight, goods, wagon, cargo, hopper,
    tanker, container, gondola, boxcar — any case, anywhere in the name) and no coach word
    (coach, carriage, passenger, sleeper, couchette, diner, restaurant, bistro) is present;
    otherwise a passenger coach, as unnamed trailers in real consists are mostly coaches.
    """
    if car.kind == "engine":
        unit = consist is not None and any(
            c.kind == "wagon" and c.folder.lower() == car.folder.lower() for c in consist.cars
        )
        hint = stand_in_class(car, consist)
        if hint is not None:
            return ("dmu" if hint.traction == "diesel" else "emu") if (hint.unit or unit) else hint.traction
        text = f"{car.file} {car.folder} {consist.name if consist is not None else ''}"
        diesel = bool(_DIESEL.search(text)) and not _ELECTRIC.search(text)
        if unit:
            return "dmu" if diesel else "emu"
        return "diesel" if diesel else "electric"
    text = f"{car.file} {car.folder}"
    if _FREIGHT.search(text) and not _COACH.search(text):
        return "freight"
    return "passenger"


def resolve_stock(
    consist: Consist,
    install_root: str | Path,
    *,
    stand_in: bool = False,
    strict: bool = True,
    diagnostics: Diagnostics | None = None,
) -> list[Stock]:
    """The :class:`Stock` of every car of ``consist``, front to back.

    Missing files raise :class:`~tdbtools.errors.RouteError` naming every missing path
    (``err.missing`` holds them). With ``stand_in=True`` a generic stand-in of the same kind
    (:func:`stand_in_variant`) is used instead and each substitution is reported as a
    :class:`StandInWarning` naming the missing path (and recorded in ``diagnostics`` if
    given). ``strict`` / ``diagnostics`` apply to reading the stock files.
    """
    root = Path(install_root)
    diags = diagnostics if diagnostics is not None else Diagnostics(strict=strict)
    # one look-up per distinct file (a 1,000-car consist names a few): a path is a
    # function of the car's kind, folder and file alone
    where: dict[tuple[str, str, str], tuple[Path, Path | None]] = {}
    located = []
    for car in consist.cars:
        name = (car.kind, car.folder, car.file)
        hit = where.get(name)
        if hit is None:
            hit = where[name] = stock_path(root, car)
        located.append(hit)
    missing: dict[Path, list[int]] = {}
    for i, (expected, found) in enumerate(located):
        if found is None:
            missing.setdefault(expected, []).append(i)
    if missing and not stand_in:
        lines = [
            f"  {p}  (car{'s' if len(idx) > 1 else ''} {', '.join(map(str, idx))})"
            + (
                f"  [found, but it leads outside the install: set {FOLLOW_LINKS_ENV}=1 to follow it]"
                if is_file(resolve_case_insensitive(p))
                else ""
            )
            for p, idx in missing.items()
        ]
        err = RouteError(
            f"consist {consist.name!r} ({consist.path}) names rolling stock that is "
            f"not installed under {root}:\n" + "\n".join(lines)
        )
        err.missing = tuple(missing)  # type: ignore[attr-defined]
        raise err
    cache: dict[Path, Stock] = {}
    out: list[Stock] = []
    for car, (expected, found) in zip(consist.cars, located):
        if found is None:
            variant = stand_in_variant(car, consist)
            key = Path(f"<generic:{car.kind}/{variant}>")
            if key not in cache:
                cache[key] = Stock.generic(car.kind, variant)
            what = {
                "dmu": "diesel multiple-unit power car",
                "emu": "electric multiple-unit power car",
                "diesel": "diesel locomotive",
                "electric": "electric locomotive",
            }.get(variant, f"{variant} wagon")
            hint = stand_in_class(car, consist)
            why = f" ({hint.label})" if hint is not None else ""
            message = f"consist {consist.name!r}: {expected} is missing; using a generic {what} stand-in{why}"
            warnings.warn(StandInWarning(message), stacklevel=2)
            if diagnostics is not None:
                diagnostics.note(message)
            out.append(cache[key])
            continue
        stock = cache.get(found)
        if stock is None:
            stock = cache[found] = read_stock(found, diagnostics=diags, root=root)
        out.append(stock)
    return out


fast_pickle(CarEntry, Consist)
