"""From an Open Rails timetable to the trains a replay runs (docs/timetables.md §5).

Each train of the timetable becomes a :class:`TTRun`: its path, its consist (a
composite consist is assembled into a temporary ``.con``), its booked start, its
station stops by name, and the links between trains that the replay acts on: which
train forms or triggers it, which pool it comes from or goes to, whom it waits for.
A ``$stable`` disposal becomes one or two extra runs (the move out and the move in).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import TdbToolsError
from ..formats.consist import Consist, read_consist
from ..formats.timetable import (
    Command,
    Stamp,
    Timetable,
    read_timetable,
    relative_file_name,
)
from ..formats.timetable_list import LIST_SUFFIXES, read_timetable_group
from ..physics.scenario import resolve_file
from .timetable_select import drop_bad_refs, drop_bad_trains, with_canonical_refs
from .timetable_units import JOIN_COMMANDS, JoinOp

#: At most this many trains (and extra stable moves) are replayed.
MAX_TT_TRAINS = 500
#: Commands the replay reads as Open Rails does or in a simpler way (docs §5); the
#: others are read and reported as not modelled.
MODELLED = frozenset(
    {
        "create",
        "pool",
        "next",
        "static",
        "activated",
        "activate",
        "wait",
        "follow",
        "connect",
        "terminal",
        "forms",
        "triggers",
        "stable",
        "remove",
        "max",
        "cruise",
        "acc",
        "dec",
        "hold",
        "forcehold",
        "nohold",
        "nowaitsignal",
        "waitsignal",
        "stoptime",
        "waitany",
        *JOIN_COMMANDS,
    }
)


class TimetableReplayError(TdbToolsError):
    """A timetable that cannot be replayed (no such player, missing path or consist)."""


@dataclass(frozen=True, slots=True)
class TTStop:
    station: str
    arrival: int | None
    depart: int | None
    commands: tuple[Command, ...]
    terminal: bool
    stoptime: int | None

    @property
    def hold(self) -> bool:
        """$hold or $forcehold (the station's or the train's), not cancelled by $nohold."""
        names = {c.name for c in self.commands}
        return bool(names & {"hold", "forcehold"}) and "nohold" not in names


@dataclass(frozen=True, slots=True)
class TTLink:
    """A $wait/$follow/$connect/$activate of a run: ``station`` None means its start."""

    kind: str
    train: str
    station: str | None
    maxdelay: float | None  # seconds
    hold: float = 0.0  # seconds ($connect)
    owndelay: float | None = None
    notstarted: bool = False
    #: $waitany (``train`` is then a path): /both, /opposite
    both: bool = False
    opposite: bool = False


@dataclass(frozen=True, slots=True)
class TTRun:
    name: str
    path: str
    consist: str  # a .con name in the route's install, or an absolute path (assembled)
    consist_text: str  # as written in the timetable
    start: int  # booked start, seconds since midnight
    create: int | None  # $create: placed at this time, still until start
    stops: tuple[TTStop, ...]
    static: bool = False  # placed at the start of its path and never moves
    formed_by: str | None = None  # the run whose $forms/$triggers/$stable makes this one
    keeps_consist_of: str | None = None  # $forms: runs with the consist of the run forming it
    pool_from: str | None = None
    pool_to: str | None = None
    pool_stock: bool = False  # created into a pool, never on the track
    stays: bool = False  # stays on the track at the end of its path ($static, forms/triggers)
    activated: bool = False  # starts only when another run $activates it
    links: tuple[TTLink, ...] = ()
    activates: tuple[tuple[str | None, str], ...] = ()  # (station or None=start, "END"), train
    max_speed: float | None = None  # m/s
    decel_factor: float = 1.0
    restart_new_s: float = 0.0  # #restartdelay $new: added to its start
    restart_station_s: float = 0.0  # #restartdelay $station: added to each departure
    synthetic: bool = False  # a $stable move
    disposal: str = "removed"
    source: str = ""  # the train's heading in the file (static trains are renamed)
    #: $detach/$attach/$pickup/$transfer at its end, in the order written (docs §5.6)
    joins: tuple[JoinOp, ...] = ()
    #: runs that must have ended before it starts ($attach or $transfer onto it)
    after: tuple[str, ...] = ()
    #: $pickup by that run: it stands at the start of its path until then, never runs
    picked_by: str | None = None
    detached: bool = False  # formed ($detach /forms) out of a portion cut off another train


@dataclass(frozen=True, slots=True)
class TTPlan:
    timetable: Timetable
    route_folder: Path
    runs: tuple[TTRun, ...]
    player: str | None
    warnings: tuple[str, ...] = ()
    simplifications: tuple[str, ...] = ()
    assembled: dict = field(default_factory=dict, compare=False)  # consist text -> Consist
    #: What of the file was left out (cells that cannot be read, trains that cannot
    #: run, commands naming missing trains): the replay says it and exits 1.
    defects: tuple[str, ...] = ()


def _number(v: tuple[str, ...] | None) -> float:
    """A #restartdelay value in seconds (0 when missing or not a number, as Open Rails
    leaves a value it cannot read unset)."""
    try:
        x = float(v[0]) if v else 0.0
    except ValueError:
        return 0.0
    return x if 0.0 <= x < 86400.0 else 0.0


def _minutes(cmd: Command, q: str) -> float | None:
    v = cmd.qualifier(q)
    if not v:
        return None
    try:
        return float(v[0]) * 60.0
    except ValueError:
        raise TimetableReplayError(f"${cmd.name} /{q}={v[0]!r}: not a number of minutes") from None


def _time_value(text: str) -> int:
    s = text.strip()
    try:
        h, m = s.split(":")[:2]
        return int(h) * 3600 + int(m) * 60
    except ValueError:
        raise TimetableReplayError(f"{text!r} is not a time hh:mm") from None


def _speed(value: str, unit: str) -> float:
    try:
        v = float(value)
    except ValueError:
        raise TimetableReplayError(f"speed {value!r} is not a number") from None
    return v / 3.6 if unit == "km/h" else v * 0.44704 if unit == "mph" else v


def route_of(path: Path) -> Path:
    """A timetable lives in ROUTE/ACTIVITIES/OPENRAILS/."""
    p = path.resolve().parent
    if p.name.lower() == "openrails" and p.parent.name.lower() == "activities":
        return p.parent.parent
    raise TimetableReplayError(
        f"{path}: a timetable lives in <route>/ACTIVITIES/OpenRails/; cannot tell its route"
    )


def plan_timetable(
    path: str | Path, *, player: str | None = None, route_folder: str | Path | None = None
) -> TTPlan:
    """Read a timetable and turn its trains into runs (module docstring)."""
    p = Path(path)
    # read as Open Rails reads: a cell that cannot be read is left out and said, the
    # other trains run (the run then exits 1: TimetableResult.failed)
    left_out: tuple[str, ...] = ()
    if p.suffix.lower() in LIST_SUFFIXES:
        # a list: its timetables run together, as Open Rails runs them
        tt, left_out = read_timetable_group(p)
    else:
        tt = read_timetable(p, strict=False)
    folder = Path(route_folder) if route_folder is not None else route_of(p)
    warnings = [str(f) for f in tt.findings]
    defects = [str(f) for f in tt.findings if f.code == "FORMAT" or f.severity == "error"]
    defects.extend(left_out)
    simpl: list[str] = []
    station_cmds = {s.name: s.commands for s in tt.stations}
    runs: list[TTRun] = []
    names = {t.name for t in tt.trains}
    if player is not None and (player not in names or tt.train(player).static):  # type: ignore[union-attr]
        raise TimetableReplayError(
            f"no train {player!r} to play in {p.name} (trains: {', '.join(sorted(t.name for t in tt.trains if not t.static))})"
        )
    tt = with_canonical_refs(tt)
    tt = drop_bad_trains(tt, defects)
    names = {t.name for t in tt.trains}
    if player is not None and player not in names:
        raise TimetableReplayError(f"train {player!r} cannot run: {'; '.join(defects)}")
    tt = drop_bad_refs(tt, names, defects)
    formed: dict[str, tuple[str, str]] = {}  # new train -> (by, how)
    static_count = 0
    for t in tt.trains:
        for c in t.dispose:
            for how in ("forms", "triggers"):
                tgt = (
                    c.value
                    if c.name == how
                    else (c.qualifier(how) or (None,))[0]
                    if c.name == "stable"
                    else None
                )
                if c.name == "detach" and how == "forms":
                    tgt = (c.qualifier("forms") or (None,))[0]
                if tgt:
                    if tgt not in names:
                        raise TimetableReplayError(
                            f"train {t.name!r}: ${c.name} names no train of the timetable: {tgt!r}"
                        )
                    if tgt in formed:
                        raise TimetableReplayError(
                            f"train {tgt!r} is formed by both {formed[tgt][0]!r} and {t.name!r}"
                        )
                    # a $stable move forms (or triggers) the new train from its inward run;
                    # a $detach /forms starts it with the portion cut off
                    formed[tgt] = (
                        t.name if c.name in (how, "detach") else f"{t.name} (stable in)",
                        "detach" if c.name == "detach" else how,
                    )
    for t in tt.trains:
        if len(runs) >= MAX_TT_TRAINS:
            raise TimetableReplayError(f"{p}: more than {MAX_TT_TRAINS} trains")
        name = t.name
        if t.static and name.lower().startswith("$static"):
            static_count += 1
            name = f"static {static_count}"
        if not t.path:
            raise TimetableReplayError(f"train {name!r}: no #path")
        if not t.consist:
            raise TimetableReplayError(f"train {name!r}: no #consist")
        tpath = file_name(t.path, ".pat", f"train {name!r}: path")
        if any(q == "endatlastsignal" for q, _v in t.path_qualifiers):
            simpl.append(f"{name}: $endatlastsignal is read; the train runs to the end of its path")
        tcons = [file_name(c.name, ".con", f"train {name!r}: consist") for c in t.consist]
        start = t.start.seconds if t.start is not None and t.start.seconds is not None else None
        create = None
        pool_from = None
        pool_stock = False
        activated = False
        static = t.static
        pool_to_static: str | None = None
        for c in t.start_commands:
            if c.name == "create":
                create = _time_value(c.value) if c.value else -1
                if c.has("ahead"):
                    simpl.append(
                        f"{name}: $create /ahead is read, the train is placed at the start of its path"
                    )
            elif c.name == "pool":
                pool_from = c.value
            elif c.name == "next":
                if start is not None:
                    start += 86400
            elif c.name == "static":
                static = True
                pq = c.qualifier("pool")
                if pq:
                    pool_stock, pool_from = True, None
                    pool_to_static = pq[0]
                if c.has("ahead"):
                    simpl.append(
                        f"{name}: $static /ahead is read, the train is placed at the start of its path"
                    )
            elif c.name == "activated":
                activated = True
        if start is None and not static:
            raise TimetableReplayError(f"train {name!r}: no start time in #start")
        links: list[TTLink] = []
        activates: list[tuple[str | None, str]] = []
        max_speed: float | None = None
        decel = 1.0
        for c in t.note:
            if c.name in ("wait", "follow") and c.value:
                links.append(_link(c, None))
            elif c.name == "waitany" and c.value:
                links.append(_waitany(c, None, name))
            elif c.name == "dec" and c.value:
                decel = float(c.value)
            elif c.name == "acc":
                simpl.append(f"{name}: $acc is read; the physics sets the acceleration")
            elif c.name == "activate" and c.value:
                activates.append((None, c.value))
            elif c.name not in MODELLED:
                simpl.append(f"{name}: ${c.name} in #note is not modelled")
        for c in t.speed:
            if c.name in ("max", "cruise") and c.value:
                vs = _speed(c.value, t.speed_unit)
                max_speed = vs if max_speed is None else min(max_speed, vs)
                if c.name == "cruise":
                    simpl.append(f"{name}: $cruise is used as a speed cap (no catching up when late)")
            elif c.name not in MODELLED:
                simpl.append(f"{name}: speed command ${c.name} is not modelled")
        restart: dict[str, float] = {}
        for c in t.restart_delay:
            fix, var = _number(c.qualifier("fix")), _number(c.qualifier("var"))
            if c.name in ("new", "station"):
                # Open Rails draws fix + a random part up to var; here the mean of it
                restart[c.name] = fix + var / 2.0
            else:
                simpl.append(f"{name}: #restartdelay ${c.name} is read and not applied")
        if restart:
            simpl.append(
                f"{name}: #restartdelay: the fixed part plus half the random part (its mean) is added "
                "when the train starts and when it leaves a stop"
            )
        stops: list[TTStop] = []
        joins: list[JoinOp] = []
        last_stop = _last_stop(t)
        for s in t.stops:
            cmds = s.commands + station_cmds.get(s.station, ())
            if s.passing or (s.arrival is None and s.depart is None):
                stop_times = None
            else:
                stop_times = (
                    s.arrival.seconds if s.arrival is not None else None,
                    s.depart.seconds if s.depart is not None else None,
                )
            for c in s.commands:
                if c.name in ("wait", "follow", "connect") and c.value:
                    links.append(_link(c, s.station))
                elif c.name == "waitany" and c.value:
                    links.append(_waitany(c, s.station, name))
                elif c.name == "activate" and c.value:
                    activates.append((s.station, c.value))
                elif c.name in JOIN_COMMANDS:
                    if c.name == "attach" and s.station == last_stop:
                        # the manual: a train attaching at a stop ends there ("no use to
                        # define anything beyond this stop"): done at its end
                        joins.append(_join_op(name, c))
                        simpl.append(f"{name} at {s.station}: $attach is done where its path ends")
                    else:
                        simpl.append(
                            f"{name} at {s.station}: ${c.name} on the way is not modelled (only at the train's end)"
                        )
                elif c.name not in MODELLED:
                    simpl.append(f"{name} at {s.station}: ${c.name} is not modelled")
            if stop_times is None:
                continue
            stoptime = next(
                (int(c.value) for c in cmds if c.name == "stoptime" and c.value and c.value.isdigit()), None
            )
            stops.append(
                TTStop(
                    s.station,
                    stop_times[0],
                    stop_times[1],
                    cmds,
                    any(c.name == "terminal" for c in cmds),
                    stoptime,
                )
            )
        pool_to = None
        stays = static
        disposal = "static" if static else "removed"
        extra: list[TTRun] = []
        for c in t.dispose:
            if c.name == "forms":
                stays, disposal = True, f"forms {c.value}"
                if c.has("runround"):
                    simpl.append(f"{name}: $forms /runround is read, the engine does not run round")
            elif c.name == "triggers":
                stays, disposal = True, f"triggers {c.value}"
            elif c.name == "static":
                stays, disposal = True, "static"
            elif c.name == "pool" and c.value:
                pool_to, disposal = c.value, f"to pool {c.value}"
            elif c.name == "remove":
                disposal = "removed"
            elif c.name == "activate" and c.value:
                activates.append(("END", c.value))
            elif c.name in JOIN_COMMANDS:
                joins.append(_join_op(name, c))
            elif c.name == "stable":
                out_path = (c.qualifier("out_path") or ("",))[0]
                if not out_path:
                    raise TimetableReplayError(f"train {name!r}: $stable needs /out_path")
                out_t = (c.qualifier("out_time") or (None,))[0]
                stays, disposal = True, "stabled"
                nxt = (c.qualifier("forms") or c.qualifier("triggers") or (None,))[0]
                out = TTRun(
                    f"{name} (stable out)",
                    file_name(out_path, ".pat", f"train {name!r}: $stable /out_path"),
                    "",
                    "",
                    _time_value(out_t) if out_t else 0,
                    None,
                    (),
                    formed_by=name,
                    keeps_consist_of=name,
                    stays=True,
                    synthetic=True,
                    disposal="static" if nxt is None else f"stable in {nxt}",
                )
                extra.append(out)
                if nxt is not None:
                    in_path = (c.qualifier("in_path") or ("",))[0]
                    if not in_path:
                        raise TimetableReplayError(
                            f"train {name!r}: $stable /forms or /triggers needs /in_path"
                        )
                    in_t = (c.qualifier("in_time") or (None,))[0]
                    extra.append(
                        TTRun(
                            f"{name} (stable in)",
                            file_name(in_path, ".pat", f"train {name!r}: $stable /in_path"),
                            "",
                            "",
                            _time_value(in_t) if in_t else 0,
                            None,
                            (),
                            formed_by=out.name,
                            keeps_consist_of=name,
                            stays=True,
                            synthetic=True,
                            disposal=f"{'forms' if c.qualifier('forms') else 'triggers'} {nxt}",
                        )
                    )
            elif c.name not in MODELLED:
                simpl.append(f"{name}: disposal ${c.name} is not modelled (the train is removed at its end)")
        by, how = formed.get(t.name, (None, ""))
        if player is not None and t.name == player:
            stays = True
        consist_text = " + ".join(f"{c}{' $reverse' if p.reverse else ''}" for c, p in zip(tcons, t.consist))
        run = TTRun(
            name,
            tpath,
            tcons[0] if len(t.consist) == 1 and not t.consist[0].reverse else "",
            consist_text,
            start if start is not None else -1,
            create,
            tuple(stops),
            static=static and not pool_stock,
            formed_by=by,
            keeps_consist_of=by if how == "forms" and t.name != player else None,
            detached=how == "detach",
            pool_from=pool_from,
            pool_to=pool_to if not pool_stock else pool_to_static,
            pool_stock=pool_stock,
            stays=stays,
            activated=activated,
            links=tuple(links),
            activates=tuple(activates),
            max_speed=max_speed,
            decel_factor=decel,
            restart_new_s=restart.get("new", 0.0),
            restart_station_s=restart.get("station", 0.0),
            disposal=disposal,
            source=t.name,
            joins=tuple(joins),
        )
        if any(j.kind == "attach" for j in joins):
            # it stands where it ended until the train it is attached to starts
            run = _replace(run, stays=True)
        runs.append(run)
        runs.extend(extra)
    # extra stable moves: their consist is the one of the train they come from
    by_name = {r.name: r for r in runs}
    fixed = []
    for r in runs:
        if r.synthetic:
            src = by_name[r.keeps_consist_of or ""]
            r = _replace(r, consist=src.consist, consist_text=src.consist_text)
        fixed.append(r)
    runs = _join_links(fixed)
    # booked start of a run that is formed: at least the start of what forms it
    known = {r.name for r in runs}
    for r in runs:
        for link in r.links:
            if link.kind != "waitany" and link.train not in known:
                raise TimetableReplayError(
                    f"train {r.name!r}: ${link.kind} names no train of the timetable: {link.train!r}"
                )
        for _where, tgt in r.activates:
            if tgt not in known:
                raise TimetableReplayError(
                    f"train {r.name!r}: $activate names no train of the timetable: {tgt!r}"
                )
    used = _used_commands(tt)
    simpl.extend(note for name, note in SIMPLIFIED.items() if name in used)
    return TTPlan(
        tt,
        folder,
        tuple(runs),
        player,
        tuple(warnings),
        tuple(dict.fromkeys(simpl)),
        defects=tuple(dict.fromkeys(defects)),
    )


#: How the replay simplifies commands it does model (docs/timetables.md §5): said on
#: stderr by every run that uses them.
SIMPLIFIED = {
    "pool": "$pool: units are counted on the pool's storage tracks (#maxunits, last in first out) but do "
    "not stand there: a train sent to a pool leaves the track, one taken out starts at the start of its "
    "own path with its own consist; a track's length is not checked",
    "forms": "$forms/$triggers: the train that forms another stays where it ended until the new "
    "one starts, then leaves the track (no run-round, no coupling)",
    "stable": "$stable: the moves out and in are extra trains on their paths; /runround and /rrpos are not done",
    "wait": "$wait/$follow: evaluated at the train's start and stations; it then waits at the wait "
    "position on the line ahead (or where it stands when that is under 50 m ahead or a stop comes first); "
    "$waitany holds the train where it stands (its start or a station)",
    "hold": "$hold/$forcehold: the held exit is the end of the stop (no signal asked for, no track "
    "reserved beyond it), whether a signal stands there or not",
    "nowaitsignal": "$nowaitsignal: no train waits at a platform for its exit signal (each draws up to it)",
    "terminal": "$terminal: applied at the last stop of a path ending within 400 m beyond the platform",
    "attach": "$attach: the train attached onto is not on the track before the attach; it starts where its "
    "path starts with both consists, its own in front (the attaching train taken to run up behind it)",
    "detach": "$detach: done at the train's end only; the trains formed start where their own paths start, "
    "a /static portion is not placed on the track",
    "pickup": "$pickup: done at the train's end only; the cars picked up go behind the train's own",
    "transfer": "$transfer: done at the train's end only, with a train that has not started yet; units given "
    "go behind the other train's own",
}


def _used_commands(tt: Timetable) -> set[str]:
    names = {c.name for st in tt.stations for c in st.commands}
    for t in tt.trains:
        for group in (t.start_commands, t.note, t.dispose, t.speed, *(x.commands for x in t.stops)):
            names |= {c.name for c in group}
    if "triggers" in names:
        names.add("forms")
    if "follow" in names or "waitany" in names:
        names.add("wait")
    if "forcehold" in names:
        names.add("hold")
    return names


def with_route_stations(plan: TTPlan, route_stations: set[str]) -> TTPlan:
    """``plan`` with its station names spelt as the route's platforms spell them: Open
    Rails matches a timetable's station rows to platform names case-insensitively
    (it lower-cases both; ProcessTimetable.cs, StopInfo)."""
    import dataclasses

    spell = {n.strip().lower(): n for n in sorted(route_stations)}

    def st(n: str | None) -> str | None:
        return None if n is None else spell.get(n.strip().lower(), n)

    runs = tuple(
        dataclasses.replace(
            r,
            stops=tuple(dataclasses.replace(x, station=st(x.station) or x.station) for x in r.stops),
            links=tuple(dataclasses.replace(lk, station=st(lk.station)) for lk in r.links),
            activates=tuple((w if w in (None, "END") else st(w), n) for w, n in r.activates),
        )
        for r in plan.runs
    )
    return dataclasses.replace(plan, runs=runs)


def file_name(name: str, suffix: str, who: str) -> str:
    """:func:`~tdbtools.formats.timetable.relative_file_name`, refusing a name that
    would lead outside its folder."""
    rel = relative_file_name(name, suffix)
    if rel is None:
        raise TimetableReplayError(f"{who} {name!r} must name a file inside its folder")
    return rel


def _replace(r: TTRun, **kw: object) -> TTRun:
    import dataclasses

    return dataclasses.replace(r, **kw)  # type: ignore[arg-type]


def _last_stop(t) -> str | None:  # noqa: ANN001
    """The station of a train's latest booked time: where it ends."""
    best: tuple[int, str] | None = None
    for s in t.stops:
        for stamp in (s.arrival, s.depart):
            if stamp is not None and stamp.seconds is not None and (best is None or stamp.seconds >= best[0]):
                best = (stamp.seconds, s.station)
    return None if best is None else best[1]


