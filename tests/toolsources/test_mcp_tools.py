"""
Tool sources against a real MCP server built with the same `mcp` package (tests/fakes/mcp_shop.py,
Streamable HTTP on localhost): the catalog and its classes, approvals by class, one key per call in
the header and in `_meta`, results and failures, a changed tool disabled until confirmed, and the
secret header nowhere but on the wire to the server.
"""

from __future__ import annotations

import json

import pytest

from apps.actions.models import ActionLog
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.ledger import store
from apps.toolsources.models import ToolSource
from tests.api.conftest import Api
from tests.fakes.mcp_shop import McpShop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

SECRET = "sk-shop-7f3a9c1e"


@pytest.fixture
def shop(settings):
    settings.WAYPOINT_TOOL_SOURCES_ALLOW_PRIVATE = True
    with McpShop(token=SECRET) as running:
        yield running


@pytest.fixture
def source(api: Api, shop) -> dict:
    made = api.post("/v1/tool-sources", {"name": "Acme shop", "url": shop.url, "headers": {"Authorization": f"Bearer {SECRET}"}})
    assert made.status_code == 201, made.content
    return made.json()


def desk(api: Api, source: dict, *tools: dict, steps: list) -> str:
    return api.create_assistant(
        model={"provider": "scripted", "rules": [{"match": "go", "steps": steps}], "fallback": [{"say": "ok"}]},
        tools=[{"kind": "mcp", "source": source["id"], **t} for t in tools])


def state(cid: str) -> dict:
    return conversation_state(queries.conversation_for(cid))


def approve(api: Api, cid: str) -> dict:
    s = api.state(cid)
    [call] = s["pending_client_actions"]
    answered = api.post(f"/v1/agent/conversations/{cid}/runs/{s['run_id']}/results", {"results": [{"call_id": call["call_id"], "output": {
        "decision": "approve", "reviewed": {"tool": call["tool"], "arguments": call["arguments"]}}}]})
    assert answered.status_code == 200, answered.content
    return answered.json()["state"]


class TestTheCatalog:
    def test_adding_a_source_lists_its_tools_with_their_classes(self, source):
        tools = {t["name"]: t for t in source["tools"]}
        assert {n: t["class"] for n, t in tools.items()} == {
            "lookup_order": "read", "update_address": "idempotent", "issue_refund": "destructive", "add_note": "destructive",
            "broken": "read"}
        assert tools["lookup_order"]["annotations"] == {"readOnlyHint": True}
        assert all(t["enabled"] and not t["changed"] and not t["missing"] for t in tools.values())
        assert source["header_names"] == ["Authorization"] and SECRET not in json.dumps(source)

    def test_a_url_that_is_not_mcp_or_refuses_the_credentials_is_422_in_words(self, api: Api, shop):
        for url, headers, words in [
            (shop.url.replace("/mcp", "/nothing"), {"Authorization": f"Bearer {SECRET}"}, "could not be listed"),
            (shop.url, {"Authorization": "Bearer wrong"}, "refused the credentials"),
        ]:
            refused = api.post("/v1/tool-sources", {"name": "x", "url": url, "headers": headers})
            assert refused.status_code == 422, refused.content
            assert words in refused.json()["error"]["message"]
        assert not ToolSource.objects.exists()

    def test_a_private_address_is_refused_unless_allowed(self, api: Api, shop, settings):
        settings.WAYPOINT_TOOL_SOURCES_ALLOW_PRIVATE = False

        url = shop.url.replace("http://", "https://")
        refused = api.post("/v1/tool-sources", {"name": "x", "url": url, "headers": {"Authorization": f"Bearer {SECRET}"}})

        assert refused.status_code == 422 and "127.0.0.1" in refused.json()["error"]["message"]
        assert shop.calls == []

    def test_an_assistant_naming_an_unknown_source_or_tool_is_422(self, api: Api, source):
        for tool, words in [({"source": "0" * 36, "tool": "lookup_order"}, "no tool source"),
                            ({"source": source["id"], "tool": "nope"}, "the source has no tool 'nope'")]:
            refused = api.post("/v1/assistants", {"name": "x", "model": {"provider": "scripted"},
                                                  "tools": [{"name": "t", "kind": "mcp", **tool}]})
            assert refused.status_code == 422 and words in json.dumps(refused.json()), refused.content


