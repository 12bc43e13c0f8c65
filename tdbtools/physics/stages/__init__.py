"""The stages of a replay (docs/development.md §2), each in its own module owning its
state and its fast paths; :class:`~tdbtools.physics.replay.Replay` runs them in order:

- :mod:`.setup`: the trains placed on their lines, consists read, drivers made, the
  :class:`~.setup.Layout` every stage reads (once, before the first step);
- :mod:`.driving`: the drivers' controls, one by one or as a batch; trains that finished;
- :mod:`.forces`: per car gravity, resistances, traction and brakes; energy and bogies
  after the engine moved the cars (the one place that picks numpy or a kernel);
- :mod:`.watching`: engine contacts, derailments, line ends, collision checks, as events;
- :mod:`.recording`: traces, and the result (traces, events, summary).

:mod:`.policy` holds what a kind of replay (an activity) changes about all this.
"""
