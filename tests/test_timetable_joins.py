"""Joining and splitting timetable trains (docs/timetables.md §5.6): the manual's
portions ($detach /power, /units=n, /consist=…), the units each train starts with after
$detach, $attach, $pickup and $transfer, and a replay on the sample route in which the
trains really run with the cars they have afterwards."""

from __future__ import annotations

import pytest
from helpers import sample_timetable

from tdbtools.formats.consist import CarEntry
from tdbtools.formats.route import load_route
from tdbtools.formats.timetable import Command, make_timetable, write_timetable
from tdbtools.physics.timetable import replay_timetable
from tdbtools.physics.timetable_plan import TimetableReplayError, plan_timetable
from tdbtools.physics.timetable_units import JoinOp, Unit, UnitsError, cut_portion, resolve_units
from tdbtools.track.audit import audit_route


def _car(kind: str, name: str) -> Unit:
    return Unit(CarEntry(kind, 0, False, name, "F"), False, name.split("-")[0])


E, W = "engine", "wagon"
# loco set "lok" (2 engines), coaches "cx" (3), a rear engine "rl"
TRAIN = [
    _car(E, "lok-1"),
    _car(E, "lok-2"),
    _car(W, "cx-1"),
    _car(W, "cx-2"),
    _car(W, "cx-3"),
    _car(E, "rl-1"),
]


def _names(cars: list[Unit]) -> list[str]:
    return [u.car.file for u in cars]


def _cmd(*quals: tuple[str, tuple[str, ...]]) -> Command:
    return Command("detach", (), tuple(quals))


@pytest.mark.parametrize(
    ("quals", "kept", "cut"),
    [
        ((("power", ()),), ["lok-2", "cx-1", "cx-2", "cx-3", "rl-1"], ["lok-1"]),
        ((("leadingpower", ()),), ["lok-2", "cx-1", "cx-2", "cx-3", "rl-1"], ["lok-1"]),
        ((("allleadingpower", ()),), ["cx-1", "cx-2", "cx-3", "rl-1"], ["lok-1", "lok-2"]),
        ((("trailingpower", ()),), ["lok-1", "lok-2", "cx-1", "cx-2", "cx-3"], ["rl-1"]),
        ((("alltrailingpower", ()),), ["lok-1", "lok-2", "cx-1", "cx-2", "cx-3"], ["rl-1"]),
        ((("units", ("2",)),), ["cx-1", "cx-2", "cx-3", "rl-1"], ["lok-1", "lok-2"]),
        ((("units", ("-2",)),), ["lok-1", "lok-2", "cx-1", "cx-2"], ["cx-3", "rl-1"]),
        # more units than the train has: one stays (manual, /units)
        ((("units", ("-9",)),), ["lok-1"], ["lok-2", "cx-1", "cx-2", "cx-3", "rl-1"]),
        ((("consist", ("lok",)),), ["cx-1", "cx-2", "cx-3", "rl-1"], ["lok-1", "lok-2"]),
        ((("consist", ("rl", "cx")),), ["lok-1", "lok-2"], ["cx-1", "cx-2", "cx-3", "rl-1"]),
        # a consist at neither end: nothing is detached
        ((("consist", ("cx",)),), _names(TRAIN), []),
        # power at both ends: /nonpower detaches nothing
        ((("nonpower", ()),), _names(TRAIN), []),
    ],
)
def test_cut_portion(quals, kept, cut):
    keep, part = cut_portion(list(TRAIN), _cmd(*quals))
    assert (_names(keep), _names(part)) == (kept, cut)


def test_cut_portion_nonpower_and_errors():
    front_power = TRAIN[:5]
    keep, part = cut_portion(front_power, _cmd(("nonpower", ())))
    assert _names(part) == ["cx-1", "cx-2", "cx-3"] and _names(keep) == ["lok-1", "lok-2"]
    rear_power = list(reversed(front_power))
    keep, part = cut_portion(rear_power, _cmd(("nonpower", ())))
    assert _names(part) == ["cx-3", "cx-2", "cx-1"]
    # no power unit at the rear: /trailingpower detaches nothing
    assert cut_portion(front_power, _cmd(("trailingpower", ())))[1] == []
    with pytest.raises(UnitsError, match="0"):
        cut_portion(TRAIN, _cmd(("units", ("0",))))
    with pytest.raises(UnitsError, match="no portion"):
        cut_portion(TRAIN, _cmd())


def _own(cons: dict[str, list[Unit]]):  # noqa: ANN202
    return lambda r: list(cons[r])


