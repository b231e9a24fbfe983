import pytest

from tests.widget.conftest import SHOP, frame_ancestors

pytestmark = pytest.mark.django_db


class TestWhoMayFrameTheWidget:
    def test_the_widget_page_may_be_framed_by_the_assistants_allowed_origins_only(self, client, embeddable):
        response = client.get(f"/w/{embeddable.id}", {"host": SHOP})

        assert response.status_code == 200
        assert frame_ancestors(response) == f"frame-ancestors 'self' {SHOP}"
        assert "X-Frame-Options" not in response.headers

    def test_an_assistant_without_allowed_origins_may_be_framed_by_this_site_only(self, client, make_assistant):
        assistant = make_assistant()

        response = client.get(f"/w/{assistant.id}")

        assert frame_ancestors(response) == "frame-ancestors 'self'"

    def test_the_conversation_link_page_keeps_x_frame_options_deny(self, page, started, embeddable):
        conversation = started("hello", assistant=embeddable)

        response = page(conversation)

        assert response.headers["X-Frame-Options"] == "DENY"
        assert frame_ancestors(response) == "frame-ancestors 'none'"

    def test_the_embedded_conversation_page_may_be_framed_by_the_allowed_origins(self, page, started, embeddable):
        conversation = started("hello", assistant=embeddable)

        response = page(conversation, embed="1", host=SHOP)

        assert frame_ancestors(response) == f"frame-ancestors 'self' {SHOP}"
        assert "X-Frame-Options" not in response.headers

    def test_every_other_route_keeps_x_frame_options_deny(self, client):
        response = client.get("/")

        assert response.headers["X-Frame-Options"] == "DENY"


class TestHostOrigin:
    def test_an_allowed_host_becomes_the_pages_postmessage_target(self, client, embeddable):
        response = client.get(f"/w/{embeddable.id}", {"host": SHOP})

        assert f'data-embed-host="{SHOP}"' in response.content.decode()

    def test_a_host_that_is_not_allowed_gets_no_messages(self, client, embeddable):
        response = client.get(f"/w/{embeddable.id}", {"host": "https://evil.example"})

        assert 'data-embed-host=""' in response.content.decode()

    def test_only_a_well_formed_colour_is_passed_on(self, client, embeddable):
        response = client.get(f"/w/{embeddable.id}", {"host": SHOP, "color": "red;background:url(x)"})

        assert 'data-accent=""' in response.content.decode()
