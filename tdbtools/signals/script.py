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

from .._fs import FileTooLargeError, read_bounded
from ..errors import Diagnostics, Finding, Location, SourceError, TdbToolsError, caret_line
from ..formats.sigcfg import ASPECTS, FUNCTIONS, SUBTYPES
from ..stf.resources import grammar_text

#: Bounds for hostile input.
MAX_SCRIPT_BYTES = 16 << 20
MAX_SCRIPTS = 10_000
MAX_RECOVERIES = 200
#: Nesting limits (docs/signals.md §2.6): the depth of a script's tree, measured without
#: recursion before the compiler (which recurses) sees it; Python's own limits on nested
#: blocks (100) and parentheses (200) in the generated code.
MAX_NEST = 200
MAX_BLOCKS = 60
MAX_PARENS = 150
#: An integer literal longer than this is no 32-bit number (it reads 0, as an unknown name);
#: Python refuses to convert integers of more than 4,300 digits.
MAX_LITERAL_CHARS = 24
#: Generated Python per script (DK24's largest is about 6 KB) and per ``compile()`` call.
MAX_SOURCE_CHARS = 1 << 20
COMPILE_CHUNK_CHARS = 256 << 10
#: An ``else if`` chain longer than this is compiled flat (one ``if`` per branch guarded by a
#: flag): Python nests ``elif`` in its syntax tree and fails on a few thousand of them.
MAX_ELIF = 32
INT_MIN = -(1 << 31)

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
    """A script operation Open Rails throws on (``%`` by zero, the smallest int divided by -1)."""


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


class _Ctx:
    def __init__(self, path: str, text: str, diags: Diagnostics) -> None:
        self.path, self.text, self.diags = path, text, diags
        self._starts: list[int] | None = None

    def loc(self, frag: tuple[str, int, int], col: int = 1) -> Location:
        return Location(self.path, frag[1], frag[2] + col - 1)

    def snippet(self, line: int, column: int) -> str:
        # Line offsets found once per file: a snippet per error must not split the file.
        if self._starts is None:
            self._starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        if not 1 <= line <= len(self._starts):
            return ""
        start = self._starts[line - 1]
        end = self._starts[line] - 1 if line < len(self._starts) else len(self.text)
        return caret_line(self.text, start, end, column)

    def error(self, message: str, loc: Location) -> ScriptError:
        return ScriptError(message, loc, self.snippet(loc.line, loc.column))

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
    """Parse one script body; returns the tree and the number of errors recovered from.

    Recovery drops the fragment (body line) holding the error and goes on, as Open Rails skips
    a statement it cannot read. The result is the parse of the body with those fragments blank,
    but the body is read once: the parser's state is kept at the start of every line, and an
    error rewinds to the start of its line, skips the line and goes on, so recovering from many
    errors costs the size of the script once, not once per error (docs/signals.md §2.7).
    """
    frags = raw.fragments
    body = "\n".join(f[0] for f in frags)
    starts = [0]  # offset of each body line
    for f in frags:
        starts.append(starts[-1] + len(f[0]) + 1)
    dropped: set[int] = set()
    snaps: dict[int, Any] = {}  # line -> parser state before its first token
    last_col: dict[int, int] = {}  # line -> column of its last token read
    errors = 0
    ip = _parser().parse_interactive(body)
    while True:
        li = -1
        try:
            line = 0
            for tok in ip.lexer_thread.lex(ip.parser_state):
                tl = tok.line if isinstance(tok.line, int) else 0
                if tl in dropped:  # read again after a rewind: still dropped
                    continue
                if tl != line:
                    line = tl
                    if tl not in snaps:
                        snaps[tl] = _snapshot(ip)
                last_col[tl] = tok.column if isinstance(tok.column, int) else 1
                ip.feed_token(tok)
            return ip.feed_eof(), errors
        except UnexpectedInput as exc:
            tok = getattr(exc, "token", None)
            at_end = tok is not None and getattr(tok, "type", "") == "$END"
            li = getattr(exc, "line", -1)
            col = getattr(exc, "column", 1)
            if not at_end and li in dropped:  # the lexer stumbled in a dropped line
                _skip_line(ip, body, starts, li)
                continue
            errors += 1
            if at_end or not isinstance(li, int) or li < 1 or li > len(frags):
                left = [k for k in range(len(frags), 0, -1) if k not in dropped]
                li = left[0] if left else max(len(frags), 1)
                col = last_col.get(li, 1)
            frag = frags[li - 1] if frags else ("", raw.line, 1)
            err = ctx.error(
                f"script {raw.name}: {_describe(exc)}",
                ctx.loc(frag, col if isinstance(col, int) and col > 0 else 1),
            )
            ctx.diags.problem(err)  # strict: raises here
            if not frags or len(dropped) >= len(frags):
                return None, errors
            if errors > MAX_RECOVERIES:
                break
            dropped.add(li)
            # Rewind to the start of line li (the state is unchanged when the lexer failed
            # before reading a token of it) and skip the line.
            if li in snaps:
                _restore(ip, snaps[li])
            _skip_line(ip, body, starts, li)
            for k in [k for k in snaps if k >= li]:
                del snaps[k]
    ctx.diags.problem(
        ctx.error(f"script {raw.name}: too many errors, script dropped", Location(ctx.path, raw.line, 1))
    )
    return None, errors


