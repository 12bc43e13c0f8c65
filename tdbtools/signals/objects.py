"""Signal objects of a route: TDB signal items merged through world-file Signal objects, with
their types from sigcfg and their scripts (docs/signals.md §3).

:func:`load_signals` gives a :class:`SignalSet`: the configuration, the compiled scripts, the
signal objects (each with its heads) and the speed-post objects, plus every warning.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Finding, Location
from ..formats.route import Route
from ..formats.sigcfg import FUNCTIONS, SUBTYPES, SignalConfig, SignalType
from ..formats.tdb import JunctionNode, SignalItem, SpeedPostItem, VectorNode
from ..formats.world import SignalObj, load_signal_world
from ..track.traveller import item_positions
from .script import Script, ScriptFile, read_scripts


@dataclass(frozen=True, slots=True)
class WorldSignal:
    """A world-file Signal object, as the signal objects use it (§3.1)."""

    file: str
    uid: int
    shape: str
    mask: int  # SignalSubObj: present sub-objects
    flags: tuple[bool, ...]  # FlagsSet[SIGFEAT] of the front-facing heads
    flags_back: tuple[bool, ...]
    head_reference: dict[int, int]  # TDB item -> sub-object index
    back_facing: frozenset[int] = frozenset()  # sub-objects marked BACK_FACING


@dataclass(frozen=True, slots=True)
class Head:
    """One signal head: a TDB SignalItem with its type."""

    item: int  # TDB item index
    type_name: str
    type: SignalType | None  # None: not in sigcfg (the head stays at STOP)
    function: str  # built-in behaviour: NORMAL, SPEED, INFO ...
    function_index: int  # the script number of the function type
    direction: int  # TDB dir: 0 governs trains moving forward along the node
    node: int
    offset: float  # metres from the node start
    junction: tuple[int, int, int] | None = None  # (junction node, path, main node) from TrSignalDirs[0]
    script: Script | None = None


@dataclass(frozen=True, slots=True)
class SignalObject:
    index: int
    kind: str  # "signal" | "speedpost"
    heads: tuple[Head, ...]
    node: int
    offset: float
    direction: int  # TDB dir of the first head
    world: WorldSignal | None = None
    #: speed posts: (passenger m/s, freight m/s, warning, resume); -1 = no value
    speed: tuple[float, float, bool, bool] | None = None

    @property
    def tc_direction(self) -> int:
        """Direction of the trains it governs: 1 = forward along the node."""
        return 1 - self.direction

    @property
    def is_normal(self) -> bool:
        return any(h.function == "NORMAL" for h in self.heads)

    @property
    def normal_heads(self) -> int:
        return sum(h.function == "NORMAL" for h in self.heads)

    def sig_feature(self, feature: int) -> int:
        if self.world is None or not 0 <= feature < len(SUBTYPES):
            return 1
        return int(self.world.flags[feature])

    def hashead(self, n: int) -> int:
        if self.world is None or not 0 <= n < 32:
            return 0
        return (self.world.mask >> n) & 1

    def nca(self) -> tuple[int, int]:
        """(SNCA_MSTS, SNCA_ORTS): maxima over the NORMAL heads (§1.5.1)."""
        heads = [h.type for h in self.heads if h.function == "NORMAL" and h.type is not None]
        return (max((t.nca_msts for t in heads), default=-2), max((t.nca_orts for t in heads), default=-2))


@dataclass(frozen=True, slots=True, eq=False)
class SignalSet:
    route: str
    config: SignalConfig | None
    script_files: tuple[ScriptFile, ...]
    scripts: dict[str, Script]  # signal type -> script
    signals: tuple[SignalObject, ...]
    speedposts: tuple[SignalObject, ...]
    world_signals: int
    warnings: tuple[Finding, ...] = ()
    unsupported: tuple[str, ...] = field(default=())

    @property
    def heads(self) -> tuple[Head, ...]:
        return tuple(h for s in self.signals for h in s.heads)

    def _facts(self) -> list[tuple[str, object]]:
        return [
            ("route", self.route),
            ("mode", self.config.mode if self.config else None),
            ("signals", len(self.signals)),
            ("heads", sum(len(s.heads) for s in self.signals)),
            ("speedposts", len(self.speedposts)),
            ("scripts", len(self.scripts)),
            ("warnings", len(self.warnings)),
        ]

    def __repr__(self) -> str:
        # .signals, .speedposts and .summary() have the objects themselves.
        from .._display import short_repr

        return short_repr("SignalSet", self._facts())

    def _repr_html_(self) -> str:
        from .._display import html_summary

        return html_summary(f"Signals of {self.route}", self._facts())

    def summary(self) -> dict[str, Any]:
        """The JSON the ``signals`` command prints."""
        return {
            "route": self.route,
            "mode": self.config.mode if self.config else None,
            "sigcfg": self.config.path if self.config else None,
            "types": len(self.config.types) if self.config else 0,
            "signals": [
                {
                    "index": s.index,
                    "node": s.node,
                    "offset": round(s.offset, 3),
                    "direction": s.direction,
                    "heads": [h.item for h in s.heads],
                    "world": (
                        {"file": Path(s.world.file).name, "uid": s.world.uid, "shape": s.world.shape}
                        if s.world
                        else None
                    ),
                }
                for s in self.signals
            ],
            "heads": [
                {
                    "item": h.item,
                    "type": h.type_name,
                    "function": h.function,
                    "direction": h.direction,
                    "node": h.node,
                    "offset": round(h.offset, 3),
                    "junction": list(h.junction) if h.junction else None,
                    "script": h.script.key if h.script else None,
                }
                for h in self.heads
            ],
            "speedposts": len(self.speedposts),
            "world_signals": self.world_signals,
            "scripts": {
                "files": [Path(f.path).name for f in self.script_files],
                "parsed": sum(len(f.scripts) for f in self.script_files),
                "errors": sum(f.errors for f in self.script_files),
                "bound": len(self.scripts),
            },
            "warnings": [str(w) for w in self.warnings],
        }


def _bind_scripts(
    cfg: SignalConfig, files: list[ScriptFile], warn: Callable[[str], None]
) -> dict[str, Script]:
    """Type name -> script: by name, and by ORTSScript (§2.2)."""
    out: dict[str, Script] = {}
    by_script: dict[str, list[str]] = {}
    for t in cfg.types.values():
        if t.script:
            by_script.setdefault(t.script, []).append(t.name)
    for f in files:
        for s in f.scripts:
            targets = ([s.key] if s.key in cfg.types else []) + by_script.get(s.key, [])
            for name in targets:
                if name in out:
                    warn(f"ignored duplicate SignalType script {s.key!r} for {name!r}")
                    continue
                out[name] = s
    return out


#: Compiled script files kept in memory (most recently used): compiling DK24's takes ~0.2 s.
MEMO_SCRIPT_FILES = 8
_SCRIPT_MEMO: dict[tuple, tuple[list | None, ScriptFile]] = {}
_SCRIPT_LOCK = threading.Lock()


def _scripts(
    path: Path, strict: bool, functions: dict[str, int], subtypes: dict[str, int], cache: bool
) -> ScriptFile:
    """The compiled script file, from memory while the file is unchanged. A script file
    holds only pure functions of the head it is given, so one may serve many sets (as a
    :class:`SignalSet` may serve many replays). Compiled code is never stored on disk."""
    if not cache:
        return read_scripts(path, strict=strict, functions=functions, subtypes=subtypes)
    key = (str(path), strict, tuple(functions.items()), tuple(subtypes.items()))
    stamp = _stamp(path)
    with _SCRIPT_LOCK:
        hit = _SCRIPT_MEMO.get(key)
    if hit is not None and hit[0] is not None and hit[0] == stamp:
        return hit[1]
    out = read_scripts(path, strict=strict, functions=functions, subtypes=subtypes)
    if stamp is not None and _stamp(path) == stamp:
        with _SCRIPT_LOCK:
            _SCRIPT_MEMO.pop(key, None)
            _SCRIPT_MEMO[key] = (stamp, out)
            while len(_SCRIPT_MEMO) > MEMO_SCRIPT_FILES:
                del _SCRIPT_MEMO[next(iter(_SCRIPT_MEMO))]
    return out


def _stamp(path: Path) -> list | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def load_signals(route: Route, *, strict: bool = False, cache: bool = True) -> SignalSet:
    """Build the route's signal objects (docs/signals.md §3). A route without sigcfg.dat
    gives an empty set (with a warning). With ``cache``, the sigcfg and world objects
    come from the route cache while those files are unchanged (docs/signals.md §3)."""
    warnings: list[Finding] = []

    def warn(msg: str, loc: Location | None = None) -> None:
        warnings.append(Finding(msg, loc))

    inputs = load_signal_world(route.folder, strict=strict, cache=cache)
    cfg = inputs.config
    if cfg is None:
        warn("no sigcfg.dat: the route has no signal configuration")
        return SignalSet(route.name, None, (), {}, (), (), 0, tuple(warnings))
    functions = {n: k for k, n in enumerate(FUNCTIONS)}
    for k, fname in enumerate(cfg.custom_functions):
        functions[fname] = len(FUNCTIONS) + k
    subtypes = {n: k for k, n in enumerate(cfg.normal_subtypes)}
    files: list[ScriptFile] = []
    for sp in cfg.script_paths():
        if not sp.is_file():
            warn(f"signal script file {sp.name!r} not found", Location(cfg.path, 1, 1))
            continue
        files.append(_scripts(sp, strict, functions, subtypes, cache))
    bound = _bind_scripts(cfg, files, warn)

    items = route.tdb.items
    nodes = route.tdb.nodes
    positions: dict[int, tuple[int, float]] = {}
    for node, plist in item_positions(route).items():
        for ip in plist:
            positions.setdefault(ip.item.index, (node, ip.offset))

    # World signals (§3.1).
    world_by_item: dict[int, WorldSignal] = {}
    world_list: list[WorldSignal] = []
    for wf in inputs.world:
        wf_path = Path(wf.path)
        for o in wf.signals:
            if not o.units:
                continue
            bad = [
                u
                for u in o.units
                if u.db != 0
                or not 0 <= u.item_id < len(items)
                or not _near_tile(items[u.item_id], wf.tile_x, wf.tile_z)
            ]
            if bad:
                warn(
                    f"{wf_path.name}: Signal UiD {o.uid} references item {bad[0].item_id} not present "
                    "in .tdb: object dropped"
                )
                continue
            ws = _world_signal(cfg, o, wf.path, warn)
            world_list.append(ws)
            for u in o.units:
                world_by_item.setdefault(u.item_id, ws)

    # TDB scan (§3.2): every referenced SignalItem its own object; non-milepost speed posts.
    objs: list[list[Head]] = []
    obj_of_item: dict[int, int] = {}
    speed: list[SignalObject] = []
    seen: set[int] = set()
    for n in nodes[1:]:
        if not isinstance(n, VectorNode):
            continue
        for ref in n.item_refs:
            if not 0 <= ref < len(items):
                continue
            it = items[ref]
            if isinstance(it, SignalItem):
                if ref in seen:
                    warn(f"invalid double TDBRef to signal item {ref} (node {n.index})")
                    continue
                seen.add(ref)
                node, off = positions.get(ref, (n.index, 0.0))
                obj_of_item[ref] = len(objs)
                objs.append([_head(it, node, off, cfg, bound, nodes, warn)])
            elif isinstance(it, SpeedPostItem) and not it.is_milepost and ref not in seen:
                seen.add(ref)
                node, off = positions.get(ref, (n.index, 0.0))
                v = it.speed_ms
                pas = 999.0 if it.is_resume else (v if v is not None and it.flags & (1 << 5) == 0 else -1.0)
                fre = 999.0 if it.is_resume else (v if v is not None and it.flags & (1 << 6) == 0 else -1.0)
                if it.flags & (1 << 7) and v is not None and not it.is_resume:
                    pas = fre = v
                speed.append(
                    SignalObject(
                        len(speed),
                        "speedpost",
                        (),
                        node,
                        off,
                        -1,
                        speed=(pas, fre, it.is_warning, it.is_resume),
                    )
                )

    # Merge heads through world objects (§3.2).
    alive = [True] * len(objs)
    for ws in world_list:
        refs = [i for i in ws.head_reference if i in obj_of_item]
        if len(refs) < 2:
            continue
        first = obj_of_item[refs[0]]
        for i in refs[1:]:
            k = obj_of_item[i]
            if not alive[k] or k == first:
                continue
            if objs[k][0].node != objs[first][0].node:
                warn(
                    f"{Path(ws.file).name}: Signal UiD {ws.uid}: item {i} is on another track node, "
                    "merging stopped"
                )
                break
            objs[first].extend(objs[k])
            alive[k] = False
            obj_of_item[i] = first
    signals: list[SignalObject] = []
    for k, heads in enumerate(objs):
        if not alive[k]:
            continue
        wsig = world_by_item.get(heads[0].item)
        h0 = heads[0]
        if (
            wsig is not None
            and wsig.back_facing
            and any(wsig.head_reference.get(h.item) in wsig.back_facing for h in heads)
        ):
            front = [h for h in heads if wsig.head_reference.get(h.item) not in wsig.back_facing]
            back = [h for h in heads if wsig.head_reference.get(h.item) in wsig.back_facing]
            if front:
                signals.append(
                    SignalObject(
                        len(signals),
                        "signal",
                        tuple(front),
                        front[0].node,
                        front[0].offset,
                        front[0].direction,
                        wsig,
                    )
                )
            bws = WorldSignal(
                wsig.file,
                wsig.uid,
                wsig.shape,
                wsig.mask,
                wsig.flags_back,
                wsig.flags_back,
                wsig.head_reference,
                wsig.back_facing,
            )
            signals.append(
                SignalObject(
                    len(signals), "signal", tuple(back), back[0].node, back[0].offset, back[0].direction, bws
                )
            )
            continue
        signals.append(
            SignalObject(len(signals), "signal", tuple(heads), h0.node, h0.offset, h0.direction, wsig)
        )
    unsupported = tuple(sorted(t.name for t in cfg.types.values() if t.script and t.name not in bound))
    all_warn = tuple(cfg.warnings) + tuple(x for f in files for x in f.warnings) + tuple(warnings)
    return SignalSet(
        route.name,
        cfg,
        tuple(files),
        bound,
        tuple(signals),
        tuple(speed),
        len(world_list),
        tuple(dict.fromkeys(all_warn)),
        unsupported,
    )


def _near_tile(item: Any, tx: int, tz: int) -> bool:
    rd = getattr(item, "r_data", None)
    if rd is None:
        return True
    return abs(rd.tile_x - tx) <= 1 and abs(rd.tile_z - tz) <= 1


def _world_signal(cfg: SignalConfig, o: SignalObj, path: str, warn: Callable[[str], None]) -> WorldSignal:
    key = o.file_name.replace("\\", "/").rsplit("/", 1)[-1].upper()
    shape = cfg.shapes.get(key)
    n = len(SUBTYPES)
    flags = [False] * n
    back = [False] * n
    bf: set[int] = set()
    ref: dict[int, int] = {}
    if shape is None:
        warn(f"{Path(path).name}: Signal UiD {o.uid}: shape {o.file_name!r} not found in sigcfg")
        return WorldSignal(path, o.uid, o.file_name, o.sub_obj_mask, tuple(flags), tuple(back), {})
    for i, sub in enumerate(shape.sub_objs):
        if not (o.sub_obj_mask >> i) & 1:
            continue
        if sub.back_facing:
            bf.add(i)
        if sub.sub_type >= 1:
            (back if sub.back_facing else flags)[sub.sub_type] = True
    for u in o.units:
        ref.setdefault(u.item_id, u.sub_obj)
    return WorldSignal(
        path, o.uid, o.file_name, o.sub_obj_mask, tuple(flags), tuple(back), ref, frozenset(bf)
    )


def _head(
    it: SignalItem,
    node: int,
    off: float,
    cfg: SignalConfig,
    bound: dict[str, Script],
    nodes: tuple,
    warn: Callable[[str], None],
) -> Head:
    name = it.signal_type.lower()
    st = cfg.types.get(name)
    if st is None:
        warn(f"SignalHead with undefined SignalType {name!r} (item {it.index})")
    junction = None
    if it.signal_dirs:
        d = it.signal_dirs[0]
        jn = nodes[d.track_node] if 0 <= d.track_node < len(nodes) else None
        if isinstance(jn, JunctionNode) and 1 + d.link_lr_path < len(jn.pins):
            junction = (d.track_node, d.link_lr_path, jn.pins[jn.in_pins + d.link_lr_path].link)
        else:
            warn(f"signal item {it.index}: TrSignalDir names {d.track_node}, which is not a junction")
    fn = st.function_base if st is not None else "INFO"
    fidx = FUNCTIONS.index(fn) if fn in FUNCTIONS else 4
    return Head(
        it.index,
        name,
        st,
        fn,
        fidx,
        it.direction,
        node,
        off,
        junction,
        bound.get(name) if st is not None else None,
    )


__all__ = ["Head", "SignalObject", "SignalSet", "WorldSignal", "load_signals"]
