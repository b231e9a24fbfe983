import re

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.db import connection, transaction
from django.urls import reverse

from apps.agent import actions
from apps.conversations.models import ChatMessage
from apps.ledger.models import Event
from apps.staff.queries.inspector import verified_at
from config.asgi import application

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def tamper(conversation_id, seq, payload):
    """Rewrite one stored entry the way someone with database access could: through the repair gate."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL waypoint.repair = 'on'")
        Event.objects.filter(conversation_id=conversation_id, seq=seq).update(payload=payload)


def inspector(client, conversation_id):
    return client.get(reverse("staff:conversation", args=[conversation_id])).content.decode()


class TestInspector:
    def test_shows_the_transcript_beside_every_entry_of_the_log_each_verified(self, staff_client, start):
        started = start("hello there")
        kinds = list(Event.objects.filter(conversation_id=started["conversation_id"]).order_by("seq").values_list("kind", flat=True))

        page = inspector(staff_client, started["conversation_id"])

        assert "hello there" in page and "You said: hello there" in page
        for seq, kind in enumerate(kinds, start=1):
            row = re.search(rf'<tr id="event-{seq}"[^>]*>(.*?)</tr>', page, re.S).group(1)
            assert kind in row and 'title="verified">✓' in row
        assert f"✓ {len(kinds)} entries verify" in page

    def test_heads_the_page_with_the_lifecycle_and_shows_the_latest_run_beside_it(self, staff_client, start):
        started = start("hello there")

        page = inspector(staff_client, started["conversation_id"])

        heading = re.search(r"<h1>(.*?)</h1>", page, re.S).group(1)
        assert re.findall(r'class="badge (\w+)"', heading) == ["active"]
        assert re.search(r'<dt>Last run</dt><dd><span class="badge completed">', page)

    def test_shows_runs_action_logs_and_participants(self, staff_client, start, clock):
        started = start("I want a refund")  # lookup_order (echo) runs, then issue_refund waits for approval

        page = inspector(staff_client, started["conversation_id"])

        assert f'id="run-{started["run_id"]}"' in page and ">waiting<" in page
        assert "lookup_order · echo" in page and ">succeeded<" in page
        assert 'id="usage-' in page and "approval" in page and ">pending<" in page
        assert "guest:alice" in page and "answer_client_actions" in page

    def test_shows_each_call_in_the_words_the_customer_sees_above_its_tool_name(self, staff_client, start, make_assistant):
        from tests.widget.test_cards import WORDED_TOOLS

        started = start("I want a refund", assistant=make_assistant(tools=WORDED_TOOLS))

        page = inspector(staff_client, started["conversation_id"])

        assert '<span class="words">Refund 20 for order A-1</span><br><span class="mono small">issue_refund</span>' in page
        assert '<span class="words">Looking up your order A-1</span><br>lookup_order · echo' in page

    def test_a_tampered_entry_is_marked_and_verify_names_its_seq(self, staff_client, start):
        started = start("hello")
        tamper(started["conversation_id"], 2, '{"run_id":"run_forged"}')

        page = inspector(staff_client, started["conversation_id"])
        result = staff_client.post(reverse("staff:verify", args=[started["conversation_id"]])).content.decode()

        assert re.search(r'<tr id="event-1"[^>]*>.*?title="verified">✓', page, re.S)
        assert re.search(r'<tr id="event-2" class="first-bad', page)
        assert "✗ entry 2: " in page
        assert "Verify failed at entry <strong>2</strong>: " in result

    def test_verify_says_a_sound_log_checks_out(self, staff_client, start):
        started = start("hello")

        result = staff_client.post(reverse("staff:verify", args=[started["conversation_id"]]), headers={"HX-Request": "true"})

        assert result.status_code == 200
        assert result.content.decode().lstrip().startswith('<section id="check-result"')
        assert "✓ Verify: all" in result.content.decode()

    def test_replay_lists_where_the_stores_drifted_from_the_log(self, staff_client, start):
        started = start("hello")
        message = ChatMessage.objects.filter(conversation_id=started["conversation_id"], role="assistant").get()
        ChatMessage.objects.filter(id=message.id).update(text="edited behind the log's back")

        result = staff_client.post(reverse("staff:replay", args=[started["conversation_id"]])).content.decode()

        assert "✗ Replay of" in result
        assert f"chat_messages (&#x27;{message.id}&#x27;,).text" in result

    def test_what_if_shows_where_replay_of_a_changed_entry_diverges(self, staff_client, start):
        started = start("hello")
        url = reverse("staff:what_if", args=[started["conversation_id"]])

        changed = staff_client.post(url, {"seq": "2", "patch": '[{"op": "replace", "path": "/text", "value": "hi mallory"}]'})
        broken = staff_client.post(url, {"seq": "2", "patch": "not a patch"})

        assert "replay diverges at entry <strong>2</strong>" in changed.content.decode()
        assert "chat_messages" in changed.content.decode()
        assert "What-if: the patch is not JSON" in broken.content.decode()

    def test_the_live_fragments_answer_304_while_the_log_has_not_moved(self, staff_client, start, clock):
        started = start("hello")
        url = reverse("staff:conversation_live", args=[started["conversation_id"]])
        first = staff_client.get(url)

        same = staff_client.get(url, headers={"If-None-Match": first["ETag"]})
        actions.start_turn(conversation_id=started["conversation_id"], message="again", persona="guest:alice", edge="api", now=clock())
        moved = staff_client.get(url, headers={"If-None-Match": first["ETag"]})

        assert first.status_code == 200 and 'hx-swap-oob="true"' in first.content.decode()
        assert same.status_code == 304
        assert moved.status_code == 200 and "You said: again" in moved.content.decode()

    def test_an_unknown_conversation_is_not_found(self, staff_client):
        assert staff_client.get(reverse("staff:conversation", args=["00000000-0000-0000-0000-000000000000"])).status_code == 404


async def _socket(conversation_id, cookies=""):
    headers = [(b"origin", b"http://127.0.0.1")]
    if cookies:
        headers.append((b"cookie", cookies.encode()))
    communicator = WebsocketCommunicator(application, f"/ws/staff/conversations/{conversation_id}/", headers=headers)
    connected, _ = await communicator.connect()
    return communicator, connected


class TestLiveSocket:
    async def test_pushes_the_inspector_fragments_when_the_log_moves(self, start, clock, staff_user, client):
        started = await sync_to_async(start)("hello")
        await sync_to_async(client.force_login)(staff_user)
        communicator, connected = await _socket(started["conversation_id"],
                                                f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}")
        first = await communicator.receive_from()

        await sync_to_async(actions.start_turn)(conversation_id=started["conversation_id"], message="second",
                                                persona="guest:alice", edge="api", now=clock())
        seen = first
        while "You said: second" not in seen:
            seen = await communicator.receive_from(timeout=5)

        assert connected and '<section id="timeline" hx-swap-oob="true"' in first
        assert "turn_complete" in seen
        await communicator.disconnect()

    async def test_staff_sockets_share_one_verification_of_each_head(self, start, clock, staff_user, client):
        started = await sync_to_async(start)("hello")
        await sync_to_async(client.force_login)(staff_user)
        cookies = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
        sockets = [(await _socket(started["conversation_id"], cookies))[0] for _ in range(2)]
        for communicator in sockets:
            await communicator.receive_from()
        verified = verified_at.cache_info().misses

        await sync_to_async(actions.start_turn)(conversation_id=started["conversation_id"], message="second",
                                                persona="guest:alice", edge="api", now=clock())
        seen = []
        for communicator in sockets:
            seen.append([await communicator.receive_from(timeout=5)])
            while "You said: second" not in seen[-1][-1]:
                seen[-1].append(await communicator.receive_from(timeout=5))

        heads = {re.search(r'id="summary"[^>]*data-seq="(\d+)"', push)[1] for pushed in seen for push in pushed}
        assert verified_at.cache_info().misses - verified == len(heads)
        assert sum(len(pushed) for pushed in seen) > len(heads)
        assert all("entries verify" in pushed[-1] for pushed in seen)
        for communicator in sockets:
            await communicator.disconnect()

    async def test_refuses_a_socket_without_a_staff_session(self, start):
        started = await sync_to_async(start)("hello")

        communicator, connected = await _socket(started["conversation_id"])

        assert not connected


class TestAFailedRun:
    def test_shows_the_run_failed_with_its_safe_message_and_each_retry(self, staff_client, start, make_assistant, clock, settings):
        from apps.agent.models import Assistant
        from tests.core.test_bounded_failure import POISON

        settings.WAYPOINT_RUN_RETRY_SECONDS = 0.01
        assistant = make_assistant()
        cid = start("hello", assistant=assistant)["conversation_id"]
        Assistant.objects.filter(id=assistant.id).update(config={**assistant.config, "model": POISON})
        actions.start_turn(conversation_id=cid, message="poison", persona="guest:alice", edge="api", now=clock())

        page = inspector(staff_client, cid)

        assert '<span class="badge failed">failed</span>' in page
        assert "The run stopped after 3 retries, each ending in an unexpected error (AttributeError)." in page
        assert page.count("after an unexpected error (AttributeError)") >= 3
