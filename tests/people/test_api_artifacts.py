import pytest
from django.core.cache import cache

from tests.api.conftest import Api
from tests.people.test_artifacts import ARTIFACT_TOOLS, REPORT

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

CONFIG = {
    "model": {"provider": "scripted", "rules": [{"match": "report", "steps": [
        {"call": "make_report", "arguments": {"name": "orders.csv", "media_type": "text/csv", "content": REPORT}},
        {"say": "Ready."},
    ]}]},
    "tools": ARTIFACT_TOOLS,
}


@pytest.fixture
def api(db):
    from apps.workspaces.keys import create_api_key

    cache.clear()  # rate-limit windows live in the cache
    return Api(create_api_key(name="backend")[1])


@pytest.fixture
def reported(api):
    started = api.start("a report please", assistant=api.create_assistant(**CONFIG))
    return started, api.state(started["conversation_id"])["artifacts"][0]


def ack_path(conversation_id, artifact_id):
    return f"/v1/agent/conversations/{conversation_id}/artifacts/{artifact_id}/ack"


class TestAcknowledgeArtifact:
    def test_the_application_acknowledges_receipt(self, api, reported):
        started, artifact = reported

        response = api.post(ack_path(started["conversation_id"], artifact["artifact_id"]))

        assert response.status_code == 200, response.content
        assert (response.json()["status"], response.json()["acknowledged_by"]) == ("acknowledged", "api:backend")
        recovery = api.state(started["conversation_id"])["artifact_recovery"]
        assert [c["outcome"] for c in recovery] == ["acknowledged"]

    def test_acknowledging_twice_answers_the_same(self, api, reported):
        started, artifact = reported
        first = api.post(ack_path(started["conversation_id"], artifact["artifact_id"])).json()

        second = api.post(ack_path(started["conversation_id"], artifact["artifact_id"]))

        assert second.status_code == 200 and second.json() == first

    def test_an_unknown_artifact_is_not_found(self, api, reported):
        started, _ = reported

        response = api.post(ack_path(started["conversation_id"], "art_0000"))

        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"

    def test_a_malformed_artifact_id_is_not_found(self, api, reported):
        started, _ = reported

        response = api.post(ack_path(started["conversation_id"], "..%2F..%2Fetc"))

        assert response.status_code == 404

    def test_a_token_without_write_permission_may_not_acknowledge(self, api, reported):
        started, artifact = reported
        api.post(f"/v1/agent/conversations/{started['conversation_id']}/participants",
                 {"persona": "shop:viewer", "permissions": ["view"]})
        viewer = api.post(f"/v1/agent/conversations/{started['conversation_id']}/tokens", {"persona": "shop:viewer"}).json()["token"]

        response = api.as_(viewer).post(ack_path(started["conversation_id"], artifact["artifact_id"]))

        assert response.status_code == 403


class TestStateOverTheApi:
    def test_the_state_shows_phase_conditions_and_participants(self, api):
        started = api.start("hello", persona="shop:alice")

        state = api.state(started["conversation_id"])

        assert (state["phase"], state["display_phase"], state["visibility"]) == ("open", "Active", "private")
        assert [c["type"] for c in state["conditions"]] == ["Ready", "Progressing", "Degraded"]
        assert state["participants"][0]["persona"] == "shop:alice" and state["participants"][0]["role"] == "owner"
