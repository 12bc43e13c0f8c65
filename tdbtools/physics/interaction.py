"""Time to the next interaction of two cars on one route (docs/physics.md §2): ClashTime and StoppingTime.

Sign convention (the article's): positions grow "to the right". **Car 2 is ahead of car 1**
(its x is larger); ``s`` is the distance between the two facing ends (car 1's front and
car 2's rear), ``v1, v2, a1, a2`` are the speeds and accelerations of car 1 and car 2,
positive to the right (towards larger x). Over the time ``t`` the gap shrinks by
``(v1 - v2)·t + (a1 - a2)·t²/2``; the clash time is the earliest ``t ≥ 0`` at which it has
shrunk by ``s``.

The same function gives the time until a coupler with free play ``slack`` goes taut: the
"distance" is ``slack - gap`` and the roles of the two cars are swapped (the gap grows when
the car ahead is faster), i.e. ``clash_time(slack - gap, v2, v1, a2, a1)``.

Both functions return :data:`math.inf` for "never". The scalar and the vectorised (numpy)
versions give the same results element by element.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "clash_time",
    "clash_times",
    "clash_times_ab",
    "stopping_time",
    "stopping_times",
    "LINEAR_EPS",
    "STOP_EPS",
]

#: |A| (half the relative acceleration, m/s²) and |B| (relative speed, m/s) below which the
#: article treats the term as zero (``0.000001`` in ClashTime).
LINEAR_EPS = 1e-6
#: |acceleration| below which StoppingTime says "never" (``0.0000001`` in the article).
STOP_EPS = 1e-7


def clash_time(s: float, v1: float, v2: float, a1: float, a2: float) -> float:
    """Time until car 1 (behind) has closed the distance ``s`` to car 2 (ahead), or ``inf``.

    Car 2 is ahead (larger x) of car 1; ``s`` is the distance between them; speeds
    ``v1, v2`` and accelerations ``a1, a2`` are positive towards +x ("moving right").

    The article's ClashTime: solve ``s = B·t + A·t²`` with ``A = (a1 - a2)/2`` and
    ``B = v1 - v2``.

    * ``|A| < 1e-6``: linear. ``|B| < 1e-6`` → ``inf`` (they keep their distance);
      otherwise ``t = s/B``. A negative ``t`` (they move apart) is returned as ``inf`` —
      the article's code returns the negative number here, which no caller can use as a time.
    * otherwise ``D = B² + 4·A·s``; ``D < 0`` → ``inf`` (never that close);
      roots ``t1, t2 = (-B ± √D)/(2A)``: both ``≥ 0`` → the smaller, one ``≥ 0`` → that
      one, none → ``inf``.

    The roots are computed in the cancellation-free form (``q = -(B + sign(B)·√D)/2``,
    roots ``q/A`` and ``-s/q``), which is the article's pair of roots without the loss of digits
    of ``-B + √D`` when ``4·A·s`` is small against ``B²``; the branches and the root
    selection are the article's.
    """
    A = (a1 - a2) / 2.0
    B = v1 - v2
    if abs(A) < LINEAR_EPS:
        if abs(B) < LINEAR_EPS:
            return math.inf
        t = s / B
        return t + 0.0 if t >= 0.0 else math.inf  # + 0.0: no -0.0
    D = B * B + 4.0 * A * s
    if D < 0.0:
        return math.inf
    q = -0.5 * (B + math.copysign(math.sqrt(D), B))
    t1 = q / A
    t2 = -s / q if q != 0.0 else t1  # q == 0 only for B == 0 and D == 0, i.e. s == 0
    if t1 >= 0.0:
        return (min(t1, t2) if t2 >= 0.0 else t1) + 0.0
    return t2 + 0.0 if t2 >= 0.0 else math.inf


def _arrays(*zs) -> list[np.ndarray]:
    """The arguments as float64 arrays of one shape (broadcast only when they differ)."""
    out = [np.asarray(z, dtype=np.float64) for z in zs]
    shape = out[0].shape
    for a in out:
        if a.shape != shape:
            return list(np.broadcast_arrays(*out))
    return out


def clash_times(s, v1, v2, a1, a2) -> np.ndarray:
    """:func:`clash_time` element by element over broadcast arrays (float64 result)."""
    s, v1, v2, a1, a2 = _arrays(s, v1, v2, a1, a2)
    return clash_times_ab(s, (a1 - a2) * 0.5, v1 - v2)


def clash_times_ab(s: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """:func:`clash_times` from ``A = (a1 - a2)/2`` and ``B = v1 - v2`` (float64 arrays of one
    shape), for callers that already have them (the engine's clash and coupler times of a
    joint share them with the signs flipped)."""
    lin = np.abs(A) < LINEAR_EPS
    n_lin = np.count_nonzero(lin)
    if n_lin == lin.size:
        out = np.full(s.shape, np.inf)
    else:
        # quadratic branch (on every element when none is linear: no gather/scatter)
        quad = None if n_lin == 0 else ~lin
        if quad is None:
            Aq, Bq, sq = A, B, s
        else:
            Aq, Bq, sq = A[quad], B[quad], s[quad]
        D = Bq * Bq + 4.0 * Aq * sq
        ok = D >= 0.0
        all_ok = np.count_nonzero(ok) == ok.size
        root = np.sqrt(D if all_ok else np.where(ok, D, 0.0))
        q = -0.5 * (Bq + np.copysign(root, Bq))
        t1 = q / Aq
        qz = q == 0.0
        if np.count_nonzero(qz):
            t2 = -sq / np.where(qz, 1.0, q)
            t2 = np.where(qz, t1, t2)
        else:
            t2 = -sq / q
        p1, p2 = t1 >= 0.0, t2 >= 0.0
        t = np.where(p1, np.where(p2, np.minimum(t1, t2), t1), np.where(p2, t2, np.inf))
        t += 0.0
        if not all_ok:
            t[~ok] = np.inf
        if quad is None:
            out = t
        else:
            out = np.full(s.shape, np.inf)
            out[quad] = t
    # linear branch
    if n_lin:
        m = lin & (np.abs(B) >= LINEAR_EPS)
        if np.count_nonzero(m):
            t = s[m] / B[m]
            out[m] = np.where(t >= 0.0, t + 0.0, np.inf)
    return out


def stopping_time(friction_acc: float, other_acc: float, speed: float) -> float:
    """Time until a car moving at ``speed`` stops under friction, or ``inf`` (seed: StoppingTime).

    ``friction_acc``: the deceleration friction alone can give (its sign is ignored: friction
    always opposes the motion); ``other_acc``: the acceleration of every other force, signed,
    positive to the right; ``speed``: signed, positive to the right.

    ``speed == 0`` → ``0``; the net acceleration is ``a = other - sign(speed)·|friction|``;
    ``|a| < 1e-7`` → ``inf``; ``a`` along the motion (``a·speed > 0``) → ``inf``;
    else ``-speed/a``.
    """
    Atr = abs(friction_acc)
    V = speed
    if V == 0:
        return 0.0
    kof = -1.0 if V > 0 else 1.0
    a = other_acc + kof * Atr
    if abs(a) < STOP_EPS:
        return math.inf
    if a * V > 0:
        return math.inf
    return -V / a


def stopping_times(friction_acc, other_acc, speed) -> np.ndarray:
    """:func:`stopping_time` element by element over broadcast arrays (float64 result)."""
    fr, oth, V = _arrays(friction_acc, other_acc, speed)
    a = oth - np.sign(V) * np.abs(fr)
    never = (np.abs(a) < STOP_EPS) | (a * V > 0.0)
    stop = V == 0.0
    safe = np.where(never | stop, 1.0, a)
    t = np.asarray(-V / safe)  # 0-d input: an array, not a scalar
    t[never] = np.inf
    t[stop] = 0.0
    return t
