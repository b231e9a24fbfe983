from urllib.parse import parse_qs, urlparse

import pytest

from apps.agent.state import conversation_state
from apps.conversations.models import Conversation
from tests.widget.conftest import SHOP

pytestmark = pytest.mark.django_db


class TestWidgetStart:
    def test_the_first_message_starts_a_widget_conversation_and_opens_it_in_the_frame(self, client, embeddable, settle):
        with settle():
            response = client.post(f"/w/{embeddable.id}/start", {"message": "hello", "embed": "1", "host": SHOP, "color": "#123456"})

        url = urlparse(response["Location"])
        query = parse_qs(url.query)
        conversation = Conversation.objects.get()
        assert response.status_code == 302
        assert url.path == f"/c/{conversation.id}"
        assert query["embed"] == ["1"] and query["host"] == [SHOP] and query["color"] == ["#123456"]
        assert conversation.owner.startswith("guest:")
        assert conversation_state(conversation)["messages"][-1]["text"] == "You said: hello"

    def test_an_empty_first_message_is_explained_in_the_widget(self, client, embeddable):
        response = client.post(f"/w/{embeddable.id}/start", {"message": " ", "embed": "1", "host": SHOP})

        assert response.status_code == 422
        assert "message must be non-empty text" in response.content.decode()
        assert not Conversation.objects.exists()

    def test_an_unknown_assistant_is_not_found(self, client):
        response = client.get("/w/00000000-0000-0000-0000-000000000000")

        assert response.status_code == 404

    def test_the_start_page_claims_no_connection_it_does_not_have(self, client, embeddable):
        response = client.get(f"/w/{embeddable.id}", {"embed": "1", "host": SHOP})

        html = response.content.decode()
        assert response.status_code == 200 and 'id="widget-start"' in html
        assert "Online" not in html
