"""Builders of hostile inputs for the security tests and the fuzzer (docs/security.md).

Each function writes or returns one file that an attacker could hand to tdbtools: a
compression bomb, impossible geometry, a planted cache entry, ... Nothing here is
random, so a failing case can be rebuilt exactly.
"""

from __future__ import annotations

import zlib
from pathlib import Path

__all__ = ["SAMPLE_INSTALL", "bomb_bytes", "set_section", "tsection_with_section", "write_bomb"]

SAMPLE_INSTALL = Path(__file__).resolve().parents[2] / "sample_routes" / "sample"


def bomb_bytes(inflated: int, *, utf16: bool = False, fill: bytes = b" ") -> bytes:
    """A SIMISA@F file whose zlib body inflates to about ``inflated`` bytes of ``fill``
    after a text sub-header, built without holding the inflated text in memory."""
    comp = zlib.compressobj(9)
    head = "JINX0T0t______\r\n"
    sub = b"\xff\xfe" + head.encode("utf-16-le") if utf16 else head.encode("ascii")
    fill = fill.decode("ascii").encode("utf-16-le") if utf16 else fill
    out = [comp.compress(sub)]
    block = fill * ((1 << 20) // len(fill))
    left = inflated
    while left > 0:
        piece = block[: min(left, len(block))]
        out.append(comp.compress(piece))
        left -= len(piece)
    out.append(comp.flush())
    return b"SIMISA@F\0\0\0\0@@@@" + b"".join(out)


def write_bomb(path: Path, inflated: int, **kw) -> Path:
    path.write_bytes(bomb_bytes(inflated, **kw))
    return path


def tsection_with_section(sid: int, size: str, curve: str | None = None) -> str:
    """Global-layout tsection.dat text holding one TrackSection (``size`` is
    ``"width length"``, ``curve`` ``"radius angle"``)."""
    body = f"\tTrackSection ( {sid}\n\t\tSectionSize ( {size} )\n"
    if curve is not None:
        body += f"\t\tSectionCurve ( {curve} )\n"
    return f"SIMISA@@@@@@@@@@JINX0T0t______\n\nTrackSections ( {sid}\n{body}\t)\n)\n"


def set_section(install: Path, sid: int, size: str, curve: str | None = None) -> None:
    """Rewrite TrackSection ``sid`` of ``install``/GLOBAL/tsection.dat (UTF-16) with
    ``SectionSize ( size )`` and, if given, ``SectionCurve ( curve )``."""
    import re

    path = install / "GLOBAL" / "tsection.dat"
    text = path.read_bytes().decode("utf-16")
    body = f"TrackSection ( {sid}\r\n SectionSize ( {size} )\r\n"
    if curve is not None:
        body += f" SectionCurve ( {curve} )\r\n"
    body += ")\r\n"
    new, n = re.subn(rf"TrackSection \( {sid}\r\n(?: Section\w+ \([^)]*\)\r\n)+\)\r\n", body, text, count=1)
    if n != 1:
        raise ValueError(f"TrackSection {sid} not found")
    path.write_bytes(b"\xff\xfe" + new.encode("utf-16-le"))
