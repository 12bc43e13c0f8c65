"""Comparing two speed traces (``tdbtools compare``; docs/physics.md §7.7).

A trace is a CSV file with a time column and a speed column, and optionally distance
and force: a replay's ``<train>.csv``, a trace of the Open Rails profile, or a file
Open Rails wrote (its data logger's dump and the evaluation CSV). Columns are found by
name (``time``/``seconds``/``elapsed``; ``speed``/``spd``/``velocity``; ``distance``/
``odometer``; ``force``/``tractive``/``motive``), their units from the name (``km/h``,
``kmh``, ``kph``, ``mph``, ``m/s``; ``km``, ``mi``, ``m``; ``kN``, ``lbf``, ``N``;
``h``, ``min``, ``s``); a time may also be written ``HH:MM:SS``.

Open Rails writes numbers in the computer's locale, so a German or Polish Windows gives
``12,5``. With a ``;`` or tab separator that is read as a decimal comma. With a ``,``
separator every number with a decimal comma becomes two fields; when a data row has
twice the header's fields (or more fields than the header and every extra field is
digits only), the pairs are joined back (``12`` ``5`` → 12.5).

The speeds are compared where both traces have data, on the first trace's samples (the
second is interpolated), against time or distance. Phases come from the first trace's
``throttle``/``brake`` columns when it has them (``traction``, ``braking``,
``coasting``, ``standing``), else from the second trace's acceleration (over 0.05 m/s²:
``traction``; under −0.15 m/s²: ``braking``).
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import TdbToolsError

__all__ = ["Comparison", "PhaseStats", "Trace", "TraceError", "compare_traces", "read_trace"]

#: Files larger than this are refused (a trace of a day at 10 Hz is ~50 MB).
MAX_TRACE_BYTES = 200 * 1024 * 1024

_NAMES = {
    "time": ("time", "seconds", "elapsed", "t", "gametime", "clock"),
    "speed": ("speed", "spd", "velocity", "v"),
    "distance": ("distance", "odometer", "dist", "travelled"),
    "force": ("force", "traction", "tractive", "motive", "traction force", "tractiveforce"),
    "throttle": ("throttle",),
    "brake": ("brake",),
}
_UNITS = {
    "speed": {
        "km/h": 1 / 3.6,
        "kmh": 1 / 3.6,
        "kph": 1 / 3.6,
        "kmph": 1 / 3.6,
        "mph": 0.44704,
        "m/s": 1.0,
        "mps": 1.0,
    },
    "distance": {"km": 1000.0, "mi": 1609.344, "miles": 1609.344, "m": 1.0},
    "force": {"kn": 1000.0, "lbf": 4.44822162, "n": 1.0},
    "time": {"h": 3600.0, "min": 60.0, "s": 1.0},
}


class TraceError(TdbToolsError):
    """A trace file that cannot be compared (no time or speed column, no numbers, …)."""


@dataclass(frozen=True)
class Trace:
    """A trace in SI units (NaN-free, time increasing). Optional columns are None."""

    path: str
    time: np.ndarray
    speed: np.ndarray
    distance: np.ndarray | None = None
    force: np.ndarray | None = None
    throttle: np.ndarray | None = None
    brake: np.ndarray | None = None


def _split_header(name: str) -> tuple[str, str]:
    """``'Speed (km/h)'`` → ``('speed', 'km/h')``; ``'speed_kmh'`` → ``('speed', 'kmh')``."""
    low = name.strip().lower()
    m = re.match(r"^(.*?)\s*[\(\[]\s*([^\)\]]*)\s*[\)\]]\s*$", low)
    if m:
        return m.group(1).strip(), m.group(2).strip()
    for sep in ("_", " "):
        if sep in low:
            base, _, unit = low.rpartition(sep)
            if any(unit in u for u in _UNITS.values()):
                return base.strip(), unit
    return low, ""


def _find(header: list[str]) -> dict[str, tuple[int, float]]:
    found: dict[str, tuple[int, float]] = {}
    for i, h in enumerate(header):
        base, unit = _split_header(h)
        for key, names in _NAMES.items():
            if key in found or base not in names:
                continue
            factor = 1.0
            if key in _UNITS:
                if unit and unit not in _UNITS[key]:
                    raise TraceError(f"column {h!r}: unknown unit {unit!r} (known: {', '.join(_UNITS[key])})")
                factor = _UNITS[key].get(unit, 1.0)
            found[key] = (i, factor)
            break
    return found


def _number(text: str, decimal_comma: bool) -> float:
    t = text.strip()
    if ":" in t:  # HH:MM:SS(.s)
        parts = t.replace(",", ".").split(":")
        if len(parts) in (2, 3):
            vals = [float(p) for p in parts]
            return sum(v * 60.0**k for k, v in enumerate(reversed(vals)))
    if decimal_comma:
        t = t.replace(".", "").replace(",", ".") if t.count(",") == 1 else t
    v = float(t)
    if not math.isfinite(v):
        raise ValueError(t)
    return v


def _rejoin(row: list[str], n: int) -> list[str] | None:
    """A ``,``-separated row whose decimal commas split numbers: join the pairs back."""
    if len(row) == 2 * n:
        return [f"{row[2 * k]}.{row[2 * k + 1]}" for k in range(n)]
    return None


def read_trace(path: str | Path) -> Trace:
    """Read a trace CSV (see the module docstring)."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_TRACE_BYTES:
            raise TraceError(f"{p}: larger than {MAX_TRACE_BYTES // 2**20} MB")
        raw = p.read_bytes()
    except OSError as exc:
        raise TraceError(f"{p}: {exc.strerror or exc}") from None
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        text = raw.decode("utf-16")
    else:
        text = raw.decode("utf-8-sig", errors="replace")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise TraceError(f"{p}: empty")
    first = lines[0]
    sep = (
        ";" if first.count(";") > first.count(",") else "\t" if first.count("\t") > first.count(",") else ","
    )
    rows = list(csv.reader(io.StringIO("\n".join(lines)), delimiter=sep))
    header, data = rows[0], rows[1:]
    cols = _find(header)
    for need in ("time", "speed"):
        if need not in cols:
            raise TraceError(f"{p}: no {need} column among {', '.join(header[:20])}")
    decimal_comma = sep != "," and any("," in f for r in data[:50] for f in r)
    out: dict[str, list[float]] = {k: [] for k in cols}
    n = len(header)
    for ln, row in enumerate(data, start=2):
        if sep == "," and len(row) > n:
            fixed = _rejoin(row, n)
            if fixed is None:
                raise TraceError(f"{p}:{ln}: {len(row)} fields for {n} columns")
            row = fixed
        try:
            vals = {k: _number(row[i], decimal_comma) * f for k, (i, f) in cols.items()}
        except (ValueError, IndexError):
            raise TraceError(f"{p}:{ln}: not a number in row {sep.join(row)[:80]!r}") from None
        for k, v in vals.items():
            out[k].append(v)
    if len(out["time"]) < 2:
        raise TraceError(f"{p}: fewer than two rows")
    arr = {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}
    t = arr["time"]
    if np.any(np.diff(t) < 0):
        raise TraceError(f"{p}: time goes backwards")
    return Trace(
        str(p),
        t,
        np.abs(arr["speed"]),
        arr.get("distance"),
        arr.get("force"),
        arr.get("throttle"),
        arr.get("brake"),
    )


