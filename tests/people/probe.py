"""
Django-side steps of the artifact crash tests, each run in its own short-lived `manage.py shell`
on a server database (with the inline runner), so that a step can really die at a fault boundary.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from tests.servers import PYTHON, ROOT

MARK = "PROBE-RESULT "


def start(*, config: dict[str, Any], count: int) -> list[str]:
    """Create an assistant and `count` conversations on it (each with one plain turn)."""
    from django.utils import timezone

    from apps.agent import actions
    from apps.agent.actions import create_assistant

    assistant_id = str(create_assistant(config=config).id)
    return [
        actions.start_conversation(assistant_id=assistant_id, message="hello", persona="shop:alice", edge="api",
                                   now=timezone.now())["conversation_id"]
        for _ in range(count)
    ]


def turn(*, conversation_id: str, message: str) -> str:
    from django.utils import timezone

    from apps.agent import actions

    return actions.start_turn(conversation_id=conversation_id, message=message, persona="shop:alice", edge="api",
                              now=timezone.now())["turn_id"]


def acknowledge(*, conversation_id: str) -> dict[str, Any]:
    from django.utils import timezone

    from apps.workspaces.actions import acknowledge_artifact
    from apps.workspaces.models import Artifact

    artifact = Artifact.objects.get(conversation_id=conversation_id)
    return acknowledge_artifact(conversation_id=conversation_id, artifact_id=artifact.artifact_id, persona="shop:backend",
                                now=timezone.now())


def acknowledge_and_observe(*, conversation_id: str, conversation_ids: list[str]) -> dict[str, Any]:
    return {"acknowledged": acknowledge(conversation_id=conversation_id), "observed": observe(conversation_ids=conversation_ids)}


def observe(*, conversation_ids: list[str]) -> dict[str, Any]:
    from apps.conversations.queries import conversation_for
    from apps.ledger import store
    from apps.ledger.replay import replay
    from apps.workspaces.queries import artifact_recovery_state
    from apps.workspaces.storage import workspace_for

    out = {}
    for cid in conversation_ids:
        kinds = [e.kind for e in store.read(cid)]
        out[cid] = {
            "recovery": artifact_recovery_state(conversation_for(cid)),
            "artifacts_created": kinds.count("artifact_created"),
            "acknowledgments": kinds.count("artifact_acknowledged"),
            "files": sorted(p for files in workspace_for(cid).artifact_files().values() for p in files),
            "replay_ok": replay(cid).ok,
        }
    return out


def main(name: str, arguments: str) -> None:
    result = globals()[name](**json.loads(arguments))
    print(MARK + json.dumps(result, default=str))


def run(database, name: str, *, fault: str = "", **arguments: Any) -> tuple[int, Any]:
    """Run one step in its own process; its exit code and result (None when it died first)."""
    code = f"from tests.people.probe import main; main({name!r}, {json.dumps(arguments)!r})"
    env = {**os.environ, **database.env, "WAYPOINT_RUNNER": "inline", "WAYPOINT_FAULT_AT": fault}
    done = subprocess.run([PYTHON, "manage.py", "shell", "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    if done.returncode == 0 and not lines:
        raise RuntimeError(f"probe {name} printed no result:\n{done.stdout}\n{done.stderr}")
    if done.returncode not in (0, 137):
        raise RuntimeError(f"probe {name} failed with {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.returncode, json.loads(lines[-1][len(MARK):]) if lines else None
