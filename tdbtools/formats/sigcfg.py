"""``sigcfg.dat``: signal types, aspects, draw states and signal shapes (docs/signals.md §1).

The file is read with the STF layer. Its location decides the mode: ``<route>/OpenRails/sigcfg.dat``
is read in ORTS mode (OR-only blocks and NumClearAhead rules), ``<route>/sigcfg.dat`` in MSTS mode.
Defects Open Rails tolerates (wrong counts, duplicates, unknown keywords) are warnings collected
in :attr:`SignalConfig.warnings`; a strict read raises them as :class:`FormatError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .._fs import is_relative_name
from ..errors import Diagnostics, Finding, FormatError, RouteError, truncate_value
from ..stf import parse_file, resolve_case_insensitive
from ..stf.tree import Block, Document
from ._read import Reader, to_float, to_int

#: Built-in function types and the number a script sees for each (docs/signals.md §1.3).
FUNCTIONS = ("NORMAL", "DISTANCE", "REPEATER", "SHUNTING", "INFO", "SPEED", "ALERT", "UNKNOWN")
#: Aspects from most to least restrictive; the index is the script value (§1.5).
ASPECTS = (
    "STOP",
    "STOP_AND_PROCEED",
    "RESTRICTING",
    "APPROACH_1",
    "APPROACH_2",
    "APPROACH_3",
    "CLEAR_1",
    "CLEAR_2",
    "UNKNOWN",
)
STOP, STOP_AND_PROCEED, RESTRICTING, APPROACH_1, APPROACH_2, APPROACH_3, CLEAR_1, CLEAR_2, UNKNOWN = range(9)
#: Sub-object types of a signal shape; the index is the SIGFEAT_ value (§1.6).
SUBTYPES = (
    "DECOR",
    "SIGNAL_HEAD",
    "DUMMY1",
    "DUMMY2",
    "NUMBER_PLATE",
    "GRADIENT_PLATE",
    "USER1",
    "USER2",
    "USER3",
    "USER4",
)
#: NumClearAhead "not defined".
NCA_UNSET = -2
#: Bound on counted lists (a hostile count must not allocate).
MAX_ENTRIES = 100_000


@dataclass(frozen=True, slots=True)
class Aspect:
    aspect: int  # index in ASPECTS
    draw_state: str  # lower-cased draw-state name
    speed: float = -1.0  # m/s; -1 = no limit from this aspect
    asap: bool = False
    speed_reset: bool = False  # OR_SPEEDRESET
    no_speed_reduction: bool = False


@dataclass(frozen=True, slots=True)
class DrawState:
    index: int
    name: str
    lights: tuple[tuple[int, bool], ...] = ()  # (light index, flashing)
    semaphore_pos: float | None = None


@dataclass(frozen=True, slots=True)
class SignalType:
    name: str  # lower-cased key
    function: str  # a FUNCTIONS name, or a custom ORTS function name
    function_base: str  # the built-in behaviour (== function for built-ins)
    aspects: tuple[Aspect, ...] = ()
    draw_states: dict[str, DrawState] = field(default_factory=dict)
    nca_msts: int = NCA_UNSET
    nca_orts: int = NCA_UNSET
    semaphore_info: float = 1.0
    abs: bool = False
    no_gantry: bool = False
    semaphore: bool = False
    flash_on: float = 1.0
    flash_off: float = 1.0
    approach_position: float | None = None  # m
    approach_speed: float | None = None  # m/s
    script: str = ""  # ORTSScript (lower-cased)
    normal_subtype: int = -1
    lights: tuple[tuple[int, str], ...] = ()

    @property
    def function_index(self) -> int:
        return FUNCTIONS.index(self.function_base) if self.function_base in FUNCTIONS else 4

    def aspect(self, a: int) -> Aspect | None:
        for x in self.aspects:
            if x.aspect == a:
                return x
        return None

    def def_draw_state(self, a: int) -> int:
        """The draw-state index of aspect ``a``, or -1 when the type has no such aspect."""
        x = self.aspect(a)
        if x is None:
            return -1
        ds = self.draw_states.get(x.draw_state)
        return ds.index if ds is not None else -1

    def most_restrictive(self) -> int:
        return min((x.aspect for x in self.aspects), default=STOP)

    def least_restrictive(self) -> int:
        return min(max((x.aspect for x in self.aspects), default=STOP), CLEAR_2)

    def speed(self, a: int) -> float:
        x = self.aspect(a)
        return x.speed if x is not None else -1.0


@dataclass(frozen=True, slots=True)
class SubObj:
    index: int
    matrix: str
    description: str
    sub_type: int = -1  # index in SUBTYPES, -1 unknown
    signal_type: str = ""  # SigSubSType, lower-cased
    optional: bool = False
    default: bool = False
    back_facing: bool = False
    jn_link: bool = False


@dataclass(frozen=True, slots=True)
class SignalShape:
    key: str  # basename of the file, upper-cased
    file: str
    description: str
    sub_objs: tuple[SubObj, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class SignalConfig:
    path: str
    mode: str  # "MSTS" | "ORTS"
    light_textures: dict[str, tuple]
    lights_tab: dict[str, tuple[int, int, int, int]]
    custom_functions: dict[str, str]  # ORTS name -> built-in behaviour
    normal_subtypes: tuple[str, ...]
    types: dict[str, SignalType]
    shapes: dict[str, SignalShape]
    script_files: tuple[str, ...]
    warnings: tuple[Finding, ...] = ()

    @property
    def folder(self) -> Path:
        return Path(self.path).parent

    def script_paths(self) -> list[Path]:
        """The script files, relative to the folder of this sigcfg, found case-insensitively."""
        return [resolve_case_insensitive(self.folder / name.replace("\\", "/")) for name in self.script_files]


def find_sigcfg(route_folder: str | Path) -> tuple[Path, str] | None:
    """``(path, mode)`` of the sigcfg Open Rails would use, or None (docs/signals.md §0)."""
    folder = Path(route_folder)
    orts = resolve_case_insensitive(folder / "OpenRails" / "sigcfg.dat")
    if orts.is_file():
        return orts, "ORTS"
    msts = resolve_case_insensitive(folder / "sigcfg.dat")
    if msts.is_file():
        return msts, "MSTS"
    return None


class _Cfg:
    def __init__(self, diags: Diagnostics, mode: str) -> None:
        self.diags = diags
        self.r = Reader(diags)
        self.mode = mode

    def warn(self, block: Block, message: str) -> None:
        self.r.problem(block, message)

    def counted(self, block: Block, child: str, what: str) -> list[Block]:
        """Child blocks named ``child`` after a leading count, with OR's count warnings."""
        items = block.items
        if not items or items[0].__class__ is Block:
            self.warn(block, f"{block.name}: missing count")
            n = None
        else:
            try:
                n = to_int(str(items[0]))
            except ValueError:
                self.warn(block, f"{block.name}: bad count {items[0]!r}")
                n = None
        kids = list(block.blocks(child))[:MAX_ENTRIES]
        if n is not None:
            if len(kids) > n:
                self.warn(block, f"{block.name}: {len(kids) - n} {what} beyond the count {n} skipped")
                kids = kids[: max(n, 0)]
            elif len(kids) < n:
                self.warn(block, f"{block.name}: count {n}, {n - len(kids)} {what} missing")
        return kids

    # -- blocks --------------------------------------------------------------------------
    def light_textures(self, root: Block) -> dict[str, tuple]:
        out: dict[str, tuple] = {}
        blk = root.find("LightTextures")
        if blk is None:
            self.warn(root, "sigcfg: missing block 'LightTextures'")
            return out
        for b in self.counted(blk, "LightTex", "light textures"):
            v = [str(x) for x in b.values]
            if not v:
                continue
            key = v[0].lower()
            if key in out:
                self.warn(b, f"LightTex: duplicate {v[0]!r} skipped")
                continue
            out[key] = tuple(v[1:])
        return out

    def lights_tab(self, root: Block) -> dict[str, tuple[int, int, int, int]]:
        out: dict[str, tuple[int, int, int, int]] = {}
        blk = root.find("LightsTab")
        if blk is None:
            self.warn(root, "sigcfg: missing block 'LightsTab'")
            return out
        for b in self.counted(blk, "LightsTabEntry", "lights"):
            name = self.r.string(b, 0).lower()
            if name in out:
                self.warn(b, f"LightsTabEntry: duplicate {name!r} skipped")
                continue
            col = b.find("colour")
            argb = (0, 0, 0, 0)
            if col is not None:
                vals = [self.r.value(col, i, to_int, 0) for i in range(4)]
                argb = (vals[0], vals[1], vals[2], vals[3])
            out[name] = argb
        return out

    def functions(self, root: Block) -> dict[str, str]:
        out: dict[str, str] = {}
        blk = root.find("ORTSSignalFunctions")
        if blk is None or self.mode != "ORTS":
            return out
        for b in self.counted(blk, "ORTSSignalFunctionType", "function types"):
            v = [str(x).upper() for x in b.values]
            if not v:
                continue
            name = v[0]
            if name in FUNCTIONS or name.startswith("OR_") or name.startswith("ORTS"):
                self.warn(b, f"ORTSSignalFunctionType: invalid name {name!r} rejected")
                continue
            base = v[1] if len(v) > 1 else "INFO"
            if base not in FUNCTIONS or base == "NORMAL":
                self.warn(
                    b, f"ORTSSignalFunctionType {name!r}: base function {base!r} not allowed, INFO used"
                )
                base = "INFO"
            if name in out:
                self.warn(b, f"ORTSSignalFunctionType: duplicate {name!r} skipped")
                continue
            out[name] = base
        return out

    def subtypes(self, root: Block) -> tuple[str, ...]:
        blk = root.find("ORTSNormalSubtypes")
        if blk is None or self.mode != "ORTS":
            return ()
        out: list[str] = []
        for b in self.counted(blk, "ORTSNormalSubtype", "subtypes"):
            name = self.r.string(b, 0).upper()
            if name in out:
                self.warn(b, f"ORTSNormalSubtype: duplicate {name!r} skipped")
                continue
            out.append(name)
        return tuple(out)

    def signal_type(self, b: Block, custom: dict[str, str], subtypes: tuple[str, ...]) -> SignalType | None:
        r = self.r
        name = r.string(b, 0).lower()
        function = base = None
        aspects: list[Aspect] = []
        draw: dict[str, DrawState] = {}
        nca_blocks: list[int] = []
        kw: dict = {}
        lights: list[tuple[int, str]] = []
        for c in b.blocks():
            k = c.key
            if k == "signalfntype":
                fn = r.string(c, 0).upper()
                if fn in FUNCTIONS:
                    function = base = fn
                elif self.mode == "ORTS" and fn in custom:
                    function, base = fn, custom[fn]
                else:
                    self.warn(c, f"SignalType {name!r}: skipped unknown SignalFnType {fn!r}, INFO used")
                    function = base = "INFO"
            elif k == "signallights":
                for li in self.counted(c, "SignalLight", "lights"):
                    lights.append((r.value(li, 0, to_int, 0), r.string(li, 1).lower()))
                lights.sort()
            elif k == "signaldrawstates":
                for d in self.counted(c, "SignalDrawState", "draw states"):
                    idx = r.value(d, 0, to_int, 0)
                    dname = r.string(d, 1).lower()
                    dl: list[tuple[int, bool]] = []
                    dlb = d.find("DrawLights")
                    if dlb is not None:
                        for x in self.counted(dlb, "DrawLight", "draw lights"):
                            fl = x.find("SignalFlags")
                            dl.append(
                                (
                                    r.value(x, 0, to_int, 0),
                                    fl is not None and "FLASHING" in [str(v).upper() for v in fl.values],
                                )
                            )
                    sp = d.find("SemaphorePos")
                    ds = DrawState(idx, dname, tuple(dl), r.value(sp, 0, to_float, 0.0) if sp else None)
                    if dname in draw:
                        # OR stores a duplicate under DST<count>; a look-up by name finds the first.
                        draw[f"dst{len(draw)}"] = ds
                    else:
                        draw[dname] = ds
            elif k == "signalaspects":
                for a in self.counted(c, "SignalAspect", "aspects"):
                    word = r.string(a, 0).upper()
                    asp = ASPECTS.index(word) if word in ASPECTS else UNKNOWN
                    if any(x.aspect == asp for x in aspects):
                        self.warn(a, f"SignalType {name!r}: duplicate aspect {word} skipped")
                        continue
                    speed = -1.0
                    flags: set[str] = set()
                    for s in a.blocks():
                        if s.key == "speedmph":
                            speed = r.value(s, 0, to_float, 0.0) * 0.44704
                        elif s.key == "speedkph":
                            speed = r.value(s, 0, to_float, 0.0) / 3.6
                        elif s.key == "signalflags":
                            flags |= {str(v).upper() for v in s.values}
                    aspects.append(
                        Aspect(
                            asp,
                            r.string(a, 1).lower(),
                            speed,
                            "ASAP" in flags,
                            "OR_SPEEDRESET" in flags,
                            "OR_NOSPEEDREDUCTION" in flags,
                        )
                    )
            elif k == "signalnumclearahead":
                nca_blocks.append(r.value(c, 0, to_int, NCA_UNSET))
            elif k == "semaphoreinfo":
                kw["semaphore_info"] = r.value(c, 0, to_float, 1.0)
            elif k == "signalflags":
                for v in c.values:
                    f = str(v).upper()
                    if f in ("ABS", "NO_GANTRY", "SEMAPHORE"):
                        kw[f.lower()] = True
            elif k == "sigflashduration":
                kw["flash_on"] = r.value(c, 0, to_float, 1.0)
                kw["flash_off"] = r.value(c, 1, to_float, 1.0)
            elif k == "approachcontrolsettings":
                for s in c.blocks():
                    unit = {
                        "positionm": 1.0,
                        "positionkm": 1000.0,
                        "positionmiles": 1609.344,
                        "positionyd": 0.9144,
                    }.get(s.key)
                    if unit is not None:
                        kw["approach_position"] = r.value(s, 0, to_float, 0.0) * unit
                    sunit = {"speedkph": 1 / 3.6, "speedmph": 0.44704, "speedmps": 1.0}.get(s.key)
                    if sunit is not None:
                        kw["approach_speed"] = r.value(s, 0, to_float, 0.0) * sunit
            elif k == "ortsscript":
                kw["script"] = r.string(c, 0).lower()
            elif k == "ortsnormalsubtype":
                st = r.string(c, 0).upper()
                if st in subtypes:
                    kw["normal_subtype"] = subtypes.index(st)
                else:
                    self.warn(c, f"SignalType {name!r}: undeclared ORTSNormalSubtype {st!r} ignored")
        if function is None or base is None:
            self.diags.problem(r.error(b, f"SignalType {name!r}: no SignalFnType"))
            function = base = "INFO"
        for asp_ in aspects:
            if asp_.draw_state not in draw:
                self.diags.problem(
                    r.error(
                        b,
                        f"SignalType {name!r}: aspect {ASPECTS[asp_.aspect]} names "
                        f"the undefined draw state {asp_.draw_state!r}",
                    )
                )
        nca_msts = nca_orts = NCA_UNSET
        if self.mode == "ORTS":
            nca_orts = nca_blocks[0] if nca_blocks else NCA_UNSET
        elif len(nca_blocks) == 1:
            nca_msts = nca_blocks[0]
        elif len(nca_blocks) == 2:
            nca_orts = nca_blocks[0]  # OR reads the first value into the ORTS slot (§1.5.1)
        return SignalType(
            name, function, base, tuple(aspects), draw, nca_msts, nca_orts, lights=tuple(lights), **kw
        )

    def types(self, root: Block, custom: dict[str, str], subtypes: tuple[str, ...]) -> dict[str, SignalType]:
        out: dict[str, SignalType] = {}
        blk = root.find("SignalTypes")
        if blk is None:
            self.warn(root, "sigcfg: missing block 'SignalTypes'")
            return out
        for b in self.counted(blk, "SignalType", "signal types"):
            t = self.signal_type(b, custom, subtypes)
            if t is None:
                continue
            if t.name in out:
                self.warn(b, f"SignalType: duplicate {t.name!r} skipped")
                continue
            out[t.name] = t
        return out

    def shapes(self, root: Block) -> dict[str, SignalShape]:
        out: dict[str, SignalShape] = {}
        blk = root.find("SignalShapes")
        if blk is None:
            self.warn(root, "sigcfg: missing block 'SignalShapes'")
            return out
        r = self.r
        for b in self.counted(blk, "SignalShape", "signal shapes"):
            file = r.string(b, 0)
            key = file.replace("\\", "/").rsplit("/", 1)[-1].upper()
            desc = str(b.values[1]) if len(b.values) > 1 else ""
            subs: list[SubObj] = []
            sb = b.find("SignalSubObjs")
            for k, s in enumerate(self.counted(sb, "SignalSubObj", "sub-objects") if sb is not None else []):
                idx = r.value(s, 0, to_int, k)
                if idx != k:
                    self.warn(s, f"SignalShape {file!r}: sub-object index {idx}, expected {k}")
                vals = s.values
                kw: dict = {}
                for c in s.blocks():
                    if c.key == "sigsubtype":
                        st = r.string(c, 0).upper()
                        kw["sub_type"] = SUBTYPES.index(st) if st in SUBTYPES else -1
                    elif c.key == "sigsubstype":
                        kw["signal_type"] = r.string(c, 0).lower()
                    elif c.key == "signalflags":
                        fl = {str(v).upper() for v in c.values}
                        kw.update(
                            optional="OPTIONAL" in fl,
                            default="DEFAULT" in fl,
                            back_facing="BACK_FACING" in fl,
                            jn_link="JN_LINK" in fl,
                        )
                subs.append(
                    SubObj(
                        idx,
                        str(vals[1]) if len(vals) > 1 else "",
                        str(vals[2]) if len(vals) > 2 else "",
                        **kw,
                    )
                )
            if key in out:
                self.warn(b, f"SignalShape: duplicate {file!r} skipped")
                continue
            out[key] = SignalShape(key, file, desc, tuple(subs))
        return out

    def script_files(self, root: Block) -> tuple[str, ...]:
        blk = root.find("ScriptFiles")
        if blk is None:
            self.warn(root, "sigcfg: missing block 'ScriptFiles'")
            return ()
        names = []
        for b in list(blk.blocks("ScriptFile"))[:MAX_ENTRIES]:
            name = self.r.string(b, 0)
            if is_relative_name(name):
                names.append(name)
            else:  # read nothing outside the route (docs/security.md §3)
                self.warn(
                    b, f"sigcfg: ScriptFile {truncate_value(name)} is not a name inside the route, ignored"
                )
        return tuple(names)


