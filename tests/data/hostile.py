"""Builders of hostile inputs for the security tests and the fuzzer (docs/security.md).

Each function writes or returns one file that an attacker could hand to tdbtools: a
compression bomb, impossible geometry, a planted cache entry, ... Nothing here is
random, so a failing case can be rebuilt exactly.
"""
from __future__ import annotations

import zlib
from pathlib import Path

__all__ = ["bomb_bytes", "write_bomb", "tsection_with_section", "SAMPLE_INSTALL"]

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
    return ("SIMISA@@@@@@@@@@JINX0T0t______\n\n"
            f"TrackSections ( {sid}\n{body}\t)\n)\n")