def _join_op(train: str, c: Command) -> JoinOp:
    if c.name == "detach":
        other = (c.qualifier("forms") or (None,))[0]
        if other is None and not c.has("static"):
            raise TimetableReplayError(f"train {train!r}: $detach needs /forms=train or /static")
        return JoinOp("detach", train, c, other, static=other is None)
    if not c.value:
        raise TimetableReplayError(f"train {train!r}: ${c.name} needs a train (${c.name}=train)")
    return JoinOp(c.name, train, c, c.value)


def _join_links(runs: list[TTRun]) -> list[TTRun]:
    """The waits joins make (docs §5.6): a train attached onto, or given units by
    $transfer, starts only once the other has ended; a train to be picked up that does not
    end standing where it is (static, or $static at its end) stands at the start of its
    path until the pickup, as the manual's "train on the location"."""
    by_name = {r.name: r for r in runs}
    after: dict[str, list[str]] = {}
    picked: dict[str, str] = {}
    for r in runs:
        for j in r.joins:
            if j.other is None:
                continue
            if j.other not in by_name:
                raise TimetableReplayError(
                    f"train {r.name!r}: ${j.kind} names no train of the timetable: {j.other!r}"
                )
            if j.other == r.name:
                raise TimetableReplayError(f"train {r.name!r}: ${j.kind} names the train itself")
            if j.kind in ("attach", "transfer"):
                after.setdefault(j.other, []).append(r.name)
            elif j.kind == "pickup":
                b = by_name[j.other]
                if not (b.static or b.stays):
                    picked[j.other] = r.name
    return [
        _replace(r, after=tuple(after.get(r.name, ())), picked_by=picked.get(r.name))
        if r.name in after or r.name in picked
        else r
        for r in runs
    ]