def sigcfg_from_document(doc: Document, mode: str, diags: Diagnostics) -> SignalConfig:
    if mode not in ("MSTS", "ORTS"):
        raise ValueError(f"mode must be 'MSTS' or 'ORTS', not {mode!r}")
    c = _Cfg(diags, mode)
    custom = c.functions(doc)
    subtypes = c.subtypes(doc)
    return SignalConfig(
        doc.path,
        mode,
        c.light_textures(doc),
        c.lights_tab(doc),
        custom,
        subtypes,
        c.types(doc, custom, subtypes),
        c.shapes(doc),
        c.script_files(doc),
        tuple(diags.findings),
    )


def read_sigcfg(
    path: str | Path, *, mode: str | None = None, strict: bool = False, diagnostics: Diagnostics | None = None
) -> SignalConfig:
    """Read a sigcfg.dat. ``mode`` defaults from the location (a parent folder called
    OpenRails: ORTS). Lenient by default, as Open Rails: defects become warnings."""
    p = Path(path)
    if mode is None:
        mode = "ORTS" if p.parent.name.lower() == "openrails" else "MSTS"
    diags = diagnostics if diagnostics is not None else Diagnostics(strict=strict)
    doc = parse_file(p, diagnostics=diags)
    return sigcfg_from_document(doc, mode, diags)


def load_sigcfg(route_folder: str | Path, *, strict: bool = False) -> SignalConfig:
    """The sigcfg of a route folder, in the mode its location gives."""
    found = find_sigcfg(route_folder)
    if found is None:
        raise RouteError(f"no sigcfg.dat in {str(route_folder)!r} (nor in its OpenRails folder)")
    return read_sigcfg(found[0], mode=found[1], strict=strict)


__all__ = [
    "ASPECTS",
    "FUNCTIONS",
    "SUBTYPES",
    "Aspect",
    "DrawState",
    "FormatError",
    "SignalConfig",
    "SignalShape",
    "SignalType",
    "SubObj",
    "find_sigcfg",
    "load_sigcfg",
    "read_sigcfg",
    "sigcfg_from_document",
]
