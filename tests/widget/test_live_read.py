"""The page's live fragment (/c/<id>/live) under polling: a conditional read costs the head only."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

pytestmark = pytest.mark.django_db


class TestLiveConditionalRead:
    def test_an_unchanged_head_is_answered_from_the_token_and_the_head(self, client, started):
        conversation = started("hello")
        url = f"/c/{conversation['conversation_id']}/live?token={conversation['token']}"
        etag = client.get(url)["ETag"]

        with CaptureQueriesContext(connection) as queries:
            again = client.get(url, headers={"If-None-Match": etag})

        assert again.status_code == 304 and again["ETag"] == etag
        assert len(queries) == 2  # the token, the head
        assert not any("chat_messages" in q["sql"] or "agent_assistant" in q["sql"] for q in queries)

    def test_a_stale_etag_gets_the_fragments(self, client, started):
        conversation = started("hello")
        url = f"/c/{conversation['conversation_id']}/live?token={conversation['token']}"

        response = client.get(url, headers={"If-None-Match": '"0"'})

        assert response.status_code == 200 and 'id="transcript"' in response.content.decode()


class TestSendReply:
    def test_an_htmx_send_is_answered_with_the_senders_message_and_the_status_only(self, client, started, settle):
        conversation = started("hello")
        cid, token = conversation["conversation_id"], conversation["token"]
        head = client.get(f"/c/{cid}/live?token={token}")["ETag"].strip('"')

        with settle():
            response = client.post(f"/c/{cid}/send", {"token": token, "message": "second", "expected_seq": head},
                                   headers={"HX-Request": "true"})

        body = response.content.decode()
        assert response.status_code == 200
        assert body.count('<div id="message-') == 1 and "second" in body and "You said" not in body
        assert f'data-after="{head}"' in body and 'id="cards"' not in body and 'id="memory"' not in body
        assert 'id="notices"' in body

    def test_a_plain_send_is_redirected_to_the_page(self, client, started, settle):
        conversation = started("hello")
        cid, token = conversation["conversation_id"], conversation["token"]

        with settle():
            response = client.post(f"/c/{cid}/send", {"token": token, "message": "second"})

        assert response.status_code == 302 and response["Location"].startswith(f"/c/{cid}?token=")