class TestCalls:
    def test_a_read_tool_runs_without_approval_and_the_model_gets_its_result(self, api: Api, source, shop):
        assistant = desk(api, source, {"name": "lookup", "tool": "lookup_order"},
                         steps=[{"call": "lookup", "arguments": {"order_id": "A-1"}}, {"say": "Found: {result}"}])

        cid = api.start("go", assistant=assistant)["conversation_id"]

        [call] = shop.of("lookup_order")
        assert call["arguments"] == {"order_id": "A-1"}
        assert "shipped" in state(cid)["messages"][-1]["text"]

    def test_a_destructive_tool_waits_for_approval_then_is_called_once_with_its_key(self, api: Api, source, shop):
        assistant = desk(api, source, {"name": "refund", "tool": "issue_refund"},
                         steps=[{"call": "refund", "arguments": {"order_id": "A-1", "amount": 20}}, {"say": "Refunded: {result}"}])
        cid = api.start("go", assistant=assistant)["conversation_id"]
        assert api.state(cid)["pending_client_actions"][0]["kind"] == "approval" and shop.of("issue_refund") == []

        done = approve(api, cid)

        [call] = shop.of("issue_refund")
        log = ActionLog.objects.get(conversation_id=cid, tool="refund")
        assert call["key"] == call["meta_key"] == f"{log.turn_id}:{log.call_id}" == log.idempotency_key
        assert "R-1" in done["messages"][-1]["text"]

    def test_requires_approval_false_turns_a_destructive_tool_s_approval_off(self, api: Api, source, shop):
        assistant = desk(api, source, {"name": "note", "tool": "add_note", "requires_approval": False},
                         steps=[{"call": "note", "arguments": {"order_id": "A-1", "note": "hi"}}, {"say": "{result}"}])

        cid = api.start("go", assistant=assistant)["conversation_id"]

        assert len(shop.of("add_note")) == 1 and state(cid)["messages"][-1]["text"] == '{"result": "noted on A-1"}'

    def test_an_error_result_is_a_failed_call_the_model_sees(self, api: Api, source, shop):
        assistant = desk(api, source, {"name": "broken", "tool": "broken"}, steps=[{"call": "broken"}, {"say": "Oops: {result}"}])

        cid = api.start("go", assistant=assistant)["conversation_id"]

        assert state(cid)["messages"][-1]["text"].startswith('Oops: {"error": ')
        assert ActionLog.objects.get(conversation_id=cid, tool="broken").status == "failed"

    def test_arguments_that_do_not_match_the_schema_fail_without_a_call(self, api: Api, source, shop):
        assistant = desk(api, source, {"name": "lookup", "tool": "lookup_order"},
                         steps=[{"call": "lookup", "arguments": {"order": 5}}, {"say": "{result}"}])

        cid = api.start("go", assistant=assistant)["conversation_id"]

        assert shop.calls == [] and "input schema" in state(cid)["messages"][-1]["text"]

    def test_a_long_result_is_cut_for_the_model_and_kept_whole_in_the_log(self, api: Api, source, shop):
        assistant = desk(api, source, {"name": "lookup", "tool": "lookup_order", "max_result_chars": 100},
                         steps=[{"call": "lookup", "arguments": {"order_id": "A" * 300}}, {"say": "{result}"}])

        cid = api.start("go", assistant=assistant)["conversation_id"]

        finished = next(e for e in store.read(cid) if e.kind == "action_finished")
        assert "A" * 300 in json.dumps(finished.payload["output"])
        assert finished.payload["model_output"]["note"].startswith("the result was cut at 100 of its")
        assert "cut at 100" in state(cid)["messages"][-1]["text"]