def _waitany(c: Command, station: str | None, train: str) -> TTLink:
    """$waitany=PATH [/both] [/opposite]: wait while any train is on that path's track."""
    path = file_name(c.value or "", ".pat", f"train {train!r}: $waitany")
    return TTLink("waitany", path, station, None, both=c.has("both"), opposite=c.has("opposite"))


def _link(c: Command, station: str | None) -> TTLink:
    return TTLink(
        c.name,
        c.value or "",
        station,
        _minutes(c, "maxdelay"),
        _minutes(c, "hold") or 0.0,
        _minutes(c, "owndelay"),
        c.has("notstarted"),
    )


# -- composite consists ---------------------------------------------------------------------


def _q(s: str) -> str:
    if '"' in s or "\n" in s or "\r" in s:
        raise TimetableReplayError(f"consist entry {s!r} cannot be written")
    return f'"{s}"'


def assemble_consist(parts: list[tuple[Consist, bool]], name: str) -> str:
    """The text of a ``.con`` holding ``parts`` in order, a reversed part back to front
    with every car turned (docs/timetables.md §5.2)."""
    cars = []
    for con, rev in parts:
        seq = list(reversed(con.cars)) if rev else list(con.cars)
        for c in seq:
            cars.append((c, c.flipped != rev))
    vmax = [c.max_velocity for c, _ in parts if c.max_velocity]
    lines = [
        "SIMISA@@@@@@@@@@JINX0D0t______",
        "",
        "Train (",
        f"\tTrainCfg ( {_q(name)}",
        f"\t\tName ( {_q(name)} )",
    ]
    lines.append("\t\tSerial ( 1 )")
    if vmax:
        lines.append(f"\t\tMaxVelocity ( {min(vmax):.5f} 0.00100 )")
    lines.append(f"\t\tNextWagonUID ( {len(cars)} )")
    for uid, (c, flip) in enumerate(cars):
        kind, data = ("Engine", "EngineData") if c.kind == "engine" else ("Wagon", "WagonData")
        lines.append(
            f"\t\t{kind} ( UiD ( {uid} ) {'Flip ( ) ' if flip else ''}{data} ( {_q(c.file)} {_q(c.folder)} ) )"
        )
    lines += ["\t)", ")", ""]
    return "\r\n".join(lines)