def test_resolve_units_detach_attach_pickup_transfer():
    loco = [_car(E, "lok-1"), _car(E, "lok-2")]
    coaches = [_car(E, "el-1"), _car(W, "cx-1"), _car(W, "cx-2")]
    cons = {"A": loco + coaches, "A2": [_car(W, "x")], "C": [_car(W, "y")], "B": coaches, "Z": loco}
    det = Command("detach", (), (("units", ("2",)), ("forms", ("C",))))
    ops = [JoinOp("detach", "A", det, "C"), JoinOp("attach", "Z", Command("attach", ("B",)), "B")]
    u = resolve_units(["A", "A2", "C", "B", "Z"], _own(cons), {"A2": "A"}, ops)
    # A's remainder forms A2 ($forms keeps the consist); the cut-off front starts C
    assert _names(u.start["A2"]) == ["el-1", "cx-1", "cx-2"]
    assert _names(u.start["C"]) == ["lok-1", "lok-2"]
    # Z attaches to B: B's own in front, Z's behind
    assert _names(u.start["B"]) == ["el-1", "cx-1", "cx-2", "lok-1", "lok-2"]
    assert u.notes["A"] == ["detached 2 units forming C"] and u.notes["Z"] == ["attached to B (2 units)"]
    assert "Z" not in u.start  # its own consist: nothing to write
    # $pickup: P's successor starts with P's cars and B's behind
    ops = [JoinOp("pickup", "P", Command("pickup", ("B",)), "B")]
    u = resolve_units(["P", "P2", "B"], _own({"P": loco, "B": coaches}), {"P2": "P"}, ops)
    assert _names(u.start["P2"]) == ["lok-1", "lok-2", "el-1", "cx-1", "cx-2"]
    # $transfer: /give the rear coach, /take B's front engine, /keep the engines, /leave
    for quals, a_end, b_start in [
        (
            (("give", ()), ("units", ("-1",))),
            ["lok-1", "lok-2", "el-1", "cx-1"],
            ["el-1", "cx-1", "cx-2", "cx-2"],
        ),
        (
            (("take", ()), ("units", ("1",))),
            ["lok-1", "lok-2", "el-1", "cx-1", "cx-2", "el-1"],
            ["cx-1", "cx-2"],
        ),
        (
            (("keep", ()), ("allleadingpower", ())),  # el-1 is a power unit too
            ["lok-1", "lok-2", "el-1"],
            ["el-1", "cx-1", "cx-2", "cx-1", "cx-2"],
        ),
        (
            (("leave", ()), ("units", ("1",))),
            ["lok-1", "lok-2", "el-1", "cx-1", "cx-2", "cx-1", "cx-2"],
            ["el-1"],
        ),
    ]:
        t = Command("transfer", ("B",), quals)
        u = resolve_units(
            ["A", "A2", "B"],
            _own({"A": cons["A"], "B": coaches}),
            {"A2": "A"},
            [JoinOp("transfer", "A", t, "B")],
        )
        assert (_names(u.start["A2"]), _names(u.start["B"])) == (a_end, b_start), quals
    # the active train must keep a power unit
    t = Command("transfer", ("B",), (("give", ()), ("allpower", ())))
    with pytest.raises(UnitsError, match="power unit"):
        resolve_units(
            ["A", "B"],
            _own({"A": [loco[0], coaches[1]], "B": coaches}),
            {},
            [JoinOp("transfer", "A", t, "B")],
        )
    # joins that go round in a circle
    ops = [
        JoinOp("attach", "A", Command("attach", ("B",)), "B"),
        JoinOp("attach", "B", Command("attach", ("A",)), "A"),
    ]
    with pytest.raises(UnitsError, match="circle"):
        resolve_units(["A", "B"], _own({"A": loco, "B": coaches}), {}, ops)


# -- on the sample route ------------------------------------------------------------------

#: IC 5 splits at the east end: its two front engines form LZ 1, the rest forms IC 6,
#: and both run back west to their ends. R 1 attaches to R 2, which then runs with both
#: consists. P 1 picks up WG (standing at the east end) and forms P 2. T 1 gives its
#: three rear coaches to T 2 and forms T 3 with the rest.
JOINS = [
    ["", "IC 5", "IC 6", "LZ 1", "R 1", "R 2", "P 1", "P 2", "WG", "T 1", "T 2", "T 3"],
    [
        "#path",
        "MainWE",
        "MainEW",
        "MainEW",
        "MainWE",
        "MainEW",
        "MainWE",
        "MainEW",
        "MainEW",
        "MainWE",
        "MainEW",
        "MainEW",
    ],
    [
        "#consist",
        "sample_double + sample_passenger",
        "sample_passenger",
        "sample_double",
        "sample_double",
        "sample_passenger",
        "sample_passenger",
        "sample_passenger",
        "sample_double",
        "sample_double + sample_passenger",
        "sample_passenger",
        "sample_passenger",
    ],
    [
        "#start",
        "08:00",
        "08:10",
        "08:20",
        "08:30",
        "08:40",
        "09:00",
        "09:10",
        "09:30",
        "09:40",
        "10:00",
        "09:50",
    ],
    [
        "Sampleby",
        "08:01-08:02",
        "08:13-08:14",
        "",
        "",
        "08:43-08:44",
        "09:01-09:02",
        "09:13-09:14",
        "",
        "09:41-09:42",
        "10:03-10:04",
        "",
    ],
    [
        "#dispose",
        "$detach /units=2 /forms=LZ 1 $forms=IC 6",
        "",
        "",
        "$attach=R 2",
        "",
        "$pickup=WG $forms=P 2",
        "",
        "",
        "$transfer=T 2 /give /units=-3 $forms=T 3",
        "",
        "",
    ],
]


