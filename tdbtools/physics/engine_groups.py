"""The engine's blocks and groups (docs/physics.md §1, step 2 of :mod:`tdbtools.physics.engine`).

Blocks: runs of cars held together (every joint inside at a limit, equal speeds); they
change only when a joint between groups reaches or leaves a limit. Groups: the blocks of
one round, cut where a joint cannot hold; each moves with one speed and acceleration until
the next event. Per-group values also exist as Python lists when there are at most
:data:`SMALL` groups (one train or a few): the same IEEE operations without a numpy call
each.

The blocks only change when a joint between two groups reaches or leaves a limit or the
speeds across it become equal: a gap inside a group never changes, the speeds inside a
group are equal (v = vg[gid]) and the limit masks are kept up to date where a gap changes.
So the block structure (and everything derived from it) is rebuilt only when
:func:`lock_changed` says so, which looks at the joints between groups only.

The functions here read and write the state of an :class:`~tdbtools.physics.engine.Engine`
(its gaps, limit masks, speeds and the groups of the round); the engine calls them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from tdbtools.physics.engine_bodies import V_REST
from tdbtools.physics.joints import _EQ, _GE, _LE, EPS_V, _solve_chain, _solve_static

#: The Engine of tdbtools.physics.engine, whose state these functions read and write (not
#: imported: that module imports this one).
Engine = Any

__all__ = ["SMALL", "joint_types", "regroup"]

# Up to this many blocks/groups the per-group arithmetic runs on Python floats (the same
# IEEE operations as numpy's, without the fixed cost of a numpy call per operation).
SMALL = 16


@dataclass(slots=True, eq=False)
class BlockLists:
    """Per-block values of a :class:`Blocks` on Python numbers (few blocks)."""

    mass: list[float]
    joints: list[int]  # the same-line joints between blocks
    joint_block: list[int]  # the block ahead of each of those joints
    lead: list[int]  # the block of each line's first car


@dataclass(slots=True, eq=False)
class Blocks:
    """The block structure of the cars (see above)."""

    lock: np.ndarray  # (n - 1) bool: joint at a limit with equal speeds
    starts: np.ndarray  # first car of each block
    of_car: np.ndarray  # block of each car
    mass: np.ndarray  # total mass of each block
    joints: np.ndarray  # same-line joints between blocks
    joint_block: np.ndarray  # the block ahead of each of those joints
    joint_hi: np.ndarray  # their upper limits (slack, inf if not coupled)
    lead: np.ndarray  # block of each line's first car
    multi_blocks: list[tuple[int, int]]  # (first car, end) of each block of two cars or more
    sign: np.ndarray  # (n - 1) +1 buffers locked, -1 taut coupler locked, else 0
    multi: bool  # some block has two cars or more
    lists: BlockLists | None  # set when there are at most SMALL blocks

    @property
    def count(self) -> int:
        return int(self.starts.size)


@dataclass(slots=True, eq=False)
class BlockMotion:
    """Each block's motion if it moved as one (the first guess of a round)."""

    drive: np.ndarray  # Σ drive per block
    resist: np.ndarray  # Σ resist per block
    v: np.ndarray  # speed (0 for a block at rest)
    a: np.ndarray  # acceleration
    sign: list | np.ndarray  # direction the friction opposes (0: held by static friction)
    moving: list | np.ndarray
    all_moving: bool
    lists: tuple[list[float], list[float], list[float], list[float]] | None  # v, a, D, R
    a_car: np.ndarray | None = None  # per-car acceleration, when already gathered


@dataclass(slots=True, eq=False)
class GroupLists:
    """Per-group values of a :class:`Groups` on Python numbers (few groups)."""

    v: list[float]
    a: list[float]
    mass: list[float]
    drive: list[float]
    resist: list[float]
    joints: list[int]  # the same-line joints between groups
    joint_group: list[int]  # the group ahead of each of those joints
    lead: list[int]  # the group of each line's first car


