"""
A server process killed (SIGKILL) while a reassignment is written but not committed leaves one holder.

The reassignment holds the conversation's row lock until it commits; a colleague's take-over from
another process waits for it. The kill rolls the reassignment back, the waiting take-over then
goes through, and the log replays and verifies with exactly the changes that committed.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import time

import pytest

from tests.process import probe
from tests.servers import PYTHON, ROOT, ServerDatabase

pytestmark = pytest.mark.postgres

LAB = {"name": "Reassignment lab", "handoff": {"enabled": True},
       "model": {"provider": "scripted", "rules": [], "fallback": [{"say": "You said: {message}"}]}}


def started(database: ServerDatabase, arguments: dict) -> subprocess.Popen:
    """A probe step in a process of its own, as a server's would run it."""
    code = f"from tests.process.probe import main; main('change_control', {json.dumps(arguments)!r})"
    return subprocess.Popen([PYTHON, "manage.py", "shell", "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **database.env, "WAYPOINT_RUNNER": "inline", "WAYPOINT_FAULT_AT": ""})


def wait_for_line(process: subprocess.Popen, line: str, timeout: float = 60) -> None:
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline, seen = time.monotonic() + timeout, []
    while time.monotonic() < deadline:
        if selector.select(timeout=0.5):
            text = process.stdout.readline()
            seen.append(text)
            if text.strip() == line:
                return
            if not text and process.poll() is not None:
                break
    raise AssertionError(f"no {line!r} from the probe:\n{''.join(seen)}")


def waiting_for_the_lock(database: ServerDatabase, process: subprocess.Popen, timeout: float = 60) -> None:
    """Until a session of the database waits for a lock (the rescue, blocked by the uncommitted reassignment)."""
    import psycopg

    deadline = time.monotonic() + timeout
    with psycopg.connect(database.url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            assert process.poll() is None, process.stdout.read()
            waiting = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                   "AND wait_event_type = 'Lock'").fetchone()[0]
            if waiting:
                return
            time.sleep(0.1)
    raise AssertionError("the rescue never waited for the conversation's lock")


def test_a_kill_while_a_reassignment_commits_leaves_one_holder():
    database = ServerDatabase("reassignment")
    try:
        lab = probe.run(database, "lab", config=LAB, conversations=1, message="hello")
        cid = lab["conversations"][0]["conversation_id"]
        probe.run(database, "change_control", conversation_id=cid, action="take", staff="staff:sam", name="Sam")

        handing = started(database, {"conversation_id": cid, "action": "assign", "staff": "staff:sam", "to": "staff:dana",
                                     "to_name": "Dana", "hang": True})
        wait_for_line(handing, "HANGING")
        rescuing = started(database, {"conversation_id": cid, "action": "take", "staff": "staff:lee", "name": "Lee",
                                      "from_": "staff:sam"})
        waiting_for_the_lock(database, rescuing)

        os.kill(handing.pid, signal.SIGKILL)
        assert handing.wait(timeout=30) == -signal.SIGKILL
        rescued, _ = rescuing.communicate(timeout=60)

        assert rescuing.returncode == 0, rescued
        result = json.loads(next(line for line in reversed(rescued.splitlines()) if line.startswith(probe.MARK))[len(probe.MARK):])
        assert result["mode"] == "human" and result["staff"] == {"id": "staff:lee", "name": "Lee"}
        checked = probe.run(database, "check", conversation_ids=[cid])[cid]
        assert checked["replay"]["ok"] and checked["verify"]["ok"], checked
        changes = probe.run(database, "control_changes", conversation_id=cid)
        assert changes == [{"kind": "control_taken", "staff": "staff:sam", "payload": {"staff": "staff:sam", "name": "Sam", "reason": ""}},
                           {"kind": "control_taken", "staff": "staff:lee",
                            "payload": {"staff": "staff:lee", "name": "Lee", "reason": "", "from": "staff:sam"}}]
    finally:
        database.drop()
