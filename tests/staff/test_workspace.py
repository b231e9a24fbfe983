import json

import pytest
from django.urls import reverse

from apps.agent.models import Assistant
from apps.conversations.models import ConversationToken
from apps.staff.models import StaffAuditLog
from apps.workspaces.keys import resolve_api_key
from apps.workspaces.models import ApiKey
from tests.conftest import SUPPORT_CONFIG

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


class TestAssistants:
    def test_an_invalid_configuration_is_shown_back_with_every_problem(self, staff_client):
        config = {**SUPPORT_CONFIG, "step_budget": 0, "tools": [{"name": "x", "kind": "teleport"}]}

        response = staff_client.post(reverse("staff:assistant_new"), {"config": json.dumps(config), "allowed_origins": ""})

        page = response.content.decode()
        assert response.status_code == 422
        assert "step_budget: must be a whole number from 1 to 64" in page
        assert "tools[0].kind: unknown tool kind" in page
        assert "&quot;step_budget&quot;: 0" in page  # the text is kept for fixing
        assert not Assistant.objects.exists()

    def test_the_form_explains_instructions_and_the_model_settings(self, staff_client):
        page = staff_client.get(reverse("staff:assistant_new")).content.decode()

        assert 'aria-describedby="config-help"' in page
        assert all(f'"{name}"' in page for name in ("instructions", "temperature", "max_output_tokens", "tool_choice",
                                                     "timeout_seconds"))

    def test_a_wrong_model_setting_is_shown_back(self, staff_client):
        config = {**SUPPORT_CONFIG, "model": {**SUPPORT_CONFIG["model"], "max_output_tokens": "lots"}}

        response = staff_client.post(reverse("staff:assistant_new"), {"config": json.dumps(config), "allowed_origins": ""})

        assert response.status_code == 422
        assert "model.max_output_tokens: must be a whole number of at least 1" in response.content.decode()

    def test_json_that_does_not_parse_says_where(self, staff_client):
        response = staff_client.post(reverse("staff:assistant_new"), {"config": '{"name": "x",\n  oops}'})

        assert response.status_code == 422 and "line 2, column 3" in response.content.decode()

    def test_creating_one_stores_the_validated_config_and_records_who(self, staff_client):
        response = staff_client.post(reverse("staff:assistant_new"), {
            "config": json.dumps(SUPPORT_CONFIG), "allowed_origins": "https://shop.example\nhttps://www.shop.example/\n"})

        assistant = Assistant.objects.get()
        assert response.status_code == 302 and response["Location"] == reverse("staff:assistant", args=[assistant.id])
        assert assistant.config["allowed_origins"] == ["https://shop.example", "https://www.shop.example"]
        audit = StaffAuditLog.objects.get()
        assert (audit.actor, audit.action, audit.target) == ("staff:ops", "assistant_created", f"assistant:{assistant.id}")

    def test_editing_replaces_the_config_and_records_what_changed(self, staff_client, make_assistant):
        assistant = make_assistant()
        config = {**assistant.config, "step_budget": 3}
        config.pop("allowed_origins")

        staff_client.post(reverse("staff:assistant", args=[assistant.id]),
                          {"config": json.dumps(config), "allowed_origins": "https://shop.example"})

        assistant.refresh_from_db()
        assert assistant.config["step_budget"] == 3 and assistant.config["allowed_origins"] == ["https://shop.example"]
        audit = StaffAuditLog.objects.get()
        assert audit.action == "assistant_updated" and audit.details["changed"] == ["allowed_origins", "step_budget"]

    def test_a_bad_origin_is_refused_inline(self, staff_client, make_assistant):
        assistant = make_assistant()

        response = staff_client.post(reverse("staff:assistant", args=[assistant.id]),
                                     {"config": json.dumps(assistant.config), "allowed_origins": "shop.example/path"})

        assert response.status_code == 422 and "allowed_origins: must be a list of origins" in response.content.decode()

    def test_the_edit_page_offers_the_embed_snippet_and_a_preview(self, staff_client, make_assistant):
        assistant = make_assistant()

        page = staff_client.get(reverse("staff:assistant", args=[assistant.id])).content.decode()

        assert (f'&lt;script async src="http://testserver/static/waypoint/embed.js" data-assistant="{assistant.id}"&gt;'
                f"&lt;/script&gt;") in page
        assert reverse("staff:assistant_preview", args=[assistant.id]) in page


class TestApiKeys:
    def test_a_new_key_is_shown_once_and_works(self, staff_client):
        response = staff_client.post(reverse("staff:api_keys"), {"name": "backend"})

        page = response.content.decode()
        key = ApiKey.objects.get()
        secret = page.split('<pre id="new-key" class="mono snippet">')[1].split("</pre>")[0]
        assert response.status_code == 201 and resolve_api_key(secret) == key
        assert secret not in staff_client.get(reverse("staff:api_keys")).content.decode()
        assert StaffAuditLog.objects.get().action == "api_key_created"

    def test_revoking_a_key_stops_it_and_records_who(self, staff_client):
        staff_client.post(reverse("staff:api_keys"), {"name": "backend"})
        key = ApiKey.objects.get()

        staff_client.post(reverse("staff:api_key_revoke", args=[key.id]))

        key.refresh_from_db()
        assert key.revoked_at is not None
        assert list(StaffAuditLog.objects.order_by("id").values_list("actor", "action")) == [
            ("staff:ops", "api_key_created"), ("staff:ops", "api_key_revoked")]

    def test_a_key_needs_a_name(self, staff_client):
        response = staff_client.post(reverse("staff:api_keys"), {"name": "  "})

        assert response.status_code == 422 and not ApiKey.objects.exists()


class TestPersonas:
    def test_lists_each_persona_with_the_permissions_of_its_live_tokens(self, staff_client, start):
        started = start("hello", persona="guest:alice")
        ConversationToken.objects.create(conversation_id=started["conversation_id"], persona="agent:carol", permissions=["view"])

        page = staff_client.get(reverse("staff:personas")).content.decode()

        assert "guest:alice" in page and "agent:carol" in page
        carol = page.split("agent:carol")[1].split("</tr>")[0]
        assert '<span class="badge">view</span>' in carol and "approve" not in carol
