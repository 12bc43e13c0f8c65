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
3. :func:`compile_script` turns the tree into Python source text and compiles it once. The
   source is made only of generated names (``l0``, ``l1`` … for locals), integers that went
   through ``int()`` and method names from a fixed table: no text of the file ever reaches
   it, so a hostile file cannot inject code.

A compiled script is a function ``f(h) -> (state, draw_state)``; ``h`` is the head context
the runtime provides (:class:`HeadContext` lists what it must offer).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ..errors import Diagnostics, Finding, Location, SourceError, TdbToolsError, caret_snippet
from ..formats.sigcfg import ASPECTS, FUNCTIONS, SUBTYPES
from ..stf.resources import grammar_text

#: Bounds for hostile input.
MAX_SCRIPT_BYTES = 16 << 20
MAX_SCRIPTS = 10_000
MAX_RECOVERIES = 200
#: Nesting limits: recursion in the compiler, Python's own limits on nested blocks (100) and
#: parentheses (200) in the generated code.
MAX_NEST = 300
MAX_BLOCKS = 60
MAX_PARENS = 150

BLOCK = {"BLOCK_CLEAR": 0, "BLOCK_OCCUPIED": 1, "BLOCK_JN_OBSTRUCTED": 2}


class ScriptError(SourceError):
    """A signal script that cannot be read as Open Rails reads it."""


class _TooDeep(Exception):
    pass


def _paren_depth(code: str) -> int:
    depth = best = 0
    for ch in code:
        if ch == "(":
            depth += 1
            best = max(best, depth)
        elif ch == ")":
            depth -= 1
    return best


class ScriptRuntimeError(TdbToolsError, RuntimeError):
    """A script operation Open Rails would throw on (``%`` by zero)."""


class HeadContext(Protocol):
    """What a compiled script reads: the head being updated and its signal."""

    state: int
    draw_state: int
    enabled: int
    approach_position: int
    approach_speed: int

    def block_state(self) -> int: ...
    def route_set(self) -> int: ...
    def next_sig_lr(self, fn: int) -> int: ...
    def next_sig_mr(self, fn: int) -> int: ...
    def this_sig_lr(self, fn: int) -> int: ...
    def this_sig_mr(self, fn: int) -> int: ...
    def sig_feature(self, feature: int) -> int: ...
    def def_draw_state(self, aspect: int) -> int: ...


# name -> argument kinds ("f" function type, "v" value); every name is a method of the context.
FUNCTION_ARGS: dict[str, str] = {
    "block_state": "",
    "route_set": "",
    "next_sig_lr": "f",
    "next_sig_mr": "f",
    "this_sig_lr": "f",
    "this_sig_mr": "f",
    "opp_sig_lr": "f",
    "opp_sig_mr": "f",
    "dist_multi_sig_mr": "ff",
    "dist_multi_sig_mr_of_lr": "ff",
    "sig_feature": "v",
    "def_draw_state": "v",
    "next_nsig_lr": "fv",
    "next_sig_id": "f",
    "next_nsig_id": "fv",
    "opp_sig_id": "f",
    "id_sig_enabled": "v",
    "id_sig_lr": "vf",
    "hashead": "v",
    "store_lvar": "vv",
    "this_sig_lvar": "v",
    "next_sig_lvar": "fv",
    "id_sig_lvar": "vv",
    "increase_signalnumclearahead": "v",
    "decrease_signalnumclearahead": "v",
    "set_signalnumclearahead": "v",
    "reset_signalnumclearahead": "",
    "approach_control_position": "v",
    "approach_control_position_forced": "v",
    "approach_control_speed": "vv",
    "approach_control_next_stop": "vv",
    "approach_control_lock_claim": "",
    "allow_clear_to_partial_route": "v",
    "trainhascallon": "",
    "trainhascallon_restricted": "",
    "trainhascallon_advanced": "",
    "trainhascallon_restricted_advanced": "",
    "train_requires_next_signal": "vv",
    "find_req_normal_signal": "v",
    "route_cleared_to_signal": "v",
    "route_cleared_to_signal_callon": "v",
    "this_sig_hasnormalsubtype": "v",
    "next_sig_hasnormalsubtype": "v",
    "id_sig_hasnormalsubtype": "vv",
    "this_sig_noupdate": "",
    "switchstand": "vv",
    "activate_timing_trigger": "",
    "check_timing_trigger": "v",
    "debug_header": "",
    "debug_out": "",
}
EXTERNALS = {
    "STATE": "state",
    "DRAW_STATE": "draw",
    "ENABLED": "h.enabled",
    "BLOCK_STATE": "h.block_state()",
    "APPROACH_CONTROL_REQ_POSITION": "h.approach_position",
    "APPROACH_CONTROL_REQ_SPEED": "h.approach_speed",
}
_INT = re.compile(r"^[+-]?[0-9]+$")
_SPLIT = re.compile(r"[^;{}]*;|[{}]|[^;{}]+")


