"""A replayed activity (docs/activities.md §4.6, §6): the replay's traces, events and
summary with the clock, the timetable of booked stops, and how they are written."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

from .dispatch import clock
from .replay import ReplayResult

#: Boarding: 10 s per waiting passenger per passenger car, at least 20 s (docs §5).

TIMETABLE_COLUMNS = (
    "train",
    "station",
    "platform",
    "sched_arr",
    "sched_dep",
    "actual_arr",
    "actual_dep",
    "arr_delay_s",
    "dep_delay_s",
)


@dataclass(frozen=True, slots=True, eq=False)
class ActivityResult:
    """A replayed activity: the replay's traces, events and summary, and the timetable."""

    replay: ReplayResult
    timetable: tuple[dict, ...]
    t0: float  # clock time of replay time 0
    lines: dict = field(repr=False)  # train -> its TrackLine
    stops: dict = field(repr=False, default_factory=dict)  # train -> its Stops
    on_track: dict = field(repr=False, default_factory=dict)  # train -> (clock on, clock off)

    @property
    def failed(self) -> bool:
        """A problem: a derailment, collision, stuck train or deadlock, a service short of
        its path end (or never started), a booked stop not made (docs/activities.md §4.6)."""
        s = self.replay.summary
        return bool(
            s["derailed"]
            or s["collisions"]
            or s["stuck"]
            or s["deadlocks"]
            or s.get("not_at_end")
            or s.get("stops_missed")
        )

    def _facts(self) -> list[tuple[str, object]]:
        s = self.replay.summary
        return [
            ("activity", s.get("activity")),
            ("trains", list(s.get("trains", {}))[:8]),
            ("clock", f"{s.get('clock_start')}-{s.get('clock_end')}"),
            ("timetable_rows", len(self.timetable)),
            ("events", len(self.replay.events)),
            ("failed", self.failed),
        ]

    def __repr__(self) -> str:
        from .._display import short_repr

        return short_repr("ActivityResult", self._facts())

    def _repr_html_(self) -> str:
        from .._display import html_summary

        return html_summary(f"Activity {self.replay.summary.get('activity')}", self._facts())

    def timetable_csv(self) -> str:
        """The timetable as CSV; names from the activity are made inert for spreadsheets
        (``_outputs.spreadsheet_text``, docs/security.md §5)."""
        from .._outputs import spreadsheet_text as text

        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(TIMETABLE_COLUMNS)
        for r in self.timetable:
            w.writerow(
                [
                    text(str(r["train"])),
                    text(str(r["station"])),
                    text(str(r["platform"])),
                    clock(r["sched_arr"]),
                    clock(r["sched_dep"]),
                    clock(r["actual_arr"]),
                    clock(r["actual_dep"]),
                    "" if r["arr_delay_s"] is None else f"{r['arr_delay_s']:.0f}",
                    "" if r["dep_delay_s"] is None else f"{r['dep_delay_s']:.0f}",
                ]
            )
        return buf.getvalue()

    def write(self, out: str | Path) -> list[Path]:
        from .._fs import write_bytes_atomic

        folder = Path(out)
        files = self.replay.write(folder)
        p = folder / "timetable.csv"
        write_bytes_atomic(p, self.timetable_csv().encode())
        files.append(p)
        return files


def summary_json(result: ActivityResult) -> str:
    return json.dumps(result.replay.summary, indent=2, ensure_ascii=False)