def _joins_timetable(tmp_path, grid=JOINS):  # noqa: ANN001
    return sample_timetable(tmp_path, grid, "joins.timetable-or")


@pytest.fixture(scope="module")
def joins_run(tmp_path_factory):
    folder, path = _joins_timetable(tmp_path_factory.mktemp("joins"))
    return replay_timetable(path, route=load_route(folder, cache=False), stand_in=True)


@pytest.mark.slow
def test_joins_every_train_runs_with_the_cars_it_has(joins_run):
    s = joins_run.replay.summary
    assert not joins_run.failed, (s["not_at_end"], joins_run.defects)
    assert not s["stuck"] and s["collisions"] == 0 and s["deadlocks"] == 0
    tr = s["trains"]
    # the masses of the parts, from trains of the run that have only one of them
    double, passenger = tr["R 1"]["mass_t"], tr["P 1"]["mass_t"]
    assert (tr["R 1"]["cars"], tr["P 1"]["cars"]) == (2, 7)
    # the split keeps every car: IC 5 = IC 6 + LZ 1, to the kilogram
    assert tr["IC 5"]["mass_t"] == pytest.approx(tr["IC 6"]["mass_t"] + tr["LZ 1"]["mass_t"], abs=1e-3)
    expect = {
        # train: (cars, mass)
        "IC 5": (9, double + passenger),
        "IC 6": (7, passenger),  # the rest of IC 5 after its two front engines left
        "LZ 1": (2, double),
        "R 2": (9, passenger + double),  # its own consist with R 1 behind
        "P 2": (9, passenger + double),  # P 1 with WG picked up
    }
    for name, (cars, mass) in expect.items():
        assert tr[name]["cars"] == cars, name
        assert tr[name]["mass_t"] == pytest.approx(mass, abs=1e-3), name
    # $transfer: T 1 gave 3 coaches to T 2 and formed T 3 with the other 6 units
    moved = tr["T 2"]["mass_t"] - passenger
    assert (tr["T 2"]["cars"], tr["T 3"]["cars"]) == (10, 6)
    assert moved > 0 and tr["T 3"]["mass_t"] == pytest.approx(double + passenger - moved, abs=1e-3)
    # the order of the cars: R 2 leads with its own engine, LZ 1 with IC 5's front one
    assert tr["R 2"]["lead_car"] == tr["P 1"]["lead_car"] and tr["LZ 1"]["lead_car"] == tr["R 1"]["lead_car"]
    # every train that runs reaches the end of its path
    for name in ("IC 5", "IC 6", "LZ 1", "R 1", "R 2", "P 1", "P 2", "T 1", "T 2", "T 3"):
        assert tr[name]["reached_end"] and tr[name]["distance_m"] > 1000.0, name


