"""The signals' inputs in the route cache (docs/signals.md §3, docs/security.md §1):
reused while unchanged, re-read when a world file, folder or sigcfg changes, and a
damaged or planted entry is ignored and rebuilt, never trusted."""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path

import pytest
from helpers import DK24_ROUTE, SAMPLE_INSTALL, needs_dk24

from tdbtools.formats import cache, world
from tdbtools.formats.route import load_route
from tdbtools.signals.objects import load_signals

WORLD = """SIMISA@@@@@@@@@@JINX0w0t______

Tr_Worldfile (
    Static ( UiD ( 1 ) FileName ( tree.s ) Position ( 0 0 0 ) QDirection ( 0 0 0 1 ) )
    Signal (
        UiD ( {uid} )
        FileName ( B3Sig.s )
        Position ( 270 42 100 )
        QDirection ( 0 0.7 0 0.7 )
        SignalSubObj ( 00000001 )
        SignalUnits ( 1 SignalUnit ( 0 TrItemId ( 0 0 ) ) )
    )
    Speedpost (
        UiD ( 9 )
        Speed_Digit_Tex ( t.ace )
        Speed_Sign_Shape ( 1 0 1.6 0 0 )
        TrItemId ( 0 3 )
        FileName ( post.s )
        Position ( 1 2 3 )
        QDirection ( 0 0 0 1 )
    )
)
"""
TILE = "w-005631+015118.w"


