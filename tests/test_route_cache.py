"""The route cache's mapped, lazily made entries (formats/cache.py, format 3): a warm
load equals the cold model, records are made on first use, and a damaged entry (bad
references, codes, offsets, a cut file) is refused and the route read again."""

from __future__ import annotations

import json
import pickle
import shutil
import zlib

import numpy as np
import pytest
from helpers import DK24_ROUTE, SAMPLE_INSTALL, needs_dk24

from tdbtools.formats import cache, cache_decode, cache_encode, cache_lazy, find_route_files, load_route


@pytest.fixture
def sample(tmp_path, monkeypatch):
    monkeypatch.setenv("TDBTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    # Every table lazy, however small, so that the sample route exercises the lazy paths.
    monkeypatch.setattr(cache_decode, "LAZY_ROWS", 1)
    dst = tmp_path / "inst"
    shutil.copytree(SAMPLE_INSTALL, dst)
    return dst / "ROUTES" / "SAMPLE"


def _warm(folder):
    return cache.RouteCache().get(find_route_files(folder), False)  # one (lenient) entry per route


def test_warm_load_equals_cold_and_makes_records_on_use(sample):
    cold = load_route(sample)  # also writes the entry
    warm = _warm(sample)
    assert warm is not None and warm is not cold
    nodes = warm.tdb.nodes
    assert nodes.__class__ is cache_lazy._LazyTuple and nodes._t is None
    assert len(nodes) == len(cold.tdb.nodes) and nodes._t is None  # the length costs nothing
    one = nodes[1]  # makes the tuple
    assert one == cold.tdb.nodes[1] and nodes[1] is one
    assert warm == cold
    assert warm.tdb.nodes == cold.tdb.nodes and cold.tdb.nodes == warm.tdb.nodes
    assert warm.tdb.items == cold.tdb.items
    assert nodes[1:3] == cold.tdb.nodes[1:3] and nodes[-1] == cold.tdb.nodes[-1]
    assert list(nodes) == list(cold.tdb.nodes) and hash(nodes) == hash(cold.tdb.nodes)
    assert cold.tdb.nodes[2] in nodes and nodes.index(cold.tdb.nodes[2]) == 2
    assert nodes + () == cold.tdb.nodes and () + nodes == cold.tdb.nodes
    again = pickle.loads(pickle.dumps(warm.tdb.nodes))
    assert again.__class__ is tuple and again == cold.tdb.nodes
    # Numpy columns keep their flags; object columns (flag3) come back as str objects.
    s, c = warm.tdb.sections, cold.tdb.sections
    for name in ("flag3", "x", "node"):
        a, b = getattr(s, name), getattr(c, name)
        assert a.dtype == b.dtype and a.flags.writeable == b.flags.writeable and np.array_equal(a, b)
    assert all(v.__class__ is str for v in s.flag3.tolist())


def _encoded(route):
    records, table, arrays = cache_encode._encode(route)
    return records, table, b"".join(bytes(p) for p in cache_encode._blob_parts(table, arrays))


def _decoder(route):
    records, table, blob = _encoded(route)
    dec = cache_decode._Decoder(cache_decode._arrays(table, memoryview(blob)), lazy=True)
    return dec, dec.build(json.loads(records))


def test_records_made_one_by_one_are_the_ones_the_table_holds(sample):
    cold = load_route(sample, cache=False)
    dec, warm = _decoder(cold)
    pins = dec.tables["TrPin"]
    assert pins.__class__ is cache_lazy._LazyRows and pins.made is None
    one = pins[3]
    assert pins.made is None and pins[3] is one  # made alone, once
    nodes = dec.tables["VectorNode"]
    node = nodes[0]
    assert nodes.made is None and all(p.__class__ is one.__class__ for p in node.pins)
    assert pins.rows()[3] is one  # the whole table keeps the records made before
    assert nodes.rows()[0] is node and node.pins == nodes.rows()[0].pins
    assert warm == cold


def test_an_entry_of_a_warm_route_round_trips(sample):
    """A warm route (with its lazy tuples) can be written again and reads back equal."""
    cold = load_route(sample)
    warm = _warm(sample)
    assert _encoded(warm) == _encoded(cold)


def _rewrite(entry, edit):
    """Rewrite the entry's records JSON with ``edit(doc)`` and a valid CRC."""
    data = entry.read_bytes()
    pos = len(cache._MAGIC)
    n = int.from_bytes(data[pos : pos + 8], "little")
    header = json.loads(data[pos + 12 : pos + 12 + n])
    head_end = pos + 12 + n
    rec_len = header["records"]
    doc = json.loads(data[head_end : head_end + rec_len])
    blob = data[head_end + rec_len + (-(head_end + rec_len) % 8) :]
    edit(doc)
    rec = json.dumps(doc).encode()
    h = dict(header, records=len(rec))
    hb = json.dumps(h).encode()
    pad = b"\0" * (-(pos + 12 + len(hb) + len(rec)) % 8)
    rest = rec + pad + blob
    crc = zlib.crc32(rest)
    entry.write_bytes(cache._MAGIC + len(hb).to_bytes(8, "little") + crc.to_bytes(4, "little") + hb + rest)


def _class(doc, tag):
    return next(c for c in doc["classes"] if c[0] == tag)


def _bad_ref(doc):
    # A VectorNode's pins pointing past the TrPin table: the TrPin table cut short.
    pins = _class(doc, "TrPin")
    pins[1] = 1
    pins[2] = [["j", [0]], ["j", [0]]]


def _bad_sequence(doc):
    tdb = _class(doc, "TrackDB")[2]
    for col in tdb:
        if col[0] == "j":
            for v in col[1]:
                if isinstance(v, dict) and "M" in v:
                    v["M"][3][1] = 10**6  # a node index past its table
                    return


def _bad_codes(doc):
    for col in _class(doc, "VectorSections")[2]:
        for v in col[1]:
            if isinstance(v, dict) and "k" in v:
                v["k"][3] = "00"  # fewer strings than the codes need
                return
            if isinstance(v, dict) and "o" in v:
                v["o"][3] = "|"  # the wrong number of strings
                return


def _bad_strings(doc):
    for col in _class(doc, "JunctionNode")[2]:
        if col[0] == "T":
            col[2] = col[2] + col[1] + "extra"
            return


def _bad_offsets(doc):
    cols = _class(doc, "VectorNode")[2]
    spec = next(c for c in cols if c[0] == "I")
    spec[2] = spec[1]  # the flat values as offsets


@pytest.mark.parametrize(
    "edit", [_bad_ref, _bad_sequence, _bad_codes, _bad_strings, _bad_offsets], ids=lambda f: f.__name__
)
def test_damaged_lazy_entries_are_refused_and_the_route_read_again(sample, edit):
    good = load_route(sample, cache=False)
    load_route(sample)
    entry = cache.RouteCache()._entry(find_route_files(sample), False)
    _rewrite(entry, edit)
    assert _warm(sample) is None
    assert load_route(sample) == good


def _str_pins(doc):
    # a pin's link as a string: a column of the wrong kind for an int field
    pins = _class(doc, "TrPin")
    pins[2][0] = ["S", "|", "|".join(["7"] * pins[1])]


def _float_index(doc):
    # a node's index as a float
    spec = next(c for c in _class(doc, "VectorNode")[2] if c[0] == "i")
    spec[0] = "f"


def _dirs_of_other_records(doc):
    # a signal's directions referring to rows of the (longer) pins table, in range
    spec = next(c for c in _class(doc, "SignalItem")[2] if c[0] == "R")
    assert spec[1] == "SignalDir"
    spec[1] = "TrPin"


def _uid_of_other_records(doc):
    # a junction's UiD referring to a row of the pins table (in range)
    spec = next(c for c in _class(doc, "JunctionNode")[2] if c[0] == "r")
    assert spec[1] == "UiD"
    spec[1] = "TrPin"


def _int_geometry(doc):
    # the sections' x column replaced by their (integer) section ids: same length, wrong kind
    cols = _class(doc, "VectorSections")[2]
    cols[10] = cols[0]


def _short_lengths(doc):
    # the route's section lengths: the array of another column of another length
    route = _class(doc, "Route")
    names = ("folder", "install_root", "trk", "tdb", "rdb", "tsection", "section_length")
    spec = route[2][names.index("section_length")]
    other = next(c for c in _class(doc, "SectionTable")[2] if c[0] == "j")
    assert spec[0] == "j"
    spec[1] = [other[1][0]] * len(spec[1])


def _str_in_plain_column(doc):
    # a generic (JSON) column of plain values (an item's optional record, a flag) holding a string
    for cls in doc["classes"]:
        for col in cls[2]:
            if col[0] == "j" and col[1] and all(v is None or isinstance(v, bool) for v in col[1]):
                col[1][0] = "1e3"
                return
    raise AssertionError("no plain column")


def _items_as_nodes(doc):
    # the track nodes' record sequence naming the item tables (rows in range)
    tdb = _class(doc, "TrackDB")[2]  # (path, serial, nodes, sections, items); a row per database
    nodes, items = tdb[2][1][0]["M"], tdb[4][1][0]["M"]
    nodes[1] = list(items[1][: len(nodes[1])]) + items[1][:1] * (len(nodes[1]) - len(items[1]))
    nodes[2] = [0 if c >= 0 else -1 for c in nodes[2]]
    nodes[3] = [0 if c >= 0 else 0 for c in nodes[3]]


@pytest.mark.parametrize(
    "edit",
    [
        _str_pins,
        _float_index,
        _dirs_of_other_records,
        _uid_of_other_records,
        _int_geometry,
        _short_lengths,
        _str_in_plain_column,
        _items_as_nodes,
    ],
    ids=lambda f: f.__name__,
)
def test_an_entry_of_the_wrong_types_or_shapes_is_a_miss(sample, edit, tmp_path):
    """A well-formed entry with a correct CRC whose values are of the wrong types or
    shapes is not used: the route is read again, and info and export work on it."""
    from click.testing import CliRunner

    from tdbtools.cli import main

    good = load_route(sample, cache=False)
    load_route(sample)
    entry = cache.RouteCache()._entry(find_route_files(sample), False)
    _rewrite(entry, edit)
    assert load_route(sample) == good
    _rewrite(entry, edit)
    for args in (
        ["info", str(sample)],
        ["export", str(sample), "--format", "json", "--out", str(tmp_path / "o.json")],
    ):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, (args, r.output)
    assert (tmp_path / "o.json").stat().st_size > 0


def test_a_column_of_few_strings_is_stored_once_and_checked():
    a = np.array(["00", "01"] * 600, dtype=object)
    a.flags.writeable = False
    enc = cache_encode._Encoder()
    spec = enc.array(a)
    assert "k" in spec and len(enc.arrays) == 1 and enc.arrays[0].dtype == np.int32
    back = cache_decode._Decoder(enc.arrays).revive(spec)
    assert back.dtype == object and not back.flags.writeable and back.tolist() == a.tolist()
    bad_codes = enc.arrays[0].copy()
    bad_codes[5] = 2  # a code past the strings
    for arrays, joined in (
        ([bad_codes], "00|01"),
        (enc.arrays, "00"),
        ([bad_codes.astype(np.int64)], "00|01"),
    ):
        k = dict(spec)["k"][:3] + [joined, 0]
        with pytest.raises(ValueError):
            cache_decode._Decoder(arrays).revive({"k": k})


def test_cut_and_padded_entries_are_refused(sample):
    good = load_route(sample)
    entry = cache.RouteCache()._entry(find_route_files(sample), False)
    data = entry.read_bytes()
    for bad in (data[: len(data) // 2], data[:-1], data + b"\0" * 8, b"", data[:10]):
        entry.write_bytes(bad)
        entry.chmod(0o600)
        assert _warm(sample) is None
        assert load_route(sample) == good


def test_a_huge_table_count_is_refused_without_making_it(sample):
    load_route(sample)
    entry = cache.RouteCache()._entry(find_route_files(sample), False)

    def edit(doc):
        _class(doc, "TrPin")[1] = 10**9

    _rewrite(entry, edit)
    assert _warm(sample) is None


@needs_dk24
def test_dk24_warm_load_equals_cold(tmp_path, monkeypatch):
    monkeypatch.setenv("TDBTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    cold = load_route(DK24_ROUTE)
    warm = _warm(DK24_ROUTE)
    assert warm is not None and warm is not cold
    assert warm == cold
    assert warm.tdb.sections.flag3.tolist() == cold.tdb.sections.flag3.tolist()