@dataclass(slots=True, eq=False)
class Groups:
    """The groups of the current round (see above); ``v`` changes as they advance."""

    starts: np.ndarray  # first car of each group
    of_car: np.ndarray  # group of each car
    mass: np.ndarray
    drive: np.ndarray
    resist: np.ndarray
    v: np.ndarray
    a: np.ndarray
    joints: np.ndarray  # same-line joints between groups: the only gaps that move
    joint_group: np.ndarray  # the group ahead of each of those joints
    joint_hi: np.ndarray  # their upper limits
    lead: np.ndarray  # group of each line's first car
    lists: GroupLists | None  # set when there are at most SMALL groups


def joint_types(atz: np.ndarray, att: np.ndarray, s: int, e: int) -> np.ndarray:
    """The joint types (_GE/_LE/_EQ) of the locked joints of cars ``s..e-1``."""
    z = atz[s : e - 1]
    t = att[s : e - 1]
    return np.where(z & t, _EQ, np.where(z, _GE, _LE))


def lock_changed(eng: Engine) -> bool:
    """Whether the joints at a limit with equal speeds (or the limit of a joint among
    them that is a group boundary) differ from those the blocks were built from."""
    grp, blk = eng._groups, eng._blocks
    assert blk is not None
    jb = grp.joints
    if not jb.size:
        return False
    atz, att, lock, sig = eng._atz, eng._att, blk.lock, blk.sign
    gl = grp.lists
    if gl is not None:
        vg = gl.v
        for j, k in zip(gl.joints, gl.joint_group):
            z, t = bool(atz[j]), bool(att[j])
            new = (z or t) and abs(vg[k] - vg[k + 1]) <= EPS_V
            if new != bool(lock[j]):
                return True
            if new and (0.0 if z == t else (1.0 if z else -1.0)) != sig[j]:
                return True
        return False
    vga = grp.v
    z, t = atz[jb], att[jb]
    new = (z | t) & (np.abs((vga[:-1] - vga[1:])[grp.joint_group]) <= EPS_V)
    if np.count_nonzero(new != lock[jb]):
        return True
    if np.count_nonzero(new):
        s = np.where(z & ~t, 1.0, np.where(t & ~z, -1.0, 0.0))
        return bool(np.count_nonzero(new & (s != sig[jb])))
    return False


def build_blocks(eng: Engine) -> Blocks:
    n = eng.n
    v = eng._v
    atz, att = eng._atz, eng._att
    lock = (atz | att) & (np.abs(v[:-1] - v[1:]) <= EPS_V)
    brk = ~lock
    bid = np.empty(n, np.int64)
    bid[0] = 0
    np.cumsum(brk, out=bid[1:])
    starts = np.concatenate(([True], brk)).nonzero()[0]
    mass = np.add.reduceat(eng._m, starts)
    joints = np.flatnonzero(brk & eng._same)
    lead = bid[eng._line_first]
    jblock = bid[joints]
    lists = None
    if starts.size <= SMALL:
        lists = BlockLists(mass.tolist(), joints.tolist(), jblock.tolist(), lead.tolist())
    sizes = np.diff(starts, append=n)
    multi = (sizes > 1).nonzero()[0]
    # joint force P_j = Σ (drive - sign·resist - m·a) from the first car of its block to car j;
    # it must satisfy sign_j·P_j <= tol
    # (sign: +1 buffers locked, -1 taut coupler locked, 0 both or not locked)
    return Blocks(
        lock=lock,
        starts=starts,
        of_car=bid,
        mass=mass,
        joints=joints,
        joint_block=jblock,
        joint_hi=eng._hi[joints],
        lead=lead,
        multi_blocks=list(zip(starts[multi].tolist(), (starts[multi] + sizes[multi]).tolist())),
        sign=np.subtract(atz, att, dtype=np.float64) * lock,
        multi=starts.size < n,
        lists=lists,
    )


