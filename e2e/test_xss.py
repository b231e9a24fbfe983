"""
An XSS corpus through every way text reaches the customer page: the customer's own message echoed by
the model, tool results, tool arguments on approval and client-tool cards, a tool name the model made
up, and the assistant's name. Nothing may execute, and no active markup may reach the DOM.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.fakes.vendor import Vendor, completion, tool_call
from tests.servers import DaphneServer, ServerDatabase

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

CORPUS = [
    "<script>window.__xss=1</script>",
    '<img src=x onerror="window.__xss=1">',
    '<svg onload="window.__xss=1"></svg>',
    '"><img src=x onerror=window.__xss=1>',
    "'><script>window.__xss=1</script>",
    "[click](javascript:window.__xss=1)",
    '![x](x" onerror="window.__xss=1)',
    '<iframe srcdoc="<script>parent.__xss=1</script>"></iframe>',
    '<a href="javascript:window.__xss=1">link</a>',
    '<details open ontoggle="window.__xss=1">x</details>',
    "<math><mi xlink:href=\"javascript:window.__xss=1\">x</mi></math>",
    "{{ 7|add:7 }} {% now 'Y' %}",
]
PAYLOAD = "\n".join(CORPUS)
BAD_TOOL = '<img src=x onerror="window.__xss=1">'

# Active markup that must never appear inside the conversation, whatever the text was.
ACTIVE = ("script:not([src]), [onerror], [onload], [ontoggle], iframe[srcdoc], a[href^='javascript:' i], "
          "[href^='javascript:' i], math, svg [onload]")


def vendor_config(base_url: str) -> dict:
    """A model behind an OpenAI-compatible vendor, which may name any tool it likes."""
    return {"name": "Vendor model", "model": {"provider": "openai", "model": "gpt-4o-mini", "base_url": base_url}, "tools": []}


def xss_config() -> dict:
    return {
        "name": 'Shop <img src=x onerror="window.__xss=1">',
        "model": {
            "provider": "scripted",
            "rules": [
                {"match": "^tool", "steps": [{"call": "lookup", "arguments": {"q": PAYLOAD}}, {"say": "Result: {result}"}]},
                {"match": "^approve", "steps": [{"call": "refund", "arguments": {"note": PAYLOAD}}, {"say": "Refund: {result}"}]},
                {"match": "^ask", "steps": [{"call": "pick", "arguments": {"label": PAYLOAD}}, {"say": "Picked: {result}"}]},
            ],
            "fallback": [{"say": "You said: {message}"}],
        },
        "tools": [
            {"name": "lookup", "kind": "server", "action": "echo"},
            {"name": "refund", "kind": "server", "action": "echo", "requires_approval": True},
            {"name": "pick", "kind": "client", "parameters": {"type": "object", "properties": {"label": {"type": "string"}}}},
        ],
    }


@pytest.fixture(scope="module")
def vendor():
    with Vendor() as vendor:
        yield vendor


@pytest.fixture(scope="module")
def xss_server(vendor):
    database = ServerDatabase("xss")
    endpoint = {"WAYPOINT_OPENAI_BASE_URL": vendor.base_url}
    for config in (xss_config(), vendor_config(vendor.base_url)):
        text = json.dumps(config)
        database.manage("shell", "-c", f"import json; from apps.agent.actions import create_assistant; create_assistant(config=json.loads({text!r}))",
                        env=endpoint)
    server = DaphneServer(database, env={"WAYPOINT_OPENAI_API_KEY": "sk-test", **endpoint}).start()
    yield server
    server.stop()
    database.drop()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.dialogs = dialogs
    yield page
    context.close()


def assert_nothing_ran(page) -> None:
    assert page.evaluate("window.__xss") is None
    assert page.evaluate("window.parent.__xss") is None
    assert page.dialogs == []
    assert page.evaluate(f"document.querySelectorAll({ACTIVE!r}).length") == 0


def wait_status(page, status: str) -> None:
    expect(page.locator("#status")).to_have_attribute("data-run-status", status, timeout=15_000)


def send(page, message: str) -> None:
    page.get_by_label("Message").fill(message)
    page.get_by_role("button", name="Send").click()


class TestXssCorpus:
    def test_nothing_in_the_corpus_executes_anywhere_on_the_customer_page(self, page, xss_server):
        page.goto(xss_server.url + "/")
        assert_nothing_ran(page)
        card = page.get_by_role("region", name="Shop")
        card.get_by_label("Your first message").fill(PAYLOAD)
        card.get_by_role("button", name="Start a conversation").click()
        page.wait_for_url("**/c/*?token=*")
        wait_status(page, "completed")
        expect(page.get_by_role("log")).to_contain_text("You said: <script>window.__xss=1</script>")
        assert_nothing_ran(page)
        # A locator wait, not wait_for_function: the page's CSP forbids evaluating strings.
        expect(page.locator("#conversation")).to_have_attribute("data-ws-open", "1")

        send(page, "tool results")
        expect(page.get_by_role("log")).to_contain_text("Result: ", timeout=15_000)
        wait_status(page, "completed")
        assert_nothing_ran(page)

        send(page, "approve a refund")
        wait_status(page, "waiting")
        assert_nothing_ran(page)
        page.get_by_role("button", name="Approve").click()
        expect(page.get_by_role("log")).to_contain_text("Refund: ", timeout=15_000)
        assert_nothing_ran(page)

        send(page, "ask me")
        wait_status(page, "waiting")
        assert_nothing_ran(page)
        page.get_by_label("label", exact=False).first.fill(PAYLOAD.replace("\n", " "))
        page.get_by_role("button", name="Submit").click()
        expect(page.get_by_role("log")).to_contain_text("Picked: ", timeout=15_000)
        wait_status(page, "completed")
        assert_nothing_ran(page)

        page.reload()
        wait_status(page, "completed")
        expect(page.get_by_role("log")).to_contain_text("<svg onload=")
        assert_nothing_ran(page)

    def test_a_tool_name_made_up_by_the_model_does_not_execute(self, page, xss_server, vendor):
        vendor.queue(
            completion(tool_calls=[tool_call("call_1", BAD_TOOL, json.dumps({"q": PAYLOAD}))]),
            completion(content="After: " + PAYLOAD),
        )
        page.goto(xss_server.url + "/")
        card = page.get_by_role("region", name="Vendor model")
        card.get_by_label("Your first message").fill("hello")
        card.get_by_role("button", name="Start a conversation").click()
        page.wait_for_url("**/c/*?token=*")

        wait_status(page, "completed")

        expect(page.get_by_role("log")).to_contain_text("After: <script>window.__xss=1</script>")
        assert_nothing_ran(page)
        page.reload()
        wait_status(page, "completed")
        assert_nothing_ran(page)
