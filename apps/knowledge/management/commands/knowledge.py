"""`manage.py knowledge index` indexes (and embeds) what is pending now; `manage.py knowledge search "question"` prints what is found."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand

from apps.knowledge import embeddings, indexing, queries


class Command(BaseCommand):
    help = "Index pending knowledge sources, or search the knowledge as the assistant does."

    def add_arguments(self, parser):
        commands = parser.add_subparsers(dest="command", required=True)
        commands.add_parser("index", help="index every pending source now (what the server's indexer does)")
        search = commands.add_parser("search", help="print the passages a question finds, as JSON")
        search.add_argument("query")
        search.add_argument("--limit", type=int, default=5)
        search.add_argument("--source", action="append", dest="sources", help="keep to this source id (repeatable)")

    def handle(self, *args, command: str, **options):
        if command == "index":
            done = indexing.index_pending()
            self.stdout.write(f"indexed {done} source version(s)")
            if embeddings.configured():
                self.stdout.write(f"embedded {embeddings.embed_pending()} passage(s)")
        else:
            found = queries.search(options["query"], sources=options["sources"], limit=options["limit"])
            self.stdout.write(json.dumps({"passages": found}, indent=2, ensure_ascii=False))
