"""What a newcomer needs to find their way: the conversation's link kept, the home page's ways in, the tab's icon."""

from __future__ import annotations

import html as markup
import re
from urllib.parse import unquote

import pytest

from apps.agent.actions import load_demo

pytestmark = pytest.mark.django_db


class TestTheConversationsLink:
    def test_the_customer_page_says_the_link_is_the_way_back_and_private_and_offers_to_copy_it(self, page, started):
        conversation = started()

        body = page(conversation).content.decode()

        assert "This page's link is your way back, from any device. Keep it private" in body
        [link] = re.findall(r'data-copy-link="([^"]+)">Copy link</button>', body)
        assert unquote(markup.unescape(link)) == f"http://testserver/c/{conversation['conversation_id']}?token={conversation['token']}"

    def test_the_widget_says_where_to_find_the_link(self, page, started):
        conversation = started()

        body = page(conversation, embed="1", host="http://localhost:8001").content.decode()

        assert "To go on from another device, copy this chat's private link." in body
        assert ">Copy link</button>" in body


class TestTheHomePage:
    def test_links_the_demo_shop_the_sdk_demo_and_the_staff_panel(self, client):
        load_demo(base_url="http://127.0.0.1:8000", allowed_origins=["http://127.0.0.1:8001", "http://localhost:8001"])

        body = client.get("/").content.decode()

        assert '<a href="http://localhost:8001/">The demo shop</a>' in body
        assert '<a href="/static/waypoint/sdk-demo.html">The SDK demo</a>' in body
        assert '<a href="/staff/">The staff panel</a>' in body
        assert "make superuser" in body

    def test_every_page_has_an_icon(self, client):
        assert '<link rel="icon" href="/static/waypoint/favicon.svg"' in client.get("/").content.decode()
