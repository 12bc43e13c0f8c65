"""Writing generic STF trees back to text, and files atomically.

``format_stf(doc)`` gives text that parses back to an equal tree: values are quoted
where they must be (white space, parentheses, quotes, a leading ``#``/``_``, the
keywords ``comment``/``skip``/``include``, an empty string) and where they were
quoted in the source. Files are written as MSTS does (UTF-16LE with BOM, CRLF,
signature line) into a temporary file that replaces the target only when complete.
"""

from __future__ import annotations

import re

from .._fs import write_bytes_atomic, write_text_atomic
from .tree import Block, QStr

__all__ = ["format_stf", "format_value", "quote", "write_bytes_atomic", "write_text_atomic"]

#: Lines are indented one step per level down to this depth, no further: the text of a
#: tree nested 100,000 deep would otherwise grow with the square of the depth (~10 GB).
MAX_INDENT_DEPTH = 32

# A word starting with "+" is quoted too: after a quoted string the "+" would join it to
# the next string, or be eaten ("ab" +4 reads as "ab" 4).
_NEEDS_QUOTES = re.compile(r'[\x00-\x20()"\\]|^[#_+]|^$|^(?:comment|skip|include)$', re.I)


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
                    out.append(indent * min(line_depth, MAX_INDENT_DEPTH) + " ".join(line) + " )")
                    line = []
                else:
                    out.append(indent * min(depth - 1, MAX_INDENT_DEPTH) + ")")
            continue
        item = items[i]
        stack.append((items, i + 1, depth))
        if item.__class__ is Block:
            if line:
                out.append(indent * min(line_depth, MAX_INDENT_DEPTH) + " ".join(line))
                line = []
            sub = item.items
            name = item.name
            if all(x.__class__ is not Block for x in sub):
                vals = " ".join(format_value(v) for v in sub)
                body = f"( {vals} )" if vals else "( )"
                # (not .lstrip(): a name may be a Unicode space, which is a word character in STF)
                out.append(indent * min(depth, MAX_INDENT_DEPTH) + (f"{name} {body}" if name else body))
            else:
                line = [f"{name} (" if name else "("]
                line_depth = depth
                stack.append((sub, 0, depth + 1))
        else:
            if not line:
                line_depth = depth
            nxt = items[i + 1] if i + 1 < len(items) else None
            if nxt.__class__ is Block and not nxt.name:
                # A plain word before an anonymous ( ... ) would be read as its name.
                line.append(quote(item))
            else:
                line.append(format_value(item))
    if line:
        out.append(indent * min(line_depth, MAX_INDENT_DEPTH) + " ".join(line))
    return newline.join(out) + newline
