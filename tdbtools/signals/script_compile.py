"""Compiling a parsed signal script to Python source (docs/signals.md §2.4-§2.6). The source
is made only of generated names (``l0``, ``l1`` … for locals), integers that went through
``int()`` and method names from a fixed table (script_base.FUNCTION_ARGS): no text of the
file ever reaches it. Script arithmetic is Open Rails' 32-bit C# ``int`` (:func:`int_div`,
:func:`int_mod`, the generated code's ``_div``/``_mod``; the wrap of :func:`_wrap`)."""

from __future__ import annotations

import re
from typing import Any

from lark import Token, Tree

from ..errors import Location
from ..formats.sigcfg import ASPECTS, FUNCTIONS, SUBTYPES
from .script_base import (
    BLOCK,
    EXTERNALS,
    FUNCTION_ARGS,
    INT_MIN,
    MAX_BLOCKS,
    MAX_ELIF,
    MAX_LITERAL_CHARS,
    MAX_NEST,
    MAX_PARENS,
    RawScript,
    ScriptContext,
    ScriptRuntimeError,
)

_INT = re.compile(r"^[+-]?[0-9]+$")


class TooDeep(Exception):
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


# -- compiling --------------------------------------------------------------------------------


class Compiler:
    def __init__(
        self, ctx: ScriptContext, raw: RawScript, functions: dict[str, int], subtypes: dict[str, int]
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
            raise TooDeep

    def checked(self, code: str) -> str:
        if _paren_depth(code) > MAX_PARENS:
            raise TooDeep
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
            raise TooDeep
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


def int_div(a: int, b: int) -> int:
    """C#'s ``int /``: truncates toward zero; Open Rails' scripts give 0 for ``/ 0``."""
    a, b = _int32(a), _int32(b)
    if b == 0:
        return 0
    if a == INT_MIN and b == -1:
        raise ScriptRuntimeError("signal script: the smallest int divided by -1 (Open Rails throws here)")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def int_mod(a: int, b: int) -> int:
    """C#'s ``int %``: the sign of the dividend; by 0 (and the smallest int by -1) it throws."""
    a, b = _int32(a), _int32(b)
    if b == 0:
        raise ScriptRuntimeError("signal script: '%' by zero (Open Rails throws here)")
    if a == INT_MIN and b == -1:
        raise ScriptRuntimeError("signal script: the smallest int '%' -1 (Open Rails throws here)")
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def fallback_source(k: int) -> str:
    return f"def _script{k}(h):\n    return h.state, h.draw_state\n"