@pytest.fixture
def route(tmp_path, monkeypatch):
    """The signalled sample route with one world file, and a cache folder of its own."""
    monkeypatch.setenv("TDBTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    shutil.copytree(SAMPLE_INSTALL, tmp_path / "inst")
    dst = tmp_path / "inst" / "ROUTES" / "SIGNALS"
    (dst / "WORLD").mkdir()
    (dst / "WORLD" / TILE).write_text(WORLD.replace("{uid}", "7"))
    world._MEMO.clear()
    yield load_route(dst, cache=False)
    world._MEMO.clear()


def _uids(s) -> list:
    return [x["world"]["uid"] for x in s.summary()["signals"] if x["world"]]


def _entries(tmp_path) -> list:
    return sorted((tmp_path / "cache").glob("*-signals-*.route"))


def _no_reading(monkeypatch) -> None:
    def refuse(*a, **k):
        raise AssertionError("read a file the cache holds")

    monkeypatch.setattr(world, "read_world", refuse)
    monkeypatch.setattr(world, "read_sigcfg", refuse)


def test_cached_inputs_give_the_same_signals(route, tmp_path, monkeypatch):
    cold = load_signals(route, cache=False)
    assert _uids(cold) == [7] and not _entries(tmp_path), "cache=False writes nothing"
    first = load_signals(route)
    assert len(_entries(tmp_path)) == 1
    _no_reading(monkeypatch)
    memo = load_signals(route)
    world._MEMO.clear()
    disk = load_signals(route)  # from the entry
    for s in (first, memo, disk):
        assert s.summary() == cold.summary()
    w = world.load_signal_world(route.folder)
    assert [o.kind for o in w.world[0].objects] == ["Signal", "Speedpost"]  # no Static kept
    assert w.config is not None and w.config.types.keys() == cold.config.types.keys()


@pytest.mark.parametrize("memo", [True, False])
def test_changed_files_are_read_again(route, tmp_path, memo):
    folder = route.folder
    assert _uids(load_signals(route)) == [7]

    def again():
        if not memo:
            world._MEMO.clear()
        return load_signals(route)

    (folder_w := Path(route.folder) / "WORLD" / TILE).write_text(WORLD.replace("{uid}", "8"))
    assert _uids(again()) == [8]
    # A new world file: its folder changes.
    other = folder_w.with_name("w-005630+015118.w")
    other.write_text(WORLD.replace("{uid}", "11").replace("TrItemId ( 0 0 )", "TrItemId ( 0 1 )"))
    assert sorted(_uids(again())) == [8, 11]
    # The sigcfg: a new type shows in the set.
    cfg = Path(route.folder) / "sigcfg.dat"
    text = cfg.read_text(encoding="utf-16")
    n_types = len(again().config.types)
    text = text.replace("SignalTypes ( 1", "SignalTypes ( 2")
    cfg.write_text(
        text.replace('SignalType ( "B3"', 'SignalType ( "X9" SignalFnType ( INFO ) ) SignalType ( "B3"'),
        encoding="utf-16",
    )
    assert len(again().config.types) == n_types + 1
    # The scripts (compiled each time, kept in memory while unchanged).
    scr = Path(route.folder) / "sigscr.dat"
    text = scr.read_text(encoding="utf-16")
    assert again().summary()["scripts"]["parsed"] == 1
    scr.write_text(text + "\nSCRIPT X9\n\tstate = SIGASP_STOP;\n", encoding="utf-16")
    assert again().summary()["scripts"]["parsed"] == 2
    # An OpenRails sigcfg, which Open Rails prefers, appearing.
    (Path(route.folder) / "OpenRails").mkdir()
    shutil.copy(cfg, Path(route.folder) / "OpenRails" / "sigcfg.dat")
    assert again().config.mode == "ORTS"
    assert folder == route.folder


def _entry_path(route) -> os.PathLike:
    store = cache.RecordCache("signals")
    return store._entry(world._CacheKey(world.Path(route.folder)), False)


def test_planted_entry_cannot_run_code(route, tmp_path):
    good = load_signals(route).summary()
    entry = _entry_path(route)
    marker = tmp_path / "pwned"

    class Planted:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))

    real = entry.read_bytes()
    flipped = bytearray(real)
    flipped[-20] ^= 0xFF  # in the arrays: the CRC no longer matches
    for data in (
        pickle.dumps(Planted()),
        cache._MAGIC + b"\0" * 12 + pickle.dumps(Planted()),
        real[: len(real) // 2],
        bytes(flipped),
    ):
        entry.write_bytes(data)
        entry.chmod(0o600)
        world._MEMO.clear()
        assert load_signals(route).summary() == good
        assert not marker.exists()
        assert entry.read_bytes().startswith(cache._MAGIC) and b"pwned" not in entry.read_bytes(), "rebuilt"


def test_well_formed_entry_with_wrong_values_is_not_trusted(route, monkeypatch):
    """An entry in the right format, of the right files, but whose records hold values of
    the wrong types (refused as it is read) or of other files, is ignored and rebuilt."""
    import dataclasses

    good = world.load_signal_world(route.folder)
    key = world._CacheKey(world.Path(route.folder))
    store = cache.RecordCache("signals")
    wf = good.world[0]
    sig = wf.objects[0]
    bad_unit = dataclasses.replace(sig, units=("not a unit",))
    bad_uid = dataclasses.replace(sig, uid="7; rm -rf ~")
    bad_tile = world.WorldFile(wf.path, "x", wf.tile_z, wf.objects)
    for bad in (
        dataclasses.replace(good, world=(world.WorldFile(wf.path, wf.tile_x, wf.tile_z, (bad_unit,)),)),
        dataclasses.replace(good, world=(world.WorldFile(wf.path, wf.tile_x, wf.tile_z, (bad_uid,)),)),
        dataclasses.replace(good, world=(bad_tile,)),
        dataclasses.replace(good, config=dataclasses.replace(good.config, types={"b3": 5})),
        dataclasses.replace(good, sources=(*good.sources[:-1], "/etc/passwd")),
        dataclasses.replace(good, folder="/elsewhere"),
    ):
        wrong_types = not cache.conforms(bad)
        assert wrong_types or bad.sources != good.sources or bad.folder != good.folder
        store.put(key, False, bad)
        # values of the wrong types are refused as the entry is read (docs/security.md §1);
        # a well-typed entry of other files decodes and is refused by the loader
        assert (store.get(key, False) is None) == wrong_types
        world._MEMO.clear()
        got = world.load_signal_world(route.folder)
        assert got.world[0].objects == good.world[0].objects and got.folder == good.folder
        assert cache.conforms(got)
    assert cache.conforms(good)


def test_oversized_entry_is_neither_kept_nor_read(route, tmp_path, monkeypatch):
    load_signals(route)
    assert _entries(tmp_path)
    monkeypatch.setattr(cache, "MAX_RECORD_BYTES", 100)
    assert cache.RecordCache("signals").get(world._CacheKey(world.Path(route.folder)), False) is None
    for p in _entries(tmp_path):
        p.unlink()
    world._MEMO.clear()
    load_signals(route)
    assert not _entries(tmp_path), "an entry over the bound is removed again"


def test_strict_and_lenient_entries_are_apart(route, tmp_path):
    load_signals(route)
    load_signals(route, strict=True)
    assert len(_entries(tmp_path)) == 2


@pytest.mark.dk24
@needs_dk24
def test_dk24_signal_objects_only_read_equals_full_read():
    kinds = (world.SignalObj, world.SpeedpostObj)
    n = 0
    for p in world.world_files(DK24_ROUTE):
        part = world.read_world(p, kinds=world.SIGNAL_KINDS)
        assert part.objects == tuple(o for o in world.read_world(p).objects if isinstance(o, kinds))
        n += len(part.objects)
    assert n == 156
