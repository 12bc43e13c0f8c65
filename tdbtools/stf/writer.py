"""Writing generic STF trees back to text, and files atomically.

``format_stf(doc)`` gives text that parses back to an equal tree: values are quoted
where they must be (white space, parentheses, quotes, a leading ``#``/``_``, the
keywords ``comment``/``skip``/``include``, an empty string) and where they were
quoted in the source. Files are written as MSTS does (UTF-16LE with BOM, CRLF,
signature line) into a temporary file that replaces the target only when complete.
"""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from .tree import Block, QStr

_NEEDS_QUOTES = re.compile(r'[\x00-\x20()"\\]|^[#_]|^$|^(?:comment|skip|include)$', re.I)


def quote(value: str) -> str:
    s = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{s}"'


def format_value(value: str) -> str:
    if value.__class__ is QStr or _NEEDS_QUOTES.search(value):
        return quote(value)
    return value


def format_stf(root: Block, *, signature: str | None = None, indent: str = "\t", newline: str = "\n") -> str:
    """The STF text of ``root``'s items (a Document's signature line first)."""
    sig = signature if signature is not None else getattr(root, "signature", "")
    out: list[str] = [sig, ""]
    # Iterative, so that deeply nested trees do not hit the recursion limit. Values
    # are gathered on the current line; a block flushes it ("Name ( 3" stays together).
    stack: list[tuple[list, int, int]] = [(root.items, 0, 0)]
    line: list[str] = []
    line_depth = 0
    while stack:
        items, i, depth = stack.pop()
        if i >= len(items):
            if depth > 0:
                if line:
                    out.append(indent * line_depth + " ".join(line) + " )")
                    line = []
                else:
                    out.append(indent * (depth - 1) + ")")
            continue
        item = items[i]
        stack.append((items, i + 1, depth))
        if item.__class__ is Block:
            if line:
                out.append(indent * line_depth + " ".join(line))
                line = []
            sub = item.items
            name = item.name
            if all(x.__class__ is not Block for x in sub):
                vals = " ".join(format_value(v) for v in sub)
                out.append(indent * depth + (f"{name} ( {vals} )" if vals else f"{name} ( )").lstrip())
            else:
                line = [f"{name} (" if name else "("]
                line_depth = depth
                stack.append((sub, 0, depth + 1))
        else:
            if not line:
                line_depth = depth
            line.append(format_value(item))
    if line:
        out.append(indent * line_depth + " ".join(line))
    return newline.join(out) + newline


def write_text_atomic(path: str | Path, text: str, *, encoding: str = "utf-16", newline: str = "\r\n") -> None:
    """Write ``text`` to ``path`` via a temporary file in the same folder and an atomic
    rename: the target is either the old file or the complete new one, never half."""
    target = Path(path)
    data = text.replace("\r\n", "\n").replace("\n", newline)
    if encoding.lower() in ("utf-16", "utf-16-le", "utf16"):
        raw = b"\xff\xfe" + data.encode("utf-16-le")
    else:
        raw = data.encode(encoding)
    write_bytes_atomic(target, raw)


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