# -- line rules -------------------------------------------------------------------------------


@dataclass(slots=True)
class RawScript:
    """One script after the line rules: its name and its fragments (text, line, column)."""

    name: str
    line: int
    fragments: list[tuple[str, int, int]] = field(default_factory=list)


def preprocess(text: str) -> list[RawScript]:
    """Apply Open Rails' line rules (docs/signals.md §2.1) and cut the text into scripts."""
    scripts: list[RawScript] = []
    cur: RawScript | None = None
    in_comment = False
    for lineno, raw in enumerate(text.split("\n"), 1):
        line = raw.upper().replace("\t", " ").replace("\r", " ")
        cut = line.find("//")
        if cut >= 0:
            line = line[:cut]
        if in_comment:
            if "*/" in line:
                in_comment = False
            continue
        body = line.strip()
        if not body:
            continue
        if body.startswith("SCRIPT "):
            if len(scripts) >= MAX_SCRIPTS:
                break
            cur = RawScript(body[7:].strip(), lineno)
            scripts.append(cur)
            continue
        if body.startswith("REM SCRIPT ") or body == "REM SCRIPT":
            cur = None
            continue
        if cur is None:
            continue
        for m in _SPLIT.finditer(line):
            frag = m.group(0)
            s = frag.strip()
            if not s:
                continue
            if s.startswith("/*"):
                # A comment only at the start of a fragment; the whole fragment goes, and
                # without "*/" every line up to the one holding it.
                if "*/" not in s:
                    in_comment = True
                    break
                continue
            col = m.start() + (len(frag) - len(frag.lstrip())) + 1
            cur.fragments.append((s, lineno, col))
    return scripts


# -- parsing ----------------------------------------------------------------------------------

_PARSER: Lark | None = None


def _parser() -> Lark:
    global _PARSER
    if _PARSER is None:
        _PARSER = Lark(
            grammar_text("sigscr.lark"),
            parser="lalr",
            lexer="contextual",
            propagate_positions=False,
            maybe_placeholders=False,
        )
    return _PARSER


@dataclass(frozen=True, slots=True, eq=False)
class Script:
    """A parsed and compiled script."""

    name: str  # upper-cased, as written
    path: str
    line: int
    tree: Tree | None = field(repr=False)
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


class _Ctx:
    def __init__(self, path: str, text: str, diags: Diagnostics) -> None:
        self.path, self.text, self.diags = path, text, diags

    def loc(self, frag: tuple[str, int, int], col: int = 1) -> Location:
        return Location(self.path, frag[1], frag[2] + col - 1)

    def error(self, message: str, loc: Location) -> ScriptError:
        return ScriptError(message, loc, caret_snippet(self.text, loc.line, loc.column))

    def warn(self, message: str, loc: Location | None) -> None:
        self.diags.note(message, loc)


def _describe(exc: UnexpectedInput) -> str:
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        if tok.type == "$END":
            return "unexpected end of script"
        return f"unexpected {str(tok)!r}"
    if isinstance(exc, UnexpectedCharacters):
        return f"unexpected character {exc.char!r}"
    if isinstance(exc, UnexpectedEOF):
        return "unexpected end of script"
    return "syntax error"


def parse_script(raw: RawScript, ctx: _Ctx) -> tuple[Tree | None, int]:
    """Parse one script body; returns the tree and the number of errors recovered from."""
    frags = list(raw.fragments)
    errors = 0
    for _ in range(MAX_RECOVERIES + 1):
        body = "\n".join(f[0] for f in frags)
        try:
            return _parser().parse(body), errors
        except UnexpectedInput as exc:
            errors += 1
            li = getattr(exc, "line", -1)
            col = getattr(exc, "column", 1)
            if not isinstance(li, int) or li < 1 or li > len(frags):
                li = len(frags)
            while li > 1 and not frags[li - 1][0]:
                li -= 1
            frag = frags[li - 1] if frags else ("", raw.line, 1)
            err = ctx.error(
                f"script {raw.name}: {_describe(exc)}",
                ctx.loc(frag, col if isinstance(col, int) and col > 0 else 1),
            )
            ctx.diags.problem(err)  # strict: raises here
            if not frags or not any(f[0] for f in frags):
                return None, errors
            frags[li - 1] = ("", frag[1], frag[2])  # drop the statement part, as OR does
    ctx.diags.problem(
        ctx.error(f"script {raw.name}: too many errors, script dropped", Location(ctx.path, raw.line, 1))
    )
    return None, errors