def _skip_line(ip: Any, body: str, starts: list[int], li: int) -> None:
    """Put the lexer of ``ip`` at the start of body line ``li + 1`` (line ``li`` skipped)."""
    counter = ip.lexer_thread.state.line_ctr
    end = min(starts[li], len(body))
    counter.char_pos = counter.line_start_pos = end
    counter.line, counter.column = li + 1, 1


#: A parser state kept at the start of a line: its state and value stacks, and the length of
#: every tree's child list on the value stack.
_Snap = tuple[list[Any], list[Any], list[tuple[Tree, int]]]


def _snapshot(ip: Any) -> _Snap:
    # Lark's LALR tree builder extends a left-recursive child's list in place (the `_stmt*`
    # lists), so the value stack is kept with the length of each list. Cheaper than
    # InteractiveParser.copy(), whose lexer copy went through copy.copy on every line.
    ps = ip.parser_state
    vals = ps.value_stack
    return list(ps.state_stack), list(vals), [(v, len(v.children)) for v in vals if isinstance(v, Tree)]


def _restore(ip: Any, snap: _Snap) -> None:
    states, values, lengths = snap
    for tree, n in lengths:
        del tree.children[n:]
    ps = ip.parser_state
    ps.state_stack[:] = states
    ps.value_stack[:] = values


def _parse_by_reparsing(raw: RawScript, ctx: _Ctx) -> tuple[Tree | None, int]:
    """The plain form of :func:`parse_script` (parse again after each dropped fragment), kept
    as the reference the tests compare it with; its cost is the script's size per error."""
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
            ctx.diags.problem(err)
            if not frags or not any(f[0] for f in frags):
                return None, errors
            frags[li - 1] = ("", frag[1], frag[2])
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
        self.flags = 0  # flags of flat "else if" chains

    def warn(self, message: str) -> None:
        self.ctx.warn(f"script {self.raw.name}: {message}", Location(self.ctx.path, self.raw.line, 1))

    # names ------------------------------------------------------------------------------------
    def name(self, word: str) -> str:
        """Python expression for an operand (docs/signals.md §2.4)."""
        w = word[1:] if word.startswith("#") else word
        if len(w) <= MAX_LITERAL_CHARS and _INT.match(w):
            v = int(w)
            if INT_MIN <= v < (1 << 31):
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
            return int(w) if len(w) <= MAX_LITERAL_CHARS and 0 <= int(w) < len(FUNCTIONS) else 0
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
            out.append(
                str(self.fn_arg(word)) if kind == "f" else _wrap(f"{sign}{self.name(word)}", bool(sign))
            )
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
            e, ring = self._expr(t)
            return _wrap(e, ring)
        finally:
            self.nest -= 1

    def _expr(self, t: Tree) -> tuple[str, bool]:
        """(expression, whether it may leave 32 bits): ``+ - *`` and negation wrap like
        32-bit ints once at the end (wrapping commutes with them); ``/`` and ``%`` wrap
        their operands themselves."""
        ch = t.children
        i = 0
        lead = None
        if isinstance(ch[0], Token) and ch[0].type == "ADDOP":
            lead = str(ch[0])
            i = 1
        e, is_call = self.term(ch[i])
        ring = False
        if lead == "-":
            if is_call:
                self.warn("'-' before a function call is ignored (Open Rails negates it twice)")
            else:
                e, ring = f"(-{e})", True
        i += 1
        while i < len(ch):
            op = str(ch[i])
            rhs, is_call = self.term(ch[i + 1])
            i += 2
            if op == "-" and is_call:
                self.warn("'a - f()' evaluates as 'a + f()' (Open Rails negates the call twice)")
                op = "+"
            if op == "/":
                e, ring = f"_div({e}, {rhs})", False
            elif op == "%":
                e, ring = f"_mod({e}, {rhs})", False
            else:
                e, ring = f"({e} {op} {rhs})", True
        return e, ring

    def operand(self, t: Any) -> str:
        if isinstance(t, Tree):
            if t.data == "call":
                return self.call(t)
            if t.data == "signed":
                v = self.name(str(t.children[1]))
                return _wrap(f"-{v}", True) if str(t.children[0]) == "-" else v
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
        # Iterative over the chain: "else if" (also split over lines) and "elseif" are one
        # chain, so a long chain does not recurse here.
        branches: list[tuple[Tree, Tree]] = []
        last: Tree | None = None
        while True:
            ch = [c for c in t.children if isinstance(c, Tree)]
            branches.append((ch[0], ch[1]))
            if len(ch) <= 2:
                break
            e = ch[2]
            if e.data == "else_":
                inner = [c for c in e.children if isinstance(c, Tree)][0]
                if inner.data != "if_stmt":
                    last = inner
                    break
                t = inner
            else:
                t = e
        if len(branches) <= MAX_ELIF:
            for k, (cond, body) in enumerate(branches):
                self.emit(depth, f"{'if' if k == 0 else 'elif'} {self.checked(self.condition(cond))}:")
                self.stmts([body], depth + 1)
            if last is not None:
                self.emit(depth, "else:")
                self.stmts([last], depth + 1)
            return
        # Flat: Python nests "elif" in its syntax tree, and compile() fails on a few thousand.
        flag = f"c{self.flags}"
        self.flags += 1
        self.emit(depth, f"{flag} = 1")
        for cond, body in branches:
            self.emit(depth, f"if {flag} and {self.checked(self.condition(cond))}:")
            self.emit(depth + 1, f"{flag} = 0")
            self.stmts([body], depth + 1)
        if last is not None:
            self.emit(depth, f"if {flag}:")
            self.stmts([last], depth + 1)

    def compile(self, tree: Tree, index: int) -> str:
        self.lines = []
        body_start = len(self.lines)
        self.stmts(list(tree.children), 1)
        body = self.lines[body_start:]
        head = [f"def _script{index}(h):", "    state = h.state", "    draw = h.draw_state"]
        if self.locals:
            head.append("    " + " = ".join(f"l{k}" for k in range(len(self.locals))) + " = 0")
        return "\n".join(head + body + ["    return state, draw", ""])


