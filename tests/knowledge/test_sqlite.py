"""
The embedded default's search: SQLite FTS5 with BM25, whatever database the suite runs on.

A fresh SQLite database is migrated in a process of its own (the migration makes the FTS5 table
and its triggers only there), and the same actions and search the server uses run against it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid

import pytest

from tests.knowledge.documents import HELP_CENTRE
from tests.servers import ROOT

SCRIPT = r"""
import json, os
from django.db import connection
from django.utils import timezone
from apps.knowledge import actions, indexing
from apps.knowledge.queries import search

assert connection.vendor == "sqlite"
now = timezone.now()

def upload(title, text):
    return actions.check_upload(title=title, content=text.encode(), format="markdown")

ids = {}
for title, text in json.loads(os.environ["HELP_CENTRE"]).items():
    ids[title] = str(actions.add_source(upload=upload(title, text), now=now).source.id)
actions.add_source(upload=upload("Chatter", "How do I? What can you do, and how do you do it? Why? How? What?"), now=now)
out = {
    "jacket": search("how do I return a jacket that doesn't fit?"),
    "parcel": search("How do I track my parcel?"),
    "stop_words_only": search("how do I do that?"),
    "only_shipping": search("return delivery", sources=[ids["Shipping"]]),
    "misspelt": search("how do I retrun my jakcet"),
    "spelt": search("how do I return my jacket"),
}
actions.replace_source(source_id=ids["Payments"], upload=upload("Payments", "## Cards\n\nWe take only Visa now."), now=now)
out["after_put"] = search("visa mastercard paypal")
actions.delete_source(source_id=ids["Returns"], now=now)
out["after_delete"] = search("return a jacket")
big = actions.add_source(upload=upload("Big guide", "## Warranty\n\n" + "Warranty claims take two years. " * 100), now=now).source
out["big_status"] = big.status
out["big_before"] = search("warranty claims")
indexing.index_pending()
out["big_after"] = search("warranty claims")
with connection.cursor() as cursor:
    # Words only the deleted source and the replaced version held: the index must have let them go.
    cursor.execute("SELECT count(*) FROM knowledge_passage_fts WHERE knowledge_passage_fts MATCH 'unworn OR mastercard'")
    out["stale_rows"] = cursor.fetchone()[0]
    cursor.execute("SELECT count(*) FROM knowledge_passage_fts WHERE knowledge_passage_fts MATCH 'warranty'")
    out["warranty_rows"] = cursor.fetchone()[0]
    cursor.execute("SELECT count(*) FROM knowledge_passages WHERE text LIKE '%warranty%'")
    out["warranty_passages"] = cursor.fetchone()[0]
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def on_sqlite() -> dict:
    with tempfile.TemporaryDirectory(prefix="waypoint-knowledge-") as tmp:
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp}/db.sqlite3", "WAYPOINT_DATA_DIR": tmp,
               "DJANGO_SECRET_KEY": "test-" + uuid.uuid4().hex, "DEBUG": "0", "DJANGO_SETTINGS_MODULE": "config.settings",
               "WAYPOINT_KNOWLEDGE_INLINE_BYTES": "2000", "HELP_CENTRE": json.dumps(HELP_CENTRE)}

        def manage(*args: str) -> str:
            done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=180)
            assert done.returncode == 0, done.stdout + done.stderr
            return done.stdout

        manage("migrate", "--noinput", "-v0")
        printed = manage("shell", "-c", SCRIPT)
    return json.loads(printed.split("RESULT ", 1)[1])


def test_a_customers_question_finds_the_returns_passage_first(on_sqlite):
    assert on_sqlite["jacket"][0]["anchor"] == "Returning an item"


def test_stop_words_and_question_words_do_not_decide_the_ranking(on_sqlite):
    assert on_sqlite["parcel"][0]["anchor"] == "Tracking a parcel"
    assert all(p["title"] != "Chatter" for p in on_sqlite["parcel"])
    assert on_sqlite["stop_words_only"] == []


def test_a_misspelt_question_finds_the_passage_the_right_spelling_finds(on_sqlite):
    assert on_sqlite["misspelt"][0]["title"] == "Returns"
    assert on_sqlite["misspelt"][0]["anchor"] == on_sqlite["spelt"][0]["anchor"]


def test_a_passage_is_the_contracts_passage_with_a_score_in_0_1(on_sqlite):
    passage = on_sqlite["jacket"][0]

    assert set(passage) == {"passage_id", "source_id", "title", "version", "text", "score", "anchor"}
    assert 0 < passage["score"] < 1


def test_sources_keeps_to_the_named_sources(on_sqlite):
    assert {p["title"] for p in on_sqlite["only_shipping"]} == {"Shipping"}


def test_only_the_current_version_of_live_sources_is_found(on_sqlite):
    assert [(p["version"], p["text"]) for p in on_sqlite["after_put"]] == [(2, "We take only Visa now.")]
    assert all(p["title"] != "Returns" for p in on_sqlite["after_delete"])


def test_a_large_source_is_found_only_once_whole(on_sqlite):
    assert on_sqlite["big_status"] == "indexing" and on_sqlite["big_before"] == []
    assert on_sqlite["big_after"] and on_sqlite["big_after"][0]["anchor"] == "Warranty"


def test_the_fts5_index_follows_the_passages_written_and_removed(on_sqlite):
    assert on_sqlite["stale_rows"] == 0
    assert on_sqlite["warranty_rows"] == on_sqlite["warranty_passages"] > 0
