"""
Model endpoints are the deployment's configuration: the deployment's model key goes only where the
deployment sends it (WAYPOINT_OPENAI_BASE_URL, WAYPOINT_MODEL_BASE_URLS), never to a URL an API
caller names, and an endpoint besides the deployment's own gets the webhooks' private-address rule.
"""

from __future__ import annotations

import pytest

from apps.agent.models import Assistant
from tests.api.conftest import Api
from tests.conftest import SUPPORT_CONFIG
from tests.fakes import vendor as wire

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

KEY = "sk-deployment-secret-0123456789"


@pytest.fixture
def deployment(settings):
    settings.WAYPOINT_OPENAI_API_KEY = KEY
    settings.WAYPOINT_OPENAI_BASE_URL = "https://models.internal.example/v1"
    settings.WAYPOINT_MODEL_BASE_URLS = []
    settings.WAYPOINT_MODEL_RETRY_SECONDS = 0
    settings.WAYPOINT_WEBHOOK_ALLOW_PRIVATE = False
    return settings


@pytest.fixture
def listener():
    with wire.Vendor() as vendor:
        vendor.queue(wire.completion(content="Hello!"))
        yield vendor


def openai_model(base_url: str) -> dict:
    return {"provider": "openai", "model": "gpt-4o-mini", "base_url": base_url}


def test_an_assistant_naming_another_base_url_is_refused_and_the_listener_never_hears_of_it(api: Api, deployment, listener):
    response = api.post("/v1/assistants", {**SUPPORT_CONFIG, "model": openai_model(listener.base_url)})

    assert response.status_code == 422
    body = response.json()["error"]
    assert body["code"] == "invalid_config" or "model.base_url" in body["message"]
    assert "model.base_url: not a model endpoint of this deployment" in body["message"]
    assert not Assistant.objects.exists()
    assert listener.requests == []


def test_an_assistant_stored_before_the_rule_fails_its_turn_and_sends_the_key_nowhere(api: Api, deployment, listener):
    # Written straight to the table, as an assistant created before model endpoints were checked.
    config = {**SUPPORT_CONFIG, "model": openai_model(listener.base_url)}
    assistant = Assistant.objects.create(name="Old one", config=config)

    started = api.start("hello", assistant=str(assistant.id))

    state = api.state(started["conversation_id"])
    assert state["run_status"] == "failed" and "not one this deployment allows" in state["error"]
    assert listener.requests == [] and listener.headers == []


def test_an_allowlisted_endpoint_on_a_private_address_is_refused_like_a_webhook(api: Api, deployment, listener):
    deployment.WAYPOINT_MODEL_BASE_URLS = [listener.base_url]
    assistant = api.create_assistant(model=openai_model(listener.base_url))

    started = api.start("hello", assistant=assistant)

    state = api.state(started["conversation_id"])
    assert state["run_status"] == "failed" and "private address" in state["error"]
    assert listener.requests == []


def test_an_allowlisted_endpoint_gets_the_key_when_private_addresses_are_allowed(api: Api, deployment, listener):
    deployment.WAYPOINT_MODEL_BASE_URLS = [listener.base_url + "/"]
    deployment.WAYPOINT_WEBHOOK_ALLOW_PRIVATE = True
    assistant = api.create_assistant(model=openai_model(listener.base_url))

    started = api.start("hello", assistant=assistant)

    assert api.state(started["conversation_id"])["messages"][-1]["text"] == "Hello!"
    assert [h["authorization"] for h in listener.headers] == [f"Bearer {KEY}"]


def test_the_deployments_own_endpoint_gets_the_key_without_naming_it(api: Api, deployment, listener):
    deployment.WAYPOINT_OPENAI_BASE_URL = listener.base_url  # an operator's local model server
    assistant = api.create_assistant(model={"provider": "openai", "model": "gpt-4o-mini"})

    started = api.start("hello", assistant=assistant)

    assert api.state(started["conversation_id"])["messages"][-1]["text"] == "Hello!"
    assert [h["authorization"] for h in listener.headers] == [f"Bearer {KEY}"]
