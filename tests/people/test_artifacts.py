import hashlib

import pytest
from django.db import IntegrityError, connection, transaction

from apps.conversations.errors import NotFound
from apps.conversations.queries import conversation_for
from apps.workspaces import actions as workspace
from apps.workspaces.models import Artifact
from apps.workspaces.queries import artifact_recovery_state
from apps.workspaces.storage import workspace_for
from tests.people.conftest import assert_replays, events_of, rules, state, turn

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

REPORT = "order,total\nA-1,20\n"
ARTIFACT_TOOLS = [
    {"name": "make_report", "kind": "server", "action": "write_artifact"},
    {"name": "save_note", "kind": "server", "action": "write_file"},
]


def reporting(make_assistant):
    return make_assistant(
        model=rules(
            ("report", [{"call": "make_report", "arguments": {"name": "orders.csv", "media_type": "text/csv", "content": REPORT,
                                                              "source": "crm:orders", "revision": "r42"}},
                        {"say": "Your report is ready."}]),
            ("copy", [{"call": "save_note", "arguments": {"path": "draft.md", "content": "# Draft"}},
                      {"call": "make_report", "arguments": {"name": "draft.md", "media_type": "text/markdown", "from_path": "draft.md"}},
                      {"say": "Copied."}]),
        ),
        tools=ARTIFACT_TOOLS,
    )


def recovery(cid):
    return artifact_recovery_state(conversation_for(cid))


@pytest.fixture
def reported(start, make_assistant):
    """A conversation whose first turn made one artifact; returns (conversation id, artifact)."""
    cid = start("a report please", assistant=reporting(make_assistant))["conversation_id"]
    return cid, state(cid)["artifacts"][0]


class TestCreate:
    def test_a_tool_creates_an_artifact_with_its_source_and_content_hash(self, reported):
        cid, artifact = reported

        assert (artifact["name"], artifact["media_type"], artifact["status"]) == ("orders.csv", "text/csv", "created")
        assert artifact["sha256"] == hashlib.sha256(REPORT.encode()).hexdigest() and artifact["size"] == len(REPORT)
        assert artifact["source"] == {"identity": "crm:orders", "revision": "r42"}
        assert workspace_for(cid).artifact_content(artifact["path"]) == REPORT.encode()
        assert [e.payload["artifact_id"] for e in events_of(cid, "artifact_created")] == [artifact["artifact_id"]]
        assert_replays(cid)

    def test_an_artifact_made_from_a_workspace_file_names_the_file_and_its_revision(self, start, make_assistant):
        cid = start("copy my draft", assistant=reporting(make_assistant))["conversation_id"]

        [artifact] = state(cid)["artifacts"]

        assert artifact["source"] == {"identity": "workspace:draft.md",
                                      "revision": "sha256:" + hashlib.sha256(b"# Draft").hexdigest()}

    def test_creating_again_for_the_same_call_returns_the_first_artifact(self, reported, clock):
        cid, artifact = reported

        again = workspace_for(cid).create_artifact(turn_id=artifact["turn_id"], call_id=artifact["call_id"], name="other.csv",
                                                   content="something else", now=clock())

        assert again["artifact_id"] == artifact["artifact_id"] and again["sha256"] == artifact["sha256"]
        assert Artifact.objects.filter(conversation_id=cid).count() == 1
        assert len(events_of(cid, "artifact_created")) == 1

    def test_the_database_refuses_a_second_artifact_for_one_call(self, reported):
        cid, artifact = reported
        first = Artifact.objects.get(artifact_id=artifact["artifact_id"])

        with pytest.raises(IntegrityError), transaction.atomic():
            Artifact.objects.create(**{**_fields(first), "artifact_id": "art_second"})

    def test_a_turn_of_another_conversation_is_refused(self, reported, start, clock):
        _, artifact = reported
        other = start("hello")["conversation_id"]

        with pytest.raises(ValueError, match="no such turn in this conversation"):
            workspace_for(other).create_artifact(turn_id=artifact["turn_id"], call_id="call_x", name="x.txt", content="x",
                                                 now=clock())


def _fields(artifact: Artifact) -> dict:
    return {f.attname: getattr(artifact, f.attname) for f in Artifact._meta.concrete_fields}


