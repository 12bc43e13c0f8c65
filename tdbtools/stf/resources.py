"""Finding the Lark grammars: inside the installed package, or in a source checkout."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from ..errors import TdbToolsError

_PACKAGE = Path(__file__).resolve().parent.parent


def grammar_path(name: str) -> Path:
    # Wheels carry the top-level grammars/ folder as tdbtools/grammars/; a source
    # checkout (or an editable install) has it beside the package.
    for folder in (_PACKAGE / "grammars", _PACKAGE.parent / "grammars"):
        candidate = folder / name
        if candidate.is_file():
            return candidate
    raise TdbToolsError(f"grammar {name!r} not found: the tdbtools installation is incomplete")


@cache
def grammar_text(name: str) -> str:
    return grammar_path(name).read_text(encoding="utf-8")
