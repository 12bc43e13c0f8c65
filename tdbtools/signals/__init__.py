"""Signals: scripts, signal objects and the signalling runtime (docs/signals.md)."""