# -- compiling --------------------------------------------------------------------------------


class _Compiler:
    def __init__(
        self, ctx: _Ctx, raw: RawScript, functions: dict[str, int], subtypes: dict[str, int]
    ) -> None:
        self.ctx, self.raw = ctx, raw
        self.functions = functions
        self.subtypes = subtypes
        self.locals: dict[str, int] = {}
        self.calls: dict[str, int] = {}
        self.lines: list[str] = []
        self.decl_phase = 0  # 0: extern, 1: float, 2: statements
        self.nest = 0

    def warn(self, message: str) -> None:
        self.ctx.warn(f"script {self.raw.name}: {message}", Location(self.ctx.path, self.raw.line, 1))

    # names ------------------------------------------------------------------------------------
    def name(self, word: str) -> str:
        """Python expression for an operand (docs/signals.md §2.4)."""
        w = word[1:] if word.startswith("#") else word
        if _INT.match(w):
            v = int(w)
            if -(1 << 31) <= v < (1 << 31):
                return str(v)
        if w in EXTERNALS:
            return EXTERNALS[w]
        if w in self.locals:
            return f"l{self.locals[w]}"
        const = self.constant(w)
        if const is not None:
            return str(const[0])
        self.warn(f"unknown name {w[:40]!r} reads 0")
        return "0"

    def constant(self, w: str) -> tuple[int, int | None] | None:
        """(value, function type or None) of a prefixed constant."""
        if w in BLOCK:
            return BLOCK[w], None
        for prefix, table in (("SIGASP_", ASPECTS), ("SIGFEAT_", SUBTYPES)):
            if w.startswith(prefix):
                rest = w[len(prefix) :]
                if rest in table:
                    return table.index(rest), None
                self.warn(f"unknown {prefix} constant {w[:40]!r}, 0 used")
                return 0, None
        if w.startswith("ORSUBTYPE_"):
            if w[10:] in self.subtypes:
                return self.subtypes[w[10:]], None
            self.warn(f"unknown ORSUBTYPE_ constant {w[:40]!r}, 0 used")
            return 0, None
        if w.startswith("SIGFN_"):
            if w[6:] in self.functions:
                return -1, self.functions[w[6:]]
            self.warn(f"unknown SIGFN_ constant {w[:40]!r}, 0 used")
            return 0, None
        return None

    def fn_arg(self, word: str) -> int:
        w = word[1:] if word.startswith("#") else word
        if _INT.match(w):
            return int(w) if 0 <= int(w) < len(FUNCTIONS) else 0
        if w in self.locals:
            self.warn(f"local {w[:40]!r} used as a function type: its slot number is taken")
            return self.locals[w]
        c = self.constant(w)
        if c is not None:
            return c[1] if c[1] is not None else (c[0] if 0 <= c[0] < len(FUNCTIONS) else 0)
        return 0

    # expressions ------------------------------------------------------------------------------
    def call(self, t: Tree) -> str:
        fname = str(t.children[0]).lower()
        args = [a for a in t.children[1:] if isinstance(a, Tree)]
        if fname not in FUNCTION_ARGS:
            self.warn(f"unknown function call {fname[:40]!r} evaluates to 0")
            return "0"
        kinds = FUNCTION_ARGS[fname]
        self.calls[fname] = self.calls.get(fname, 0) + 1
        out = []
        for k, kind in enumerate(kinds):
            if k >= len(args):
                out.append("0")
                continue
            a = args[k]
            sign = "-" if len(a.children) == 2 and str(a.children[0]) == "-" else ""
            word = str(a.children[-1])
            out.append(str(self.fn_arg(word)) if kind == "f" else f"({sign}{self.name(word)})")
        if len(args) > len(kinds):
            self.warn(f"{fname}: {len(args) - len(kinds)} extra argument(s) ignored")
        return f"h.{fname}({', '.join(out)})"

    def term(self, t: Tree) -> tuple[str, bool]:
        """(expression, is a plain function call) of a term."""
        nots = sum(1 for c in t.children if isinstance(c, Token) and c.type in ("NOTOP", "NOT"))
        core = t.children[-1]
        is_call = False
        if isinstance(core, Tree) and core.data == "call":
            e, is_call = self.call(core), True
        elif isinstance(core, Tree):
            e = self.expr(core)
        else:
            e = self.name(str(core))
        for _ in range(nots):
            e = f"(0 if {e} else 1)"
        return e, is_call and nots == 0

    def enter(self) -> None:
        self.nest += 1
        if self.nest > MAX_NEST:
            raise _TooDeep

    def checked(self, code: str) -> str:
        if _paren_depth(code) > MAX_PARENS:
            raise _TooDeep
        return code

    def expr(self, t: Tree) -> str:
        self.enter()
        try:
            return self._expr(t)
        finally:
            self.nest -= 1

    def _expr(self, t: Tree) -> str:
        ch = t.children
        i = 0
        lead = None
        if isinstance(ch[0], Token) and ch[0].type == "ADDOP":
            lead = str(ch[0])
            i = 1
        e, is_call = self.term(ch[i])
        if lead == "-":
            if is_call:
                self.warn("'-' before a function call is ignored (Open Rails negates it twice)")
            else:
                e = f"(-{e})"
        i += 1
        while i < len(ch):
            op = str(ch[i])
            rhs, is_call = self.term(ch[i + 1])
            i += 2
            if op == "-" and is_call:
                self.warn("'a - f()' evaluates as 'a + f()' (Open Rails negates the call twice)")
                op = "+"
            if op == "/":
                e = f"_div({e}, {rhs})"
            elif op == "%":
                e = f"_mod({e}, {rhs})"
            else:
                e = f"({e} {op} {rhs})"
        return e

    def operand(self, t: Any) -> str:
        if isinstance(t, Tree):
            if t.data == "call":
                return self.call(t)
            if t.data == "signed":
                v = self.name(str(t.children[1]))
                return f"(-{v})" if str(t.children[0]) == "-" else v
        return self.name(str(t))

    def cond_item(self, t: Tree) -> str:
        self.enter()
        try:
            return self._cond_item(t)
        finally:
            self.nest -= 1

    def _cond_item(self, t: Tree) -> str:
        if t.data == "negated":
            return f"(not {self.cond_item(t.children[1])})"
        if t.data == "paren_cond":
            return self.condition(t.children[0])
        ch = t.children
        left = self.operand(ch[0])
        if len(ch) == 1:
            return f"({left} != 0)"
        rel = str(ch[1])
        neg = rel.endswith("!")
        rel = rel.rstrip("!").rstrip("#")
        right = self.operand(ch[2])
        if neg:
            right = f"(0 if {right} else 1)"
        if rel == "=":
            self.warn("'=' in a condition acts as '>' (Open Rails' default comparison)")
            rel = ">"
        return f"({left} {rel} {right})"

    def condition(self, t: Tree) -> str:
        ch = t.children
        e = self.cond_item(ch[0])
        for k in range(1, len(ch), 2):
            op = "&" if str(ch[k]) in ("&&", "AND") else "|"
            # Bools with & and |: every item is evaluated, folded left to right (§2.5).
            e = f"({e} {op} {self.cond_item(ch[k + 1])})"
        return e

    # statements -------------------------------------------------------------------------------
    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def stmts(self, items: list, depth: int) -> None:
        n0 = len(self.lines)
        for s in items:
            self.stmt(s, depth)
        if len(self.lines) == n0:
            self.emit(depth, "pass")

    def stmt(self, t: Tree, depth: int) -> None:
        if depth > MAX_BLOCKS:
            raise _TooDeep
        self.enter()
        try:
            self._stmt(t, depth)
        finally:
            self.nest -= 1

    def _stmt(self, t: Tree, depth: int) -> None:
        d = t.data
        if d == "extern_decl":
            if self.decl_phase > 0:
                self.warn("'extern float' after other statements is ignored")
            return
        if d == "float_decl":
            names = [str(c) for c in t.children if isinstance(c, Token) and c.type == "WORD"]
            if self.decl_phase > 1 or depth > 1:
                self.warn(f"late declaration 'float {names[0][:40]}' declares nothing")
                return
            self.decl_phase = 1
            if len(names) > 1:
                self.warn("'float' with several names declares nothing (one name per declaration)")
                return
            w = names[0].lstrip("#")
            if w not in self.locals:
                self.locals[w] = len(self.locals)
            return
        self.decl_phase = 2
        if d == "block":
            self.stmts(list(t.children), depth)
        elif d == "if_stmt":
            self.if_chain(t, depth, "if")
        elif d == "assign":
            target = str(t.children[0]).lstrip("#")
            value = self.checked(self.expr(t.children[2]))
            if target == "STATE":
                self.emit(depth, f"state = {value}")
            elif target == "DRAW_STATE":
                self.emit(depth, f"draw = {value}")
            elif target in self.locals:
                self.emit(depth, f"l{self.locals[target]} = {value}")
            else:
                if target in ("ENABLED", "BLOCK_STATE"):
                    self.warn(f"assignment to read-only {target} ignored")
                else:
                    self.warn(f"local variable {target[:40]!r} not defined: assignment ignored")
                self.emit(depth, value)  # the right-hand side still runs
        elif d == "expr_stmt":
            self.emit(depth, self.checked(self.expr(t.children[0])))
        elif d == "return_stmt":
            self.emit(depth, "return state, draw")

    def if_chain(self, t: Tree, depth: int, kw: str) -> None:
        # Iterative over the chain: "else if" (also split over lines) and "elseif" become elif,
        # so a long chain neither nests in Python nor recurses here.
        while True:
            ch = [c for c in t.children if isinstance(c, Tree)]
            cond, body = ch[0], ch[1]
            self.emit(depth, f"{kw} {self.checked(self.condition(cond))}:")
            self.stmts([body], depth + 1)
            if len(ch) <= 2:
                return
            e = ch[2]
            if e.data == "else_":
                inner = [c for c in e.children if isinstance(c, Tree)][0]
                if inner.data == "if_stmt":
                    t, kw = inner, "elif"
                    continue
                self.emit(depth, "else:")
                self.stmts([inner], depth + 1)
                return
            t, kw = e, "elif"

    def compile(self, tree: Tree, index: int) -> str:
        self.lines = []
        body_start = len(self.lines)
        self.stmts(list(tree.children), 1)
        body = self.lines[body_start:]
        head = [f"def _script{index}(h):", "    state = h.state", "    draw = h.draw_state"]
        if self.locals:
            head.append("    " + " = ".join(f"l{k}" for k in range(len(self.locals))) + " = 0")
        return "\n".join(head + body + ["    return state, draw", ""])


