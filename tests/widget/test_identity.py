import base64
import json
from datetime import UTC, datetime, timedelta

import pytest

from apps.conversations.models import Conversation
from apps.widget.identity import IdentityRejected, check_identity, sign_identity
from apps.workspaces.keys import create_api_key, revoke_api_key
from tests.widget.conftest import SHOP

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
def api_key():
    return create_api_key(name="shop backend")


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


class TestCheckIdentity:
    def test_a_token_signed_with_a_live_api_key_names_the_persona(self, api_key):
        token = sign_identity(api_key=api_key[1], subject="ada-42", expires_at=NOW + timedelta(hours=1))

        identity = check_identity(token, now=NOW)

        assert identity.persona == "app:ada-42"

    def test_a_token_signed_with_another_secret_is_rejected(self, api_key):
        forged = sign_identity(api_key=api_key[1][:10] + "x" * 33, subject="ada-42", expires_at=NOW + timedelta(hours=1))

        with pytest.raises(IdentityRejected):
            check_identity(forged, now=NOW)

    def test_an_expired_token_is_rejected(self, api_key):
        token = sign_identity(api_key=api_key[1], subject="ada-42", expires_at=NOW - timedelta(minutes=5))

        with pytest.raises(IdentityRejected, match="expired"):
            check_identity(token, now=NOW)

    def test_a_token_living_longer_than_a_day_is_rejected(self, api_key):
        token = sign_identity(api_key=api_key[1], subject="ada-42", expires_at=NOW + timedelta(days=30))

        with pytest.raises(IdentityRejected, match="24 hours"):
            check_identity(token, now=NOW)

    def test_an_unsigned_token_is_rejected_whatever_its_header_says(self, api_key):
        header = _b64({"alg": "none", "kid": api_key[1][:10]})
        payload = _b64({"sub": "ada-42", "exp": int((NOW + timedelta(hours=1)).timestamp())})

        with pytest.raises(IdentityRejected, match="HS256"):
            check_identity(f"{header}.{payload}.", now=NOW)

    def test_a_revoked_key_no_longer_vouches(self, api_key):
        token = sign_identity(api_key=api_key[1], subject="ada-42", expires_at=NOW + timedelta(hours=1))
        revoke_api_key(key=api_key[0])

        with pytest.raises(IdentityRejected):
            check_identity(token, now=NOW)


class TestIdentifiedVisitors:
    def test_an_identified_visitor_starts_as_their_persona(self, client, embeddable, api_key):
        token = sign_identity(api_key=api_key[1], subject="ada-42", expires_at=datetime.now(UTC) + timedelta(hours=1))

        client.post(f"/w/{embeddable.id}/start", {"message": "hello", "identity": token, "host": SHOP})

        assert Conversation.objects.get().owner == "app:ada-42"

    def test_an_identified_visitor_resumes_their_active_conversation(self, client, embeddable, api_key):
        token = sign_identity(api_key=api_key[1], subject="ada-42", expires_at=datetime.now(UTC) + timedelta(hours=1))
        client.post(f"/w/{embeddable.id}/start", {"message": "hello", "identity": token, "host": SHOP})
        conversation = Conversation.objects.get()

        page = client.get(f"/w/{embeddable.id}", {"identity": token, "host": SHOP})
        resumed = client.post(f"/w/{embeddable.id}/resume", {"identity": token, "embed": "1", "host": SHOP})

        assert 'id="resume"' in page.content.decode()
        assert resumed.status_code == 302
        assert resumed["Location"].startswith(f"/c/{conversation.id}?token=")

    def test_a_rejected_identity_leaves_the_visitor_an_anonymous_guest(self, client, embeddable):
        client.post(f"/w/{embeddable.id}/start", {"message": "hello", "identity": "not.a.token", "host": SHOP})

        assert Conversation.objects.get().owner.startswith("guest:")
