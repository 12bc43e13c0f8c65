"""Switch positions: the selected route of every junction, shared by travellers."""

from __future__ import annotations

from collections.abc import Iterator

from ..formats.route import Route
from .network import _JUNCTION, TravellerError, _net

__all__ = ["Switches"]

# -- switches ------------------------------------------------------------------------


class Switches:
    """The selected route of every junction of a route, shared by the travellers of
    one network (docs/formats.md §6.2, §12.7).

    A junction's route ``k`` leaves by its TrPins[1 + k]. Junctions not set explicitly
    use their TrackShape's MainRoute (0 if the shape is not in tsection.dat).
    Index with a junction node index: ``switches[j]``, ``switches[j] = 1``.
    """

    __slots__ = ("_net", "_set")

    def __init__(self, route: Route, settings: dict[int, int] | None = None) -> None:
        self._net = _net(route)
        self._set: dict[int, int] = {}
        for j, r in (settings or {}).items():
            self.set(j, r)

    @property
    def route(self) -> Route:
        return self._net.route

    def _check(self, junction: int) -> int:
        j = int(junction)
        if not (0 < j < self._net.n_nodes and self._net.kind[j] == _JUNCTION):
            raise TravellerError(f"node {junction!r} is not a junction node")
        return j

    def main_route(self, junction: int) -> int:
        """The default route of ``junction`` (its shape's MainRoute)."""
        return self._net.main_route[self._check(junction)]

    def get(self, junction: int) -> int:
        """The selected route of ``junction`` (0 → TrPins[1], 1 → TrPins[2])."""
        j = self._check(junction)
        return self._set.get(j, self._net.main_route[j])

    __getitem__ = get

    def set(self, junction: int, route: int) -> None:
        """Select ``route`` (0 or 1; any route with a branch pin) at ``junction``."""
        j = self._check(junction)
        r = int(route)
        branches = len(self._net.pins[j]) - 1
        if not 0 <= r < max(branches, 1):
            raise TravellerError(f"junction {j} has {branches} branch pin(s): no route {route!r}")
        self._set[j] = r

    __setitem__ = set

    def reset(self, junction: int | None = None) -> None:
        """Back to the default (MainRoute) position: one junction, or all."""
        if junction is None:
            self._set.clear()
        else:
            self._set.pop(self._check(junction), None)

    def align_trailing(self, junction: int, from_node: int, pin: int | None = None) -> bool:
        """Run a trailing switch through (docs/formats.md §12.7): a train that enters ``junction``
        from ``from_node`` on branch pin i (1 or 2) sets the selected route to i − 1.
        Coming from the trunk (pin 0) changes nothing. ``pin`` (the entry pin, if
        known) settles a node linked on several pins; otherwise the last branch pin
        linking to ``from_node`` counts, as Open Rails finds the entry pin. Returns
        whether the switch is now aligned for that branch."""
        j = self._check(junction)
        pins = self._net.pins[j]
        if pin is None:
            hits = [i for i, (link, _d) in enumerate(pins) if link == from_node]
            if not hits or hits[-1] == 0:
                return False
            pin = hits[-1]
        if not (1 <= pin < len(pins)) or pins[pin][0] != from_node:
            return False
        self._set[j] = pin - 1
        return True

    def items(self) -> Iterator[tuple[int, int]]:
        """(junction, route) for the junctions set explicitly."""
        return iter(sorted(self._set.items()))

    def copy(self) -> Switches:
        s = Switches.__new__(Switches)
        s._net = self._net
        s._set = dict(self._set)
        return s

    def __len__(self) -> int:
        return len(self._set)

    def __repr__(self) -> str:
        return f"Switches({dict(self.items())!r})"
