"""JSON text of arbitrarily deep trees (a generic STF tree may nest 100,000 blocks)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["dumps_deep"]

_END = object()


def dumps_deep(obj: Any, indent: int = 1) -> str:
    """``json.dumps(obj, indent=indent, ensure_ascii=False)`` without recursion: a tree
    nested 100,000 blocks deep is valid STF, and json.dumps would hit the recursion limit.
    Indentation stops growing below depth 64 (else the text grows with the square of the
    depth)."""
    out: list[str] = []
    stack: list[list[Any]] = []  # [iterator, is_dict, depth, first]

    def start(v, depth: int) -> None:
        if isinstance(v, dict) and v:
            out.append("{")
            stack.append([iter(v.items()), True, depth + 1, True])
        elif isinstance(v, (list, tuple)) and v:
            out.append("[")
            stack.append([iter(v), False, depth + 1, True])
        else:
            out.append(json.dumps(v, ensure_ascii=False))

    start(obj, 0)
    while stack:
        top = stack[-1]
        nxt: Any = next(top[0], _END)
        depth = top[2]
        if nxt is _END:
            stack.pop()
            out.append("\n" + " " * (indent * min(depth - 1, 64)) + ("}" if top[1] else "]"))
            continue
        out.append(("\n" if top[3] else ",\n") + " " * (indent * min(depth, 64)))
        top[3] = False
        if top[1]:
            key, nxt = nxt
            out.append(json.dumps(str(key), ensure_ascii=False) + ": ")
        start(nxt, depth)
    return "".join(out)
