"""What a bench run reports (rows, the headline ratios, targets, facts and notes) and its tables."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from bench.measure import percentile


@dataclass
class Row:
    section: str
    what: str
    rate: float | None = None  # per second
    p50_ms: float | None = None
    p99_ms: float | None = None
    note: str = ""


@dataclass
class Target:
    goal: str
    measured: str
    met: bool | None  # None: could not be measured


@dataclass
class Report:
    headline: list[Row] = field(default_factory=list)  # Waypoint ÷ each baseline
    rows: list[Row] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    figures: dict[str, float] = field(default_factory=dict)

    def latency_row(self, section: str, what: str, seconds: list[float], *, wall: float | None = None, note: str = "") -> Row:
        row = Row(section, what, rate=(len(seconds) / wall) if wall else None,
                  p50_ms=statistics.median(seconds) * 1000, p99_ms=percentile(seconds, 99) * 1000, note=note)
        self.rows.append(row)
        return row


def fmt(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def table(report: Report) -> str:
    lines = ["| section | measurement | per second | p50 ms | p99 ms | note |", "|---|---|---:|---:|---:|---|"]
    for r in report.rows:
        lines.append(f"| {r.section} | {r.what} | {fmt(r.rate)} | {fmt(r.p50_ms, 2)} | {fmt(r.p99_ms, 2)} | {r.note} |")
    return "\n".join(lines)


def headline_table(report: Report) -> str:
    lines = ["| | Waypoint ÷ baseline |", "|---|---|"]
    for r in report.headline:
        lines.append(f"| {r.what} | {r.note} |")
    return "\n".join(lines)


def targets_table(report: Report) -> str:
    lines = ["| target | measured | met |", "|---|---|---|"]
    for t in report.targets:
        lines.append(f"| {t.goal} | {t.measured} | {'yes' if t.met else 'no' if t.met is False else 'not measured'} |")
    return "\n".join(lines)
