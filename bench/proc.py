"""
What a stretch of a benchmark cost, read from /proc: CPU of a process (all its threads) and of a
PostgreSQL cluster (its postmaster, every backend alive and every backend that has exited), RSS.
"""

from __future__ import annotations

import os
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int | str) -> list[str]:
    # The command name (field 2) may hold spaces and parentheses: split after its closing one.
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def process_cpu(pid: int) -> float:
    """CPU seconds, user and system, that the process `pid` has used with all its threads."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / TICKS


def cluster_cpu(postmaster: int) -> float:
    """
    CPU seconds the PostgreSQL cluster of `postmaster` has used, backends that have exited included.

    A backend is a child of the postmaster; once it exits and is reaped, its CPU is added to the
    postmaster's children's times, so nothing a short-lived session did is missed.
    """
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = _stat(entry.name)
        except (FileNotFoundError, ProcessLookupError):
            continue  # exited meanwhile: counted with the postmaster's children now
        pid, parent = int(entry.name), int(fields[1])
        if pid == postmaster:
            total += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
        elif parent == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / TICKS


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")
