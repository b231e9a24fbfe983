"""A conversation link that does not work gets a page meant for people, never Django's technical page."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.conversations import tokens

PROBLEM = "This link is invalid or has expired — start a new conversation"


@pytest.fixture(autouse=True)
def debug(settings):
    """DEBUG on, where Django would otherwise answer a 404 with its technical page."""
    settings.DEBUG = True


def assert_friendly(response, problem: str = PROBLEM) -> None:
    html = response.content.decode()
    assert response.status_code == 404
    assert problem in html
    assert "URLconf" not in html and "Raised by" not in html


class TestAConversationLinkThatDoesNotWork:
    def test_a_forged_token_gets_the_page_for_people(self, client, started):
        conversation = started("hello")

        response = client.get(f"/c/{conversation['conversation_id']}", {"token": "forged"})

        assert_friendly(response)

    def test_a_revoked_token_gets_the_page_for_people(self, client, started):
        conversation = started("hello")
        grant = tokens.resolve(conversation["token"])
        tokens.revoke(token_id=grant.token_id, now=timezone.now())

        response = client.get(f"/c/{conversation['conversation_id']}", {"token": conversation["token"]})

        assert_friendly(response)

    def test_an_expired_token_gets_the_page_for_people(self, client, started):
        conversation = started("hello")
        long_ago = timezone.now() - tokens.lifetime() - timedelta(days=1)
        expired = tokens.issue(conversation_id=conversation["conversation_id"], persona="guest:alice", now=long_ago)

        response = client.get(f"/c/{conversation['conversation_id']}", {"token": expired})

        assert_friendly(response)

    def test_an_unknown_conversation_gets_the_page_for_people(self, client, started):
        conversation = started("hello")

        response = client.get(f"/c/{uuid.uuid4()}", {"token": conversation["token"]})

        assert_friendly(response)

    def test_a_poll_with_a_revoked_token_is_a_404_and_shows_nothing_of_the_conversation(self, client, started):
        conversation = started("hello")
        grant = tokens.resolve(conversation["token"])
        tokens.revoke(token_id=grant.token_id, now=timezone.now())

        response = client.get(f"/c/{conversation['conversation_id']}/live", {"token": conversation["token"]})

        assert response.status_code == 404
        assert "You said" not in response.content.decode()

    def test_a_post_from_a_page_whose_link_stopped_working_gets_the_notice_where_the_page_shows_notices(self, client, started):
        conversation = started("hello")

        response = client.post(f"/c/{conversation['conversation_id']}/send", {"token": "forged", "message": "hi"},
                               headers={"HX-Request": "true"})

        html = response.content.decode()
        assert response.status_code == 404
        assert 'id="notices" hx-swap-oob="true"' in html and PROBLEM in html

    @pytest.mark.parametrize("path", [
        "/c/abc", "/c/{cid}/", "/c/{cid}x", "/c/{cid}/nothing-here", "/c/",
    ], ids=["not-an-id", "trailing-slash", "one-character-too-many", "a-path-it-does-not-have", "no-id"])
    def test_an_address_cut_short_or_mistyped_gets_the_page_for_people(self, client, started, path):
        conversation = started("hello")

        response = client.get(path.format(cid=conversation["conversation_id"]), {"token": conversation["token"]})

        assert_friendly(response)

    def test_a_form_posted_to_a_mistyped_address_is_told_so_not_refused(self, client, started):
        conversation = started("hello")

        response = client.post(f"/c/{conversation['conversation_id'][:-1]}/send", {"token": conversation["token"], "message": "hi"},
                               headers={"HX-Request": "true"})

        assert response.status_code == 404
        assert PROBLEM in response.content.decode()


class TestAWidgetAddressThatDoesNotWork:
    @pytest.mark.parametrize("path", ["/w/{unknown}", "/w/not-an-id", "/w/{unknown}/start"], ids=["unknown-assistant", "not-an-id", "start"])
    def test_it_gets_the_page_for_people(self, client, db, path):
        method = client.post if path.endswith("/start") else client.get

        response = method(path.format(unknown=uuid.uuid4()))

        assert_friendly(response, "This chat is not available")