def regroup(eng: Engine, drive: np.ndarray, resist: np.ndarray, tol: float) -> None:
    """The groups of this round: the blocks, split where a joint cannot hold (2.)."""
    if eng._blocks is None or lock_changed(eng):
        eng._blocks = build_blocks(eng)
    blk = eng._blocks
    mo = block_motion(eng, blk, drive, resist)
    slow = blocks_that_split(eng, blk, mo, drive, resist, tol) if blk.multi else None
    if slow is None:
        gl = None
        if mo.lists is not None:
            bl = blk.lists
            assert bl is not None
            vl, al, Dl, Rl = mo.lists
            gl = GroupLists(vl, al, bl.mass, Dl, Rl, bl.joints, bl.joint_block, bl.lead)
        eng._groups = Groups(
            blk.starts,
            blk.of_car,
            blk.mass,
            mo.drive,
            mo.resist,
            mo.v,
            mo.a,
            blk.joints,
            blk.joint_block,
            blk.joint_hi,
            blk.lead,
            gl,
        )
        eng._v = mo.v[blk.of_car]
        eng._a = mo.a_car if mo.a_car is not None else mo.a[blk.of_car]
        return
    split_blocks(eng, blk, mo, slow, drive, resist)


def block_motion(eng: Engine, blk: Blocks, drive: np.ndarray, resist: np.ndarray) -> BlockMotion:
    """Each block's speed and acceleration if it moves as one."""
    m = eng._m
    starts, M = blk.starts, blk.mass
    nb = blk.count
    Db = np.add.reduceat(drive, starts)
    Rb = np.add.reduceat(resist, starts)
    v = eng._v
    vb = np.add.reduceat(m * v, starts) / M
    # a block whose cars all have one speed moves at that speed (exactly, not rounded
    # through Σm·v/Σm; the compiled kernel does not look again at a last round's group
    # that no impulse touched, whose cars have its speed)
    v0 = v[starts]
    uniform = np.logical_and.reduceat(v == v0[blk.of_car], starts)
    vb[uniform] = v0[uniform]
    if blk.lists is not None:
        Dl, Rl, vl, Ml = Db.tolist(), Rb.tolist(), vb.tolist(), blk.lists.mass
        sl = [0.0] * nb
        al = [0.0] * nb
        moving_l = [True] * nb
        allmov = True
        for k in range(nb):
            vk = vl[k]
            if abs(vk) > V_REST:
                s = 1.0 if vk > 0.0 else -1.0
            else:
                moving_l[k] = allmov = False
                vl[k] = 0.0
                d = Dl[k]
                s = (1.0 if d > 0.0 else -1.0) if abs(d) > Rl[k] else 0.0
            if s != 0.0:
                sl[k] = s
                al[k] = (Dl[k] - s * Rl[k]) / Ml[k]
        return BlockMotion(Db, Rb, np.array(vl), np.array(al), sl, moving_l, allmov, (vl, al, Dl, Rl))
    moving = np.abs(vb) > V_REST
    allmov = np.count_nonzero(moving) == nb
    if allmov:
        sgn = np.sign(vb)
        ab = (Db - sgn * Rb) / M
    else:
        sgn = np.where(moving, np.sign(vb), np.where(np.abs(Db) > Rb, np.sign(Db), 0.0))
        ab = (Db - sgn * Rb) / M
        ab[sgn == 0.0] = 0.0
        vb[~moving] = 0.0
    return BlockMotion(Db, Rb, vb, ab, sgn, moving, bool(allmov), None)