class TestAcknowledge:
    def test_acknowledging_records_who_received_it(self, reported, clock):
        cid, artifact = reported

        acknowledged = workspace.acknowledge_artifact(conversation_id=cid, artifact_id=artifact["artifact_id"],
                                                      persona="shop:backend", now=clock())

        assert (acknowledged["status"], acknowledged["acknowledged_by"]) == ("acknowledged", "shop:backend")
        [entry] = events_of(cid, "artifact_acknowledged")
        assert entry.actor == "shop:backend" and entry.turn_id == artifact["turn_id"]
        assert_replays(cid)

    def test_acknowledging_again_records_nothing(self, reported, clock):
        cid, artifact = reported
        workspace.acknowledge_artifact(conversation_id=cid, artifact_id=artifact["artifact_id"], persona="shop:backend", now=clock())

        again = workspace.acknowledge_artifact(conversation_id=cid, artifact_id=artifact["artifact_id"], persona="shop:other",
                                               now=clock())

        assert again["acknowledged_by"] == "shop:backend"
        assert len(events_of(cid, "artifact_acknowledged")) == 1

    def test_an_artifact_of_another_conversation_is_not_found(self, reported, start, clock):
        _, artifact = reported
        other = start("hello")["conversation_id"]

        with pytest.raises(NotFound):
            workspace.acknowledge_artifact(conversation_id=other, artifact_id=artifact["artifact_id"], persona="shop:backend",
                                           now=clock())


class TestRecoveryState:
    def test_an_existing_artifact_not_yet_received_is_unacknowledged(self, reported):
        cid, artifact = reported

        [call] = recovery(cid)

        assert (call["outcome"], call["call_status"]) == ("unacknowledged", "succeeded")
        assert [a["artifact_id"] for a in call["artifacts"]] == [artifact["artifact_id"]]

    def test_the_conversation_state_carries_the_recovery_state(self, reported):
        cid, artifact = reported

        [call] = state(cid)["artifact_recovery"]

        assert (call["outcome"], call["artifact_ids"]) == ("unacknowledged", [artifact["artifact_id"]])

    def test_a_received_artifact_is_acknowledged(self, reported, clock):
        cid, artifact = reported
        workspace.acknowledge_artifact(conversation_id=cid, artifact_id=artifact["artifact_id"], persona="shop:backend", now=clock())

        assert recovery(cid)[0]["outcome"] == "acknowledged"

    def test_an_artifact_whose_content_is_gone_is_missing(self, reported):
        cid, artifact = reported
        (workspace_for(cid).root / artifact["path"]).unlink()

        [call] = recovery(cid)

        assert call["outcome"] == "missing" and "content is gone" in call["detail"]
        assert {c["type"]: c["reason"] for c in state(cid)["conditions"]}["Degraded"] == "ArtifactMissing"

    def test_a_call_that_ran_without_leaving_an_artifact_is_missing(self, reported):
        cid, artifact = reported
        Artifact.objects.filter(artifact_id=artifact["artifact_id"]).delete()  # damage: the record is lost
        (workspace_for(cid).root / artifact["path"]).unlink()

        [call] = recovery(cid)

        assert (call["outcome"], call["detail"]) == ("missing", "the call ran but no artifact exists")

    def test_a_second_file_for_one_call_is_a_duplicate(self, reported):
        cid, artifact = reported
        directory = (workspace_for(cid).root / artifact["path"]).parent
        (directory / "orders (1).csv").write_text(REPORT)

        [call] = recovery(cid)

        assert call["outcome"] == "duplicate" and call["stray_files"] == [artifact["path"].rsplit("/", 1)[0] + "/orders (1).csv"]

    def test_a_later_turn_does_not_change_an_earlier_calls_outcome(self, reported, clock):
        cid, _ = reported

        turn(cid, "another report", clock)

        assert [c["outcome"] for c in recovery(cid)] == ["unacknowledged", "unacknowledged"]


@pytest.mark.django_db  # in one transaction: the dropped constraint comes back when the test's transaction rolls back
class TestDuplicateRecords:
    def test_two_records_for_one_call_are_a_duplicate(self, start, clock):
        started = start("hello")
        cid = started["conversation_id"]
        first = workspace_for(cid).create_artifact(turn_id=started["turn_id"], call_id="call_1_1", name="a.txt", content="a",
                                                   now=clock())
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # PostgreSQL alters no table with deferred checks pending
            cursor.execute("ALTER TABLE artifacts DROP CONSTRAINT artifact_one_per_call")
        Artifact.objects.create(**{**_fields(Artifact.objects.get(artifact_id=first["artifact_id"])), "artifact_id": "art_damage"})

        [call] = recovery(cid)

        assert call["outcome"] == "duplicate" and call["detail"] == "2 artifact records for one call"
        assert sorted(a["artifact_id"] for a in call["artifacts"]) == sorted([first["artifact_id"], "art_damage"])
