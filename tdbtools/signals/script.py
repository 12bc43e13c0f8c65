"""Signal scripts (``sigscr.dat`` and the other ``ScriptFiles``): Open Rails' line rules, the
Lark grammar ``grammars/sigscr.lark`` and a compiler to Python functions (docs/signals.md §2).

Reading a file:

1. :func:`preprocess` applies the line rules (upper-casing, ``//`` and start-of-fragment ``/*``
   comments, fragments split at ``;``, ``{`` and ``}``, ``SCRIPT`` and ``REM SCRIPT`` lines)
   and keeps, for every fragment, where it came from;
2. each script body is parsed by the LALR grammar; a syntax error is a :class:`ScriptError`
   (a :class:`~tdbtools.errors.SourceError` at the original line and column). Lenient mode
   records it, drops the offending fragment and parses again, as Open Rails skips a statement
   it cannot read;
3. :func:`compile_scripts` turns the tree into Python source text and compiles it once. The
   source is made only of generated names (``l0``, ``l1`` … for locals), integers that went
   through ``int()`` and method names from a fixed table: no text of the file ever reaches
   it, so a hostile file cannot inject code.

A compiled script is a function ``f(h) -> (state, draw_state)``; ``h`` is the head context
the runtime provides (:class:`HeadContext` lists what it must offer).

The line rules and the grammar are in :mod:`.script_parse`, the compiler in
:mod:`.script_compile`, the bounds, errors and tables they share in :mod:`.script_base`;
this module reads a file with them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lark import Tree

from .._fs import FileTooLargeError, read_bounded
from ..errors import Diagnostics, Finding, Location
from ..formats.sigcfg import FUNCTIONS
from .script_base import (
    COMPILE_CHUNK_CHARS,
    FUNCTION_ARGS,
    MAX_NEST,
    MAX_SCRIPT_BYTES,
    MAX_SOURCE_CHARS,
    HeadContext,
    RawScript,
    ScriptContext,
    ScriptError,
    ScriptRuntimeError,
)
from .script_compile import Compiler, TooDeep, fallback_source, int_div, int_mod, tree_depth
from .script_parse import parse_script, preprocess


@dataclass(frozen=True, slots=True, eq=False)
class Script:
    """A parsed and compiled script."""

    name: str  # upper-cased, as written
    path: str
    line: int
    tree: Tree | None = field(repr=False)  # not kept (None): see compile_scripts
    source: str = field(repr=False)  # the generated Python
    function: Callable[[Any], tuple[int, int]] = field(repr=False)
    calls: dict[str, int] = field(default_factory=dict)  # built-in function -> number of calls
    errors: int = 0  # syntax errors recovered from

    @property
    def key(self) -> str:
        return self.name.strip().lower()


@dataclass(frozen=True, slots=True, eq=False)
class ScriptFile:
    path: str
    scripts: tuple[Script, ...]
    warnings: tuple[Finding, ...]
    errors: int

    def by_name(self) -> dict[str, Script]:
        out: dict[str, Script] = {}
        for s in self.scripts:
            out.setdefault(s.key, s)
        return out


def compile_scripts(
    raws: list[RawScript],
    ctx: ScriptContext,
    *,
    functions: dict[str, int] | None = None,
    subtypes: dict[str, int] | None = None,
) -> list[Script]:
    """Parse and compile every script: ``compile()`` once per chunk of generated source (the
    cost of a call is mostly fixed; a bounded chunk bounds its memory). A script that is nested
    too deeply or generates too much source is dropped with a located problem; the trees are
    not kept (``Script.tree`` is None), so memory follows the largest script, not the file."""
    fns = functions if functions is not None else {n: k for k, n in enumerate(FUNCTIONS)}
    subs = subtypes or {}
    parsed: list[tuple[RawScript, int, Compiler, str]] = []
    for k, raw in enumerate(raws):
        tree, errors = parse_script(raw, ctx)
        comp = Compiler(ctx, raw, fns, subs)
        src = fallback_source(k)
        if tree is not None:
            why = ""
            if tree_depth(tree) > MAX_NEST:
                why = f"nested more than {MAX_NEST} deep"
            else:
                try:
                    src = comp.compile(tree, k)
                except TooDeep:
                    why = "nested too deeply"
                if not why and len(src) > MAX_SOURCE_CHARS:
                    why = f"generates more than {MAX_SOURCE_CHARS} characters of code"
            if why:
                src = fallback_source(k)
                ctx.diags.problem(
                    ctx.error(f"script {raw.name}: {why}, script dropped", Location(ctx.path, raw.line, 1))
                )
                errors += 1
        del tree
        parsed.append((raw, errors, comp, src))
    namespace: dict[str, Any] = {"_div": int_div, "_mod": int_mod, "__builtins__": {}}
    chunk: list[int] = []
    size = 0
    for k in range(len(parsed) + 1):
        if chunk and (k == len(parsed) or size + len(parsed[k][3]) > COMPILE_CHUNK_CHARS):
            _compile_chunk([(m, parsed[m][3]) for m in chunk], ctx, parsed, namespace)
            chunk, size = [], 0
        if k < len(parsed):
            chunk.append(k)
            size += len(parsed[k][3])
    return [
        Script(raw.name, ctx.path, raw.line, None, src, namespace[f"_script{k}"], dict(comp.calls), errors)
        for k, (raw, errors, comp, src) in enumerate(parsed)
    ]


def _compile_chunk(
    chunk: list[tuple[int, str]], ctx: ScriptContext, parsed: list[Any], namespace: dict[str, Any]
) -> None:
    name = f"<signal scripts of {Path(ctx.path).name}>"
    try:
        exec(compile("\n".join(src for _, src in chunk), name, "exec"), namespace)  # noqa: S102
        return
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        if len(chunk) == 1:
            k = chunk[0][0]
            raw = parsed[k][0]
            ctx.diags.problem(
                ctx.error(
                    f"script {raw.name}: Python cannot compile it, script dropped",
                    Location(ctx.path, raw.line, 1),
                )
            )
            parsed[k] = (raw, parsed[k][1] + 1, parsed[k][2], fallback_source(k))
            exec(compile(fallback_source(k), name, "exec"), namespace)  # noqa: S102
            return
    for item in chunk:  # one by one, to find the script Python refuses
        _compile_chunk([item], ctx, parsed, namespace)


def _decode(data: bytes) -> str:
    """Text of a script file: UTF-16 or UTF-8 by BOM, else UTF-8 (Latin-1 if that fails)."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16", errors="replace")
    if data[:3] == b"\xef\xbb\xbf":
        return data[3:].decode("utf-8", errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def read_scripts(
    path: str | Path,
    *,
    strict: bool = False,
    functions: dict[str, int] | None = None,
    subtypes: dict[str, int] | None = None,
    text: str | None = None,
) -> ScriptFile:
    """Read, parse and compile a signal-script file (lenient by default, as Open Rails)."""
    p = str(path)
    if text is None:
        try:  # the size is checked before anything is read (docs/security.md §2)
            data = read_bounded(path, MAX_SCRIPT_BYTES, "signal-script file")
        except FileTooLargeError:
            raise ScriptError(
                f"signal-script file larger than {MAX_SCRIPT_BYTES} bytes", Location(p, 1, 1)
            ) from None
        text = _decode(data)
    text = text.lstrip("\ufeff")
    diags = Diagnostics(strict=strict)
    ctx = ScriptContext(p, text, diags)
    scripts = compile_scripts(preprocess(text), ctx, functions=functions, subtypes=subtypes)
    return ScriptFile(p, tuple(scripts), tuple(diags.findings), sum(s.errors for s in scripts))


__all__ = [
    "FUNCTION_ARGS",
    "HeadContext",
    "RawScript",
    "Script",
    "ScriptError",
    "ScriptFile",
    "ScriptRuntimeError",
    "compile_scripts",
    "preprocess",
    "read_scripts",
]
