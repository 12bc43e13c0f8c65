"""Reading a signal-script file's text (docs/signals.md §2.1, §2.7): Open Rails' line rules
(:func:`preprocess`) and the LALR grammar ``grammars/sigscr.lark``, with recovery from syntax
errors that drops the offending fragment, as Open Rails skips a statement it cannot read."""

from __future__ import annotations

import re
from typing import Any

from lark import Lark, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ..errors import Location
from ..stf.resources import grammar_text
from .script_base import MAX_RECOVERIES, MAX_SCRIPTS, RawScript, ScriptContext

_SPLIT = re.compile(r"[^;{}]*;|[{}]|[^;{}]+")


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


def parse_script(raw: RawScript, ctx: ScriptContext) -> tuple[Tree | None, int]:
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


def _parse_by_reparsing(raw: RawScript, ctx: ScriptContext) -> tuple[Tree | None, int]:
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
