"""How a signal aspect's speed reaches a train (docs/signals.md §4.6).

Open Rails, read for facts only (the manual's "Signal aspect parameters", and the AI's
signal actions in ``AITrain.ObtainRequiredActions``):

* an aspect's ``SpeedKPH``/``SpeedMPH`` is a limit the train must keep from the signal on:
  in activity mode until the next signal (a speed post does not lift it); with the
  ``OR_SPEEDRESET`` flag it is lifted by a speed post or by the next signal setting a higher
  speed (tdbtools: the next signal either way, which is the same unless a speed post stands
  between the two signals);
* the limit is the one of the aspect shown as the train passes the signal (a later change of
  the signal does not change it);
* an AI train approaching a signal at STOP_AND_PROCEED or RESTRICTING that is cleared for it
  slows to a low speed before it (tdbtools: ``runtime.CREEP`` at the signal), unless the aspect
  carries ``OR_NOSPEEDREDUCTION``.

Before issue 27 the limit was applied only while the train approached the signal: once past
it, it was dropped and the train accelerated at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tdbtools.signals.aspects import SignalAspects


def aspect_speed(asp: SignalAspects, sig: int) -> float:
    """The speed limit (m/s) of signal ``sig``'s NORMAL heads as they show now, −1 for none:
    the highest of the heads' aspect speeds (the head a train reads is the least
    restrictive one)."""
    return max(
        (h.type.speed(h.state) for h in asp.normal_typed[sig] if h.type is not None),
        default=-1.0,
    )


def no_speed_reduction(asp: SignalAspects, sig: int) -> bool:
    """Whether the aspect a train reads at ``sig`` carries ``OR_NOSPEEDREDUCTION`` (no slowing
    before a STOP_AND_PROCEED / RESTRICTING signal)."""
    a = asp.aspect(sig)
    for h in asp.normal_typed[sig]:
        if h.type is not None and h.state == a:
            x = h.type.aspect(a)
            if x is not None and x.no_speed_reduction:
                return True
    return False


def passed_limit(
    asp: SignalAspects, s_sig: float, sig: int, s_next: float
) -> tuple[float, float, float] | None:
    """The limit a train takes with it as it passes ``sig`` (at line distance ``s_sig``):
    ``(s_sig, s_next, m/s)`` up to the next signal (or its path's end), or None when the
    aspect it passed has no speed."""
    v = aspect_speed(asp, sig)
    return (s_sig, s_next, v) if v > 0 else None