def _wrap(e: str, ring: bool) -> str:
    """``e`` reduced to a 32-bit two's-complement int (Open Rails' C# ``int``, unchecked)."""
    return f"(({e} + 2147483648 & 4294967295) - 2147483648)" if ring else e


def _int32(v: int) -> int:
    return ((v + 2147483648) & 4294967295) - 2147483648


def _chain_link(parent: Tree, child: Tree, last: bool) -> bool:
    """True if ``child`` continues ``parent``'s ``else if`` chain (compiled flat, no nesting)."""
    if parent.data in ("if_stmt", "elseif"):
        return last and child.data in ("else_", "elseif")
    return parent.data == "else_" and child.data == "if_stmt"


def tree_depth(tree: Tree) -> int:
    """How deeply the compiler recurses on ``tree`` (an ``else if`` chain counts once), found
    with an explicit stack: a hostile script of any depth costs its size, never the stack."""
    best = 0
    stack: list[tuple[Tree, int]] = [(tree, 0)]
    while stack:
        node, d = stack.pop()
        best = max(best, d)
        subs = [c for c in node.children if isinstance(c, Tree)]
        for k, c in enumerate(subs):
            stack.append((c, d if _chain_link(node, c, k == len(subs) - 1) else d + 1))
    return best


def _div(a: int, b: int) -> int:
    """C#'s ``int /``: truncates toward zero; Open Rails' scripts give 0 for ``/ 0``."""
    a, b = _int32(a), _int32(b)
    if b == 0:
        return 0
    if a == INT_MIN and b == -1:
        raise ScriptRuntimeError("signal script: the smallest int divided by -1 (Open Rails throws here)")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _mod(a: int, b: int) -> int:
    """C#'s ``int %``: the sign of the dividend; by 0 (and the smallest int by -1) it throws."""
    a, b = _int32(a), _int32(b)
    if b == 0:
        raise ScriptRuntimeError("signal script: '%' by zero (Open Rails throws here)")
    if a == INT_MIN and b == -1:
        raise ScriptRuntimeError("signal script: the smallest int '%' -1 (Open Rails throws here)")
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def _fallback(k: int) -> str:
    return f"def _script{k}(h):\n    return h.state, h.draw_state\n"


def compile_scripts(
    raws: list[RawScript],
    ctx: _Ctx,
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
    parsed: list[tuple[RawScript, int, _Compiler, str]] = []
    for k, raw in enumerate(raws):
        tree, errors = parse_script(raw, ctx)
        comp = _Compiler(ctx, raw, fns, subs)
        src = _fallback(k)
        if tree is not None:
            why = ""
            if tree_depth(tree) > MAX_NEST:
                why = f"nested more than {MAX_NEST} deep"
            else:
                try:
                    src = comp.compile(tree, k)
                except _TooDeep:
                    why = "nested too deeply"
                if not why and len(src) > MAX_SOURCE_CHARS:
                    why = f"generates more than {MAX_SOURCE_CHARS} characters of code"
            if why:
                src = _fallback(k)
                ctx.diags.problem(
                    ctx.error(f"script {raw.name}: {why}, script dropped", Location(ctx.path, raw.line, 1))
                )
                errors += 1
        del tree
        parsed.append((raw, errors, comp, src))
    namespace: dict[str, Any] = {"_div": _div, "_mod": _mod, "__builtins__": {}}
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
    chunk: list[tuple[int, str]], ctx: _Ctx, parsed: list[Any], namespace: dict[str, Any]
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
            parsed[k] = (raw, parsed[k][1] + 1, parsed[k][2], _fallback(k))
            exec(compile(_fallback(k), name, "exec"), namespace)  # noqa: S102
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