@dataclass(frozen=True)
class PhaseStats:
    """Speed error (first − second) over one phase: samples, RMS, max |error|, mean."""

    phase: str
    samples: int
    rms: float
    max_abs: float
    bias: float


@dataclass(frozen=True)
class Comparison:
    axis: str
    overall: PhaseStats
    phases: tuple[PhaseStats, ...]
    x: np.ndarray
    speed_a: np.ndarray
    speed_b: np.ndarray
    phase_of: np.ndarray

    def to_json(self) -> dict:
        """The figures as ``tdbtools compare --json`` prints them (docs/cli-json.md)."""

        def row(s: PhaseStats) -> dict:
            nan = math.isnan
            return {
                "phase": s.phase,
                "samples": s.samples,
                "rms_mps": None if nan(s.rms) else s.rms,
                "max_mps": None if nan(s.max_abs) else s.max_abs,
                "bias_mps": None if nan(s.bias) else s.bias,
            }

        return {"axis": self.axis, "overall": row(self.overall), "phases": [row(p) for p in self.phases]}

    def lines(self) -> list[str]:
        out = [f"speed error against {self.axis} (first − second), m/s:"]
        out.append(f"  {'phase':<10} {'samples':>8} {'RMS':>8} {'max':>8} {'bias':>8}")
        for s in (*self.phases, self.overall):
            out.append(f"  {s.phase:<10} {s.samples:>8d} {s.rms:>8.3f} {s.max_abs:>8.3f} {s.bias:>+8.3f}")
        return out


def _stats(name: str, err: np.ndarray) -> PhaseStats:
    if err.size == 0:
        return PhaseStats(name, 0, math.nan, math.nan, math.nan)
    return PhaseStats(
        name, int(err.size), float(np.sqrt(np.mean(err**2))), float(np.max(np.abs(err))), float(np.mean(err))
    )


PHASES = ("traction", "coasting", "braking", "standing")


def _phases(a: Trace, b_speed: np.ndarray, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    n = x.size
    ph = np.full(n, "coasting", dtype=object)
    if a.throttle is not None or a.brake is not None:
        thr = a.throttle[mask] if a.throttle is not None else np.zeros(n)
        brk = a.brake[mask] if a.brake is not None else np.zeros(n)
        ph[thr > 0] = "traction"
        ph[brk > 0] = "braking"
    else:
        t = a.time[mask]
        acc = np.gradient(b_speed, t) if n > 1 else np.zeros(n)
        k = max(int(1.0 / max(float(np.median(np.diff(t))) if n > 1 else 1.0, 1e-3)), 1)
        acc = np.convolve(acc, np.ones(k) / k, mode="same")  # over about a second
        ph[acc > 0.05] = "traction"
        ph[acc < -0.15] = "braking"
    ph[(a.speed[mask] < 0.1) & (b_speed < 0.1)] = "standing"
    return ph


def compare_traces(a: Trace, b: Trace, axis: str = "time") -> Comparison:
    """Compare ``a`` with ``b`` on ``a``'s samples where both have data."""
    if axis == "time":
        xa, xb = a.time, b.time
    elif axis == "distance":
        if a.distance is None or b.distance is None:
            raise TraceError("--axis distance needs a distance column in both traces")
        xa, xb = a.distance, b.distance
        if np.any(np.diff(xb) < 0):
            raise TraceError(f"{b.path}: distance goes backwards")
    else:
        raise ValueError(f"axis must be 'time' or 'distance', not {axis!r}")
    mask = (xa >= xb[0]) & (xa <= xb[-1])
    if not mask.any():
        raise TraceError(f"the traces do not overlap in {axis}")
    x = xa[mask]
    sb = np.interp(x, xb, b.speed)
    sa = a.speed[mask]
    err = sa - sb
    ph = _phases(a, sb, x, mask)
    phases = tuple(_stats(p, err[ph == p]) for p in PHASES if np.any(ph == p))
    return Comparison(axis, _stats("all", err), phases, x, sa, sb, ph)
