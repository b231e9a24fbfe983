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