class TestReviewedDefinitions:
    def test_a_changed_tool_is_disabled_until_confirmed(self, api: Api, source, shop):
        assistant = desk(api, source, {"name": "lookup", "tool": "lookup_order"},
                         steps=[{"call": "lookup", "arguments": {"order_id": "A-1"}}, {"say": "{result}"}])
        shop.server._tool_manager._tools["lookup_order"].description = "Look an order up, and email its owner"

        refreshed = api.post(f"/v1/tool-sources/{source['id']}/refresh").json()

        lookup = next(t for t in refreshed["tools"] if t["name"] == "lookup_order")
        assert lookup["changed"] and not lookup["enabled"]
        cid = api.start("go", assistant=assistant)["conversation_id"]
        assert shop.calls == [] and "disabled until someone confirms it" in state(cid)["messages"][-1]["text"]

        confirmed = api.post(f"/v1/tool-sources/{source['id']}/tools/lookup_order/confirm").json()
        assert next(t for t in confirmed["tools"] if t["name"] == "lookup_order")["enabled"]
        cid = api.start("go", assistant=assistant)["conversation_id"]
        assert len(shop.of("lookup_order")) == 1

    def test_confirming_a_definition_that_changed_again_since_it_was_shown_confirms_nothing(self, api: Api, source, shop):
        from apps.conversations.errors import BadInput
        from apps.toolsources import actions as sources

        tools = shop.server._tool_manager._tools
        tools["lookup_order"].description = "Look an order up, second version"
        shown = next(t for t in api.post(f"/v1/tool-sources/{source['id']}/refresh").json()["tools"] if t["name"] == "lookup_order")
        tools["lookup_order"].description = "Look an order up, third version"
        api.post(f"/v1/tool-sources/{source['id']}/refresh")

        with pytest.raises(BadInput, match="changed again since it was shown"):
            sources.confirm_tool(source["id"], "lookup_order", fingerprint=shown["fingerprint"])
        assert not next(t for t in api.get(f"/v1/tool-sources/{source['id']}").json()["tools"] if t["name"] == "lookup_order")["enabled"]

    def test_a_tool_gone_from_the_server_is_missing_and_its_call_fails(self, api: Api, source, shop):
        assistant = desk(api, source, {"name": "note", "tool": "add_note", "requires_approval": False},
                         steps=[{"call": "note", "arguments": {"order_id": "A-1", "note": "x"}}, {"say": "{result}"}])
        shop.server._tool_manager._tools.pop("add_note")

        refreshed = api.post(f"/v1/tool-sources/{source['id']}/refresh").json()

        assert next(t for t in refreshed["tools"] if t["name"] == "add_note")["missing"]
        cid = api.start("go", assistant=assistant)["conversation_id"]
        assert "no longer on Acme shop" in state(cid)["messages"][-1]["text"]

    def test_a_deleted_source_refuses_its_tools(self, api: Api, source, shop):
        assistant = desk(api, source, {"name": "lookup", "tool": "lookup_order"},
                         steps=[{"call": "lookup", "arguments": {"order_id": "A-1"}}, {"say": "{result}"}])

        assert api.delete(f"/v1/tool-sources/{source['id']}").status_code == 204

        cid = api.start("go", assistant=assistant)["conversation_id"]
        assert shop.calls == [] and "deleted" in state(cid)["messages"][-1]["text"]
        assert api.get(f"/v1/tool-sources/{source['id']}").status_code == 404


class TestTheSecretHeader:
    def test_it_is_nowhere_but_on_the_wire(self, api: Api, source, shop, client, django_user_model, capfd):
        from django.db import connection

        assistant = desk(api, source, {"name": "refund", "tool": "issue_refund"},
                         steps=[{"call": "refund", "arguments": {"order_id": "A-1", "amount": 20}}, {"say": "{result}"}])
        cid = api.start("go", assistant=assistant)["conversation_id"]
        approve(api, cid)

        assert shop.of("issue_refund")[0]["headers"]["authorization"] == f"Bearer {SECRET}"
        with connection.cursor() as cursor:
            for table in ("ledger_event", "tool_sources", "action_logs", "tool_usage_logs", "workflow_logs", "webhook_deliveries",
                          "agent_assistant"):
                cursor.execute(f"SELECT * FROM {table}")  # noqa: S608 - fixed table names
                assert SECRET not in json.dumps(cursor.fetchall(), default=str), table
        assert SECRET not in json.dumps(api.state(cid)) and SECRET not in json.dumps(api.get("/v1/tool-sources").json())
        staff = django_user_model.objects.create_user("ops", password="x", is_staff=True)
        client.force_login(staff)
        for path in (f"/staff/conversations/{cid}/", "/staff/tool-sources/"):
            page = client.get(path)
            assert page.status_code == 200 and SECRET not in page.content.decode(), path
        out, err = capfd.readouterr()
        assert SECRET not in out + err


class TestEarlierProtocolVersions:
    def test_a_server_of_the_handshake_era_is_listed_and_called(self, api: Api, settings):
        settings.WAYPOINT_TOOL_SOURCES_ALLOW_PRIVATE = True
        with McpShop(legacy=True) as old:
            made = api.post("/v1/tool-sources", {"name": "Old shop", "url": old.url})
            assert made.status_code == 201, made.content
            assistant = desk(api, made.json(), {"name": "lookup", "tool": "lookup_order"},
                             steps=[{"call": "lookup", "arguments": {"order_id": "A-1"}}, {"say": "{result}"}])
            cid = api.start("go", assistant=assistant)["conversation_id"]

        [call] = old.of("lookup_order")
        assert call["key"] and "shipped" in state(cid)["messages"][-1]["text"]
        # The probe of the newest version was refused, and the call went out under the handshake era's.
        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

        assert call["headers"]["mcp-protocol-version"] in HANDSHAKE_PROTOCOL_VERSIONS
