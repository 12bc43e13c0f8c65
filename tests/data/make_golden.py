"""Write the golden JSON files for the valid fixtures in tests/data/valid.

``python tests/data/make_golden.py`` writes, for every fixture in :data:`FIXTURES`:

* ``valid/<stem>.json``: the generic tree, ``parse_file(path).to_json()`` without the
  ``path`` key;
* ``valid/<stem>.typed.json`` for typed fixtures: key values of the typed reader's
  result (see :func:`typed_summary`).

The goldens are committed and were checked by eye against the spec
(docs/formats.md §1-3, §5-7), not just copied from the code:
re-run this script only when a fixture changes, and review the diff.
``tests/test_fixtures.py`` imports :data:`FIXTURES` and :func:`typed_summary` from here.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
VALID = HERE / "valid"

#: fixture file (relative to valid/) -> typed reader ("stf": generic tree only)
FIXTURES: dict[str, str] = {
    "utf16_crlf.dat": "stf",
    "utf8_lf.dat": "stf",
    "utf8_bom.dat": "stf",
    "cp1252.dat": "stf",
    "comments.dat": "stf",
    "strings.dat": "stf",
    "words.dat": "stf",
    "case.dat": "stf",
    "include_main.dat": "stf",
    "compressed.dat": "stf",
    "tiny.tdb": "tdb",
    "global_tsection.dat": "tsection",
    "local_tsection.dat": "tsection_local",
    "route.trk": "trk",
}


def golden_path(name: str, typed: bool = False) -> Path:
    stem = Path(name).stem
    return VALID / f"{stem}{'.typed' if typed else ''}.json"


def generic_tree(path: Path) -> dict:
    from tdbtools.stf import parse_file

    d = parse_file(path).to_json()
    d.pop("path", None)
    return d


def _plain(value):
    """Dataclasses, tuples and numpy values as JSON-able plain data."""
    import numpy as np

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {"kind": value.kind} if hasattr(type(value), "kind") else {}
        for f in dataclasses.fields(value):
            out[f.name] = _plain(getattr(value, f.name))
        return out
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value


def typed_summary(name: str, reader: str):
    """The key typed values of one fixture, as plain JSON data."""
    from tdbtools.formats import read_tdb, read_trk, read_tsection_file

    path = VALID / name
    if reader == "tdb":
        db = read_tdb(path)
        from tdbtools.formats.tdb import SECTION_FIELDS

        return {
            "serial": db.serial,
            "counts": db.counts(),
            "item_counts": db.item_counts(),
            "nodes": [_plain(n) for n in db.nodes],
            "sections": {f: _plain(getattr(db.sections, f)) for f in (*SECTION_FIELDS, "node")},
            "items": [_plain(i) for i in db.items],
            "speed_ms": {str(i.index): i.speed_ms for i in db.items if i.kind == "speedpost"},
        }
    if reader in ("tsection", "tsection_local"):
        ts = read_tsection_file(path, local=(reader == "tsection_local"))
        sections = {}
        for sid in ts.sections.ids.tolist():
            s = ts.section(sid)
            sections[str(sid)] = {**_plain(s), "arc_length": s.arc_length, "is_curved": s.is_curved}
        shapes = {str(sid): _plain(ts.shape(sid)) for sid in ts.shapes.ids.tolist()}
        return {
            "sections": sections,
            "shapes": shapes,
            "track_paths": {str(k): list(v) for k, v in sorted(ts.track_paths.items())},
        }
    if reader == "trk":
        trk = read_trk(path)
        out = _plain(trk)
        out.pop("path", None)
        return out
    raise ValueError(f"no typed summary for reader {reader!r}")


def main() -> None:
    sys.path.insert(0, str(HERE.parent.parent))
    for name, reader in FIXTURES.items():
        tree = generic_tree(VALID / name)
        golden_path(name).write_text(json.dumps(tree, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        if reader != "stf":
            typed = typed_summary(name, reader)
            golden_path(name, typed=True).write_text(
                json.dumps(typed, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
            )
    print(f"goldens written for {len(FIXTURES)} fixtures in {VALID}")


if __name__ == "__main__":
    main()
