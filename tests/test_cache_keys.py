"""One load that is both strict-aware and cached (issue 32, docs/security.md §1): a route is
parsed once and kept with its findings, strict refuses from them, and the cache key survives
hard links and permission changes but not content changes."""

from __future__ import annotations

import os
import shutil

import pytest
from helpers import SAMPLE_INSTALL

from tdbtools.errors import SourceError
from tdbtools.formats import route as route_mod
from tdbtools.formats.route import load_route, refused_by_strict


@pytest.fixture
def inst(tmp_path, monkeypatch):
    monkeypatch.setenv("TDBTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    dst = tmp_path / "inst"
    shutil.copytree(SAMPLE_INSTALL, dst)
    return dst


def _defective(inst):
    trk = inst / "ROUTES" / "SAMPLE" / "SAMPLE.trk"
    raw = trk.read_bytes()
    tail = ")\r\n".encode("utf-16-le") if raw[:2] == b"\xff\xfe" else b")\n"
    trk.write_bytes(raw + tail)  # a stray ')': Open Rails ignores it, strict refuses
    return inst / "ROUTES" / "SAMPLE"


def _no_parsing(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("parsed a route the cache holds")

    monkeypatch.setattr(route_mod, "_load_files", refuse)


def test_a_defective_route_loads_warm_and_strict_still_refuses(inst, monkeypatch):
    folder = _defective(inst)
    cold = load_route(folder, strict=False)
    assert refused_by_strict(cold.warnings)
    with pytest.raises(SourceError) as e:
        load_route(folder, strict=True)
    assert e.value.location is not None and e.value.location.path.endswith("SAMPLE.trk")
    _no_parsing(monkeypatch)
    warm = load_route(folder, strict=False)
    assert [f.message for f in warm.warnings] == [f.message for f in cold.warnings]
    assert len(warm.tdb.nodes) == len(cold.tdb.nodes)


def test_a_clean_route_strict_and_lenient_share_one_entry(inst, monkeypatch):
    folder = inst / "ROUTES" / "SAMPLE"
    load_route(folder, strict=True)
    _no_parsing(monkeypatch)
    assert load_route(folder, strict=False) is not None
    assert load_route(folder, strict=True) is not None


def test_hard_linked_copy_and_chmod_stay_warm(inst, tmp_path, monkeypatch):
    load_route(inst / "ROUTES" / "SAMPLE")
    # A hard-linked copy of the install (cp -al): same content, same mtimes, new ctimes.
    copy = tmp_path / "linked"
    for src in inst.rglob("*"):
        dst = copy / src.relative_to(inst)
        if src.is_dir():
            dst.mkdir(parents=True, exist_ok=True)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.link(src, dst)
    for src in sorted(inst.rglob("*"), key=lambda p: -len(p.parts)):
        st = src.stat()
        os.utime(copy / src.relative_to(inst), ns=(st.st_atime_ns, st.st_mtime_ns))
    for p in (inst / "ROUTES" / "SAMPLE").iterdir():
        if p.is_file():
            p.chmod(0o600)
    load_route(copy / "ROUTES" / "SAMPLE")  # its own entry (another folder), made once
    _no_parsing(monkeypatch)
    load_route(inst / "ROUTES" / "SAMPLE")  # chmod: warm
    load_route(copy / "ROUTES" / "SAMPLE")


def test_a_content_change_with_the_same_size_and_mtime_is_seen(inst):
    folder = inst / "ROUTES" / "SAMPLE"
    first = load_route(folder)
    trk = folder / "SAMPLE.trk"
    st = trk.stat()
    raw = bytearray(trk.read_bytes())
    k = raw.index("SAMPLE".encode("utf-16-le") if raw[:2] == b"\xff\xfe" else b"SAMPLE")
    raw[k] = ord("X")  # same size
    trk.write_bytes(bytes(raw))
    os.utime(trk, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime
    again = load_route(folder)
    assert again.trk is not first.trk and repr(again.trk) != repr(first.trk)