def _div(a: int, b: int) -> int:
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _mod(a: int, b: int) -> int:
    if b == 0:
        raise ScriptRuntimeError("signal script: '%' by zero (Open Rails throws here)")
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def compile_scripts(
    raws: list[RawScript],
    ctx: _Ctx,
    *,
    functions: dict[str, int] | None = None,
    subtypes: dict[str, int] | None = None,
) -> list[Script]:
    """Parse and compile every script; one ``compile()`` call for the whole file."""
    fns = functions if functions is not None else {n: k for k, n in enumerate(FUNCTIONS)}
    subs = subtypes or {}
    parsed: list[tuple[RawScript, Tree | None, int, _Compiler, str]] = []
    for k, raw in enumerate(raws):
        tree, errors = parse_script(raw, ctx)
        comp = _Compiler(ctx, raw, fns, subs)
        src = f"def _script{k}(h):\n    return h.state, h.draw_state\n"
        if tree is not None:
            try:
                src = comp.compile(tree, k)
            except _TooDeep:
                ctx.diags.problem(
                    ctx.error(
                        f"script {raw.name}: nested too deeply, script dropped",
                        Location(ctx.path, raw.line, 1),
                    )
                )
                errors += 1
        parsed.append((raw, tree, errors, comp, src))
    source = "\n".join(p[4] for p in parsed)
    namespace: dict[str, Any] = {"_div": _div, "_mod": _mod, "__builtins__": {}}
    exec(compile(source, f"<signal scripts of {Path(ctx.path).name}>", "exec"), namespace)  # noqa: S102
    return [
        Script(raw.name, ctx.path, raw.line, tree, src, namespace[f"_script{k}"], dict(comp.calls), errors)
        for k, (raw, tree, errors, comp, src) in enumerate(parsed)
    ]


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
        data = Path(path).read_bytes()
        if len(data) > MAX_SCRIPT_BYTES:
            raise ScriptError(f"signal-script file larger than {MAX_SCRIPT_BYTES} bytes", Location(p, 1, 1))
        text = _decode(data)
    text = text.lstrip("\ufeff")
    diags = Diagnostics(strict=strict)
    ctx = _Ctx(p, text, diags)
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
