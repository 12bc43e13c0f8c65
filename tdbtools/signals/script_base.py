"""The signal-script language's groundwork (docs/signals.md §2): the bounds for hostile
input, the errors, what a compiled script reads of its head (:class:`HeadContext`), the
built-in functions and external names Open Rails' scripts know, a script after the line
rules (:class:`RawScript`) and the context that locates its errors."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

from ..errors import Diagnostics, Location, SourceError, TdbToolsError, caret_line

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


@dataclass(slots=True)
class RawScript:
    """One script after the line rules: its name and its fragments (text, line, column)."""

    name: str
    line: int
    fragments: list[tuple[str, int, int]] = field(default_factory=list)


class ScriptContext:
    """Where a file's scripts come from (path and text) and where their findings go."""

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
