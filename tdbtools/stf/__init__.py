"""Structured text (STF): decoding, the Lark parse into a generic tree, and units.

What belongs here: anything about STF as text (encodings, includes, the generic
tree of blocks, writing it back, units of quantities), nothing about what a given
file type means (that is :mod:`tdbtools.formats`). See ``docs/formats.md`` §1.
"""

from .deepjson import dumps_deep
from .parser import find_install_root, parse_file, parse_source, parse_text, resolve_case_insensitive
from .source import Source, decode_bytes, read_source
from .tree import Block, Document, QStr

__all__ = [
    "Block",
    "Document",
    "QStr",
    "Source",
    "decode_bytes",
    "dumps_deep",
    "find_install_root",
    "parse_file",
    "parse_source",
    "parse_text",
    "read_source",
    "resolve_case_insensitive",
]