def blocks_that_split(
    eng: Engine, blk: Blocks, mo: BlockMotion, drive: np.ndarray, resist: np.ndarray, tol: float
) -> np.ndarray | None:
    """The blocks (of two cars or more) where a joint force has the wrong sign or a car
    at rest could break free; None if every block holds. Sets ``mo.a_car`` on the way
    when it computes the per-car accelerations."""
    m = eng._m
    n = eng.n
    bid = blk.of_car
    sgn = mo.sign
    if blk.count == 1:
        sc = None
        s0 = sgn[0]
        if s0 != 0.0:
            E = drive - s0 * resist - m * float(mo.a[0])
            np.add.accumulate(E, out=eng._Pc[1:])
            badj = blk.sign * eng._Pc[1:-1] > tol
        else:
            badj = None  # a block at rest: no joint force test, see badc
    else:
        sc = (np.array(sgn) if mo.lists is not None else sgn)[bid]
        a_car = mo.a_car = mo.a[bid]
        E = drive - sc * resist - m * a_car
        # a joint's force: the running sum of E from its block's first car (one sum per
        # block of two cars or more; the joints between blocks have sign 0)
        P = np.zeros(n - 1)
        for s, e in blk.multi_blocks:
            np.add.accumulate(E[s : e - 1], out=P[s : e - 1])
        badj = blk.sign * P > tol
        if not mo.all_moving:
            badj &= sc[:-1] != 0.0
    nbad = np.count_nonzero(badj) if badj is not None else 0
    badc = None
    if not mo.all_moving:
        # a block at rest with |ΣD| <= ΣR: static unless some car could break free
        if sc is None:
            sc = np.full(n, sgn[0])
        badc = (sc == 0.0) & (np.abs(drive) > resist + tol)
        nbad += np.count_nonzero(badc)
    if not nbad:
        return None
    parts = []
    if badj is not None:
        parts.append(bid[:-1][badj])
    if badc is not None:
        parts.append(bid[badc])
    slow = np.unique(np.concatenate(parts))
    sizes = np.diff(blk.starts, append=n)
    slow = slow[sizes[slow] > 1]
    return slow if slow.size else None


def split_blocks(
    eng: Engine, blk: Blocks, mo: BlockMotion, slow: np.ndarray, drive: np.ndarray, resist: np.ndarray
) -> None:
    """Solve the blocks ``slow`` car by car (:func:`_solve_chain`, :func:`_solve_static`)
    and make the groups: the blocks, cut where those solutions separate."""
    m = eng._m
    n = eng.n
    starts = blk.starts
    a_car = mo.a[blk.of_car]
    brk = ~blk.lock
    atz, att = eng._atz, eng._att
    nb = starts.size
    # A block's solution depends only on its cars, their joint types, the forces (fixed
    # within a step) and its direction: an event on another line (or elsewhere on this
    # one) leaves it as it was, so within a step it is solved once, not once per round.
    cache = eng._split_cache
    for k in slow.tolist():
        s = int(starts[k])
        e = int(starts[k + 1]) if k + 1 < nb else n
        moving = bool(mo.moving[k])
        sg = float(mo.sign[k]) if moving else 0.0
        key = (s, e, moving, sg, atz[s : e - 1].tobytes(), att[s : e - 1].tobytes())
        hit = cache.get(key)
        if hit is None:
            d, r = drive[s:e], resist[s:e]
            types = joint_types(atz, att, s, e).tolist()
            tol_k = 1e-9 * (math.fsum(np.abs(d).tolist()) + math.fsum(r.tolist())) + 1e-300
            if moving:
                hit = _solve_chain(eng._ml[s:e], (d - sg * r).tolist(), types, tol_k)
            else:
                hit = _solve_static(eng._ml[s:e], d.tolist(), r.tolist(), types, tol_k)
            cache[key] = hit
        y, cuts = hit
        a_car[s:e] = y
        for c in cuts:
            brk[s + c] = True
    gid = np.empty(n, np.int64)
    gid[0] = 0
    np.cumsum(brk, out=gid[1:])
    gstarts = np.concatenate(([True], brk)).nonzero()[0]
    Mg = np.add.reduceat(m, gstarts)
    Dg = np.add.reduceat(drive, gstarts)
    Rg = np.add.reduceat(resist, gstarts)
    vg = mo.v[blk.of_car[gstarts]]
    ag = a_car[gstarts]
    jb = (brk & eng._same).nonzero()[0]
    jg = gid[jb]
    lead = gid[eng._line_first]
    gl = None
    if gstarts.size <= SMALL:
        gl = GroupLists(
            vg.tolist(),
            ag.tolist(),
            Mg.tolist(),
            Dg.tolist(),
            Rg.tolist(),
            jb.tolist(),
            jg.tolist(),
            lead.tolist(),
        )
    eng._groups = Groups(gstarts, gid, Mg, Dg, Rg, vg, ag, jb, jg, eng._hi[jb], lead, gl)
    eng._v = vg[gid]
    eng._a = ag[gid]
