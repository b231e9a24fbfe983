"""
`sql.instance`: the conversation (and its assistant) every push, page load and turn write reads by
primary key, without building an ORM query, must be the row the ORM would load, and with `lock`
must hold the row as `select_for_update(no_key=True)` did.
"""

import psycopg
import pytest
from django.conf import settings
from django.db import connection, transaction
from django.forms.models import model_to_dict

from apps.conversations import queries
from apps.conversations.actions import locked
from apps.conversations.errors import NotFound
from apps.conversations.models import Conversation
from apps.ledger import sql

pytestmark = pytest.mark.django_db

MISSING = "00000000-0000-4000-8000-000000000000"


def test_a_row_read_by_key_is_the_row_the_orm_loads(start):
    cid = start("hello")["conversation_id"]
    orm = Conversation.objects.select_related("assistant").get(id=cid)

    read = queries.conversation_for(cid)

    assert model_to_dict(read) == model_to_dict(orm)
    assert read.head_seq == orm.head_seq > 0 and read.created_at == orm.created_at
    assert model_to_dict(read.assistant) == model_to_dict(orm.assistant)
    assert read.assistant.config == orm.assistant.config and read.assistant.config
    assert not read._state.adding and read._state.db == "default"


def test_an_unknown_key_reads_as_none():
    assert sql.instance(Conversation, MISSING) is None
    assert queries.conversation_for(MISSING) is None
    with transaction.atomic(), pytest.raises(NotFound):
        locked(MISSING)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)  # a second connection must see the committed conversation
def test_a_locked_row_is_held_until_its_transaction_ends(start):
    cid = start("hello")["conversation_id"]
    url = connection.settings_dict
    other = psycopg.connect(host=url["HOST"], port=url["PORT"] or 5432, user=url["USER"], dbname=settings.DATABASES["default"]["NAME"],
                            autocommit=True)
    try:
        with transaction.atomic():
            assert locked(cid, with_assistant=True).assistant.config
            with pytest.raises(psycopg.errors.LockNotAvailable):
                other.execute("SELECT 1 FROM conversations WHERE id = %s FOR NO KEY UPDATE NOWAIT", [cid])
            # A key-sharing reader (an insert of the conversation's log entries) is not held up.
            assert other.execute("SELECT 1 FROM conversations WHERE id = %s FOR KEY SHARE NOWAIT", [cid]).fetchall()
        assert other.execute("SELECT 1 FROM conversations WHERE id = %s FOR NO KEY UPDATE NOWAIT", [cid]).fetchall()
    finally:
        other.close()
