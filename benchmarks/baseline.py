"""The reference a parser is measured against: a plain ``re`` tokenizer that builds
a tree of named nodes (no Lark, no comments, no includes, no errors, no typing).

The issue's targets are ratios to this: parsing DK24.tdb into the typed model at
most 1.5x its time, a cold route load at most 2x.
"""

from __future__ import annotations

import re
from pathlib import Path

_TOKEN = re.compile(r'\(|\)|"(?:[^"\\]|\\.)*"|[^\s()"]+')


def read_text(path: Path) -> str:
    data = path.read_bytes()
    if data[:2] == b"\xff\xfe":
        return data[2:].decode("utf-16-le")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252")


class Node:
    """A block: its name and items (strings and nodes), like tdbtools' generic tree."""

    __slots__ = ("name", "items")

    def __init__(self, name: str) -> None:
        self.name = name
        self.items: list = []


def tree(text: str) -> Node:
    text = text[text.find("\n") + 1 :]  # line 1 is the SIMIS signature
    root = Node("")
    stack = [root]
    items = root.items
    for tok in _TOKEN.findall(text):
        if tok == "(":
            name = items.pop() if items and isinstance(items[-1], str) else ""
            node = Node(name)
            items.append(node)
            stack.append(node)
            items = node.items
        elif tok == ")":
            stack.pop()
            items = stack[-1].items
        elif tok[0] == '"':
            items.append(tok[1:-1])
        else:
            items.append(tok)
    return root


def parse(path: Path) -> Node:
    return tree(read_text(path))