def consist_files(plan: TTPlan, route_install: Path, route_folder: Path, tmp: Path) -> dict[str, str]:
    """Run name -> the consist file each run uses: composite or reversed consists are
    assembled into ``tmp`` (which must outlive the replay's set-up)."""
    out: dict[str, str] = {}
    made: dict[str, str] = {}
    folders = (route_install / "TRAINS" / "CONSISTS", route_folder / "CONSISTS", route_install)
    tt = plan.timetable
    for r in plan.runs:
        if r.consist:
            out[r.name] = r.consist
            continue
        if r.consist_text in made:
            out[r.name] = made[r.consist_text]
            continue
        src = tt.train(r.source or r.name)
        if src is None:  # a stable move of a composite train
            continue
        parts = []
        for cp in src.consist:
            f = resolve_file(
                Path(file_name(cp.name, ".con", f"train {r.name!r}: consist")), *folders, suffix=".con"
            )
            if f is None:
                raise TimetableReplayError(
                    f"train {r.name!r}: consist {cp.name!r} not found in TRAINS/CONSISTS"
                )
            parts.append((read_consist(f), cp.reverse))
        target = tmp / f"tt_consist_{len(made)}.con"
        target.write_text(assemble_consist(parts, r.consist_text), encoding="utf-8")
        made[r.consist_text] = str(target.with_suffix(""))
        out[r.name] = made[r.consist_text]
    for r in plan.runs:
        if r.name not in out:
            out[r.name] = made.get(r.consist_text, r.consist)
    return out


def stamp_seconds(s: Stamp | None) -> int | None:
    return None if s is None else s.seconds


__all__ = [
    "MODELLED",
    "TTLink",
    "TTPlan",
    "TTRun",
    "TTStop",
    "TimetableReplayError",
    "with_route_stations",
    "file_name",
    "assemble_consist",
    "consist_files",
    "plan_timetable",
    "route_of",
]
