"""Two first requests on one new AG-UI thread at once: one conversation, and the second message is its next turn or a 409."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.db import connection

from tests.api.conftest import Api
from tests.api.test_agui import Thread, events_of

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


@pytest.fixture
def assistant(api: Api) -> str:
    return api.create_assistant()

TRIES = 4


def race(api: Api, assistant: str, thread_id: str) -> list:
    """Post two first requests, each with its own message, from two threads released together."""
    gate, answers = threading.Barrier(2), [None, None]

    def send(i: int) -> None:
        try:
            gate.wait()
            client = Thread(Api(api.credential), assistant, thread_id)
            answers[i] = client.send(f"hello from twin {i}", message_id=f"twin-{i}")
        finally:
            connection.close()

    twins = [threading.Thread(target=send, args=(i,)) for i in range(2)]
    for twin in twins:
        twin.start()
    for twin in twins:
        twin.join(30)
    return answers


def test_a_thread_is_one_conversation_whoever_comes_first(api, assistant):
    from apps.agui.models import Thread as ThreadRow
    from apps.conversations.models import ChatMessage, Conversation

    for _ in range(TRIES):
        thread_id = f"thread-{uuid.uuid4().hex[:12]}"
        before = Conversation.objects.count()

        answers = race(api, assistant, thread_id)

        assert Conversation.objects.count() == before + 1, "a second conversation was started for the thread"
        [row] = ThreadRow.objects.filter(thread_id=thread_id)
        said = set(ChatMessage.objects.filter(conversation_id=row.conversation_id, role="user").values_list("text", flat=True))
        for i, answer in enumerate(answers):
            if answer.status_code == 409:
                assert answer.json()["error"]["code"] == "turn_conflict"
            else:
                assert f"hello from twin {i}" in said  # joined the thread's conversation as its next turn
                events_of(answer)
