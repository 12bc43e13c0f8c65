"""The signals space-time chart and the speed–distance plot are readable (issue 30):
clock time and km, names inside the axes without overprinting, a colour (and a name)
per train for any number of trains, the permitted speed, stations and signals."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("matplotlib")


@pytest.fixture
def captured(monkeypatch):
    """The figure a chart function draws, kept open instead of saved."""
    from tdbtools.render import plots, signal_chart

    figs = []

    def keep(fig, out, **_kw):
        figs.append(fig)
        return out

    monkeypatch.setattr(signal_chart, "save_figure", keep)
    monkeypatch.setattr(plots, "save_figure", keep)
    yield figs
    import matplotlib.pyplot as plt

    for f in figs:
        plt.close(f)


def _boxes(fig, ax):
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    return [(t.get_text(), t.get_window_extent(r)) for t in ax.texts if t.get_visible() and t.get_text()]


def test_train_colours_stay_apart_from_each_other_and_the_aspects():
    from tdbtools.render.signal_chart import ASPECT_COLOURS, train_colours

    assert len(set(train_colours(12))) == 12
    assert not set(train_colours(12)) & {c.lower() for c in ASPECT_COLOURS.values()}
    many = [
        tuple(np.round(np.asarray(c if isinstance(c, tuple) else _rgb(c))[:3], 3)) for c in train_colours(40)
    ]
    assert len(set(many)) == 40


def _rgb(c: str):
    return tuple(int(c[i : i + 2], 16) / 255 for i in (1, 3, 5))


def _chart_data(n_trains=15, n_signals=40):
    t = np.arange(0.0, 1800.0, 5.0)
    trains = {}
    for k in range(n_trains):
        front = np.clip((t - 60 * k) * 12.0, 0, None) + 200.0
        front = np.where(t < 60 * k, np.nan, front)  # enters at 60 k s
        trains[f"train {k}"] = {"time": t, "front": front, "rear": front - 150.0, "direction": 1.0}
    trains["never"] = {"time": t, "front": np.full_like(t, np.nan), "rear": np.full_like(t, np.nan)}
    # a dense station (20 signals in 600 m) and a plain line
    s = np.r_[np.linspace(1000, 1600, n_signals // 2), np.linspace(3000, 20000, n_signals // 2)]
    sigs = [
        {
            "signal": i,
            "s": float(v),
            "facing": 1,
            "aspects": [(0.0, "STOP"), (300.0 + i, "CLEAR_1")],
            "on_line": True,
        }
        for i, v in enumerate(s)
    ]
    return {"reference": "train 0", "length": 21000.0, "trains": trains, "signals": sigs, "duration": 1800.0}


def test_signal_chart_is_readable(captured, tmp_path):
    from tdbtools.render.signal_chart import plot_signal_chart

    plot_signal_chart(
        _chart_data(), tmp_path / "c.png", clock0=9 * 3600 + 52 * 60, on_track={"train 1": (100.0, 900.0)}
    )
    fig = captured[0]
    ax = fig.axes[0]
    # clock time across, km up
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels and all(re.fullmatch(r"\d{1,2}:\d\d", t) for t in labels), labels
    assert "9:55" in labels or "10:00" in labels
    assert "km" in ax.get_ylabel() and ax.get_ylim()[1] < 25
    boxes = _boxes(fig, ax)
    inside = ax.get_window_extent()
    names = [t for t, _b in boxes]
    assert sum(t.startswith("S") for t in names) >= 10  # many signals named ...
    assert sum(t.startswith("S") for t in names) < 40  # ... not all: they would overprint
    for t, b in boxes:  # every name inside the axes
        assert (
            inside.x0 - 1 <= b.x0
            and b.x1 <= inside.x1 + 1
            and inside.y0 - 1 <= b.y0
            and b.y1 <= inside.y1 + 1
        ), t
    sig = [(t, b) for t, b in boxes if t.startswith("S")]
    for i, (ta, a) in enumerate(sig):
        for tb, b in sig[i + 1 :]:
            assert not a.overlaps(b), (ta, tb)
    # each train named on its run and in the legend; one that never entered is neither
    legend = (
        [t.get_text() for t in fig.legends[0].get_texts()]
        if fig.legends
        else [t.get_text() for t in ax.get_legend().get_texts()]
    )
    assert "train 14" in legend and "never" not in legend and "never" not in names
    assert "train 14" in names
    # a train is drawn only while it is on the track: train 1 from 100 s to 900 s
    band = [c for c in ax.collections if c.get_label() == "train 1"][0]
    xs = np.concatenate([p.vertices[:, 0] for p in band.get_paths()])
    assert xs.min() >= 100.0 - 1e-6 and xs.max() <= 900.0 + 1e-6


def test_speed_distance_shows_the_permitted_speed_stations_and_signals(captured, tmp_path):
    from tdbtools.render.plots import plot_speed_distance

    d = np.linspace(0, 5000, 501)
    v = np.minimum(np.sqrt(2 * 0.5 * d), 25.0)
    trace = {
        "time": np.linspace(0, 300, 501),
        "distance": d,
        "speed": v,
        "throttle": np.ones_like(d),
        "brake": np.zeros_like(d),
    }
    limit = (np.array([-200.0, 2000.0, 3500.0]), np.array([100.0, 60.0, 120.0]))
    marks = [(1200.0, "station", "Midtby"), (2500.0, "signal", "S7"), (2510.0, "signal", "S8")]
    plot_speed_distance(trace, "T", [], tmp_path / "s.png", limit=limit, marks=marks)
    ax = captured[0].axes[0]
    lim = [ln for ln in ax.get_lines() if ln.get_label() == "permitted speed"]
    assert lim, [ln.get_label() for ln in ax.get_lines()]
    x, y = lim[0].get_data()
    assert x[0] == 0.0 and y[0] == 100.0 and 60.0 in y and 120.0 in y  # from the start on, in km/h
    texts = [t.get_text().strip() for t in ax.texts]
    assert "Midtby" in texts and "S7" in texts and "S8" not in texts  # 10 m apart: one name
    leg = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"speed", "permitted speed", "station", "signal"} <= set(leg)


def test_station_labels_are_one_per_station_and_never_print_over_each_other():
    from tdbtools.render.spacetime import station_labels

    marks = [
        (10.00, "Aby"),
        (10.02, "Aby"),  # a second platform of the same station
        (10.30, "Bro"),  # closer than a label's height to Aby's
        (11.50, "Cove"),
        (11.70, "Dale"),
        (12.00, "Eby"),
    ]
    shown = station_labels(marks, gap=0.4)
    assert shown == [(10.0, "Aby"), (11.5, "Cove"), (12.0, "Eby")]
    assert all(b[0] - a[0] >= 0.4 for a, b in zip(shown, shown[1:]))
    assert station_labels(marks, gap=0.0) == [m for m in marks if m != (10.02, "Aby")]