@pytest.mark.slow
def test_joins_outcomes_events_and_times(joins_run, tmp_path):
    import json

    out = joins_run.replay.summary["timetable"]["outcomes"]
    assert out["IC 5"] == "detached 2 units forming LZ 1; forms IC 6"
    assert out["R 1"] == "attached to R 2 (2 units)"
    assert out["P 1"] == "picked up WG (2 units); forms P 2" and out["WG"] == "picked up by P 1"
    assert out["T 1"] == "transferred 3 units with T 2; forms T 3"
    assert out["IC 6"] == out["LZ 1"] == out["R 2"] == out["T 2"] == "removed"
    joins = {(e.train, e.new_train, e.how) for e in joins_run.replay.events if e.kind == "formed"}
    assert {
        ("IC 5", "LZ 1", "detach"),
        ("IC 5", "IC 6", "forms"),
        ("R 1", "R 2", "attach"),
        ("WG", "P 1", "pickup"),
        ("T 1", "T 2", "transfer"),
    } <= joins
    on = joins_run.activity.on_track
    # R 1 stands at the east end until R 2 starts with both consists, then leaves
    assert on["R 1"][1] == pytest.approx(on["R 2"][0], abs=2.0)
    # WG never ran: it was part of P 1 from P 1's end; T 2 waited for T 1's transfer
    assert "WG" not in on or on["WG"][0] >= on["P 1"][0]
    assert on["T 2"][0] >= on["T 1"][0]
    # the booked times, as for the sample timetable: never leaving early, arriving at most
    # 90 s late (or up to 150 s early: the times were booked with MainEW.pat's 60-s waiting
    # point, which a timetable's train runs past as in Open Rails), leaving at most 30 s late
    rows = joins_run.timetable
    assert {r["train"] for r in rows} == {"IC 5", "IC 6", "R 2", "P 1", "P 2", "T 1", "T 2"}
    for r in rows:
        assert r["actual_dep"] >= r["sched_dep"] - 1e-6, r
        assert -150 <= r["actual_arr"] - r["sched_arr"] <= 90, r
        assert r["actual_dep"] <= r["sched_dep"] + 30, r
    joins_run.write(tmp_path)
    assert json.loads((tmp_path / "outcomes.json").read_text(encoding="utf-8"))["WG"] == "picked up by P 1"


def test_plan_joins(tmp_path):
    folder, path = _joins_timetable(tmp_path)
    plan = plan_timetable(path)
    runs = {r.name: r for r in plan.runs}
    assert (
        runs["LZ 1"].formed_by == "IC 5" and runs["LZ 1"].detached and runs["LZ 1"].keeps_consist_of is None
    )
    assert runs["IC 6"].formed_by == "IC 5" and runs["IC 6"].keeps_consist_of == "IC 5"
    assert runs["R 2"].after == ("R 1",) and runs["R 1"].stays
    assert runs["WG"].picked_by == "P 1" and runs["T 2"].after == ("T 1",)
    assert [j.kind for j in runs["IC 5"].joins] == ["detach"]
    assert any("$attach" in s for s in plan.simplifications)
    # $detach without /forms or /static; a join at a stop on the way is not modelled
    bad = [list(r) for r in JOINS]
    bad[5][1] = "$detach /units=2"
    with pytest.raises(TimetableReplayError, match="/forms=train or /static"):
        plan_timetable(_joins_timetable(tmp_path / "b", bad)[1])
    # $attach at the stop where a train ends is done at its end; a split at a stop on
    # the way is not modelled (said)
    end = [list(r) for r in JOINS]
    end[4][4] = "08:31-08:32 $attach=R 2"
    end[5][4] = ""
    end[4][1] = "08:01-08:02 $detach /units=1 /static"
    end[5][1] = "$forms=IC 6"
    p = plan_timetable(_joins_timetable(tmp_path / "c", end)[1])
    runs = {r.name: r for r in p.runs}
    assert [j.kind for j in runs["R 1"].joins] == ["attach"] and runs["R 2"].after == ("R 1",)
    assert runs["IC 5"].joins == () and runs["LZ 1"].formed_by is None
    assert any("IC 5 at Sampleby: $detach on the way is not modelled" in x for x in p.simplifications)


def test_audit_join_targets(tmp_path):
    folder, path = _joins_timetable(tmp_path)
    grid = [list(r) for r in JOINS]
    grid[5][4] = "$attach=Nobody"
    grid[5][1] = "$detach /units=2 /forms=Ghost $forms=IC 6"
    write_timetable(make_timetable(grid), path)
    rep = audit_route(load_route(folder, cache=False), paths=False)
    missing = sorted(f.message for f in rep.findings if f.code == "TT_TRAIN_MISSING")
    assert (
        len(missing) == 2 and "'Ghost'" in missing[0] + missing[1] and "'Nobody'" in missing[0] + missing[1]
    )


@pytest.mark.slow
def test_cli_says_the_joins_on_stderr(tmp_path):
    from click.testing import CliRunner

    from tdbtools.cli import main

    grid = [row[:6] for row in JOINS]  # IC 5 splits, R 1 attaches to R 2
    _folder, path = _joins_timetable(tmp_path, grid)
    out = tmp_path / "o"
    r = CliRunner().invoke(main, ["replay", str(path), "--stand-in", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "08:20:00 detach: IC 5 -> LZ 1: detached 2 units forming LZ 1; forms IC 6" in r.stderr
    assert "08:40:00 attach: R 1 -> R 2: attached to R 2 (2 units)" in r.stderr
    assert "simplified: $attach:" in r.stderr
    assert "R 1: start 08:30:00" in r.stdout and "attached to R 2 (2 units)" in r.stdout
