"""
The help centre of a fictional online shop (Northwind Supply: clothes, shoes, home goods) and questions phrased
the way customers write in a chat box, each paired with the article that answers it; bench/sections/knowledge.py
measures recall@5 on it.

The data is in bench/data/knowledge: one Markdown file per article (its `# ` heading is its title, the files'
order the order they are added in) and questions.json, a list of [question as a customer would type it, title
of the article that answers it].
"""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "knowledge"


def _articles() -> dict[str, str]:
    found = {}
    for path in sorted((DATA / "articles").glob("*.md")):
        text = path.read_text(encoding="utf-8").removesuffix("\n")
        found[text.split("\n", 1)[0].removeprefix("# ")] = text
    return found


ARTICLES: dict[str, str] = _articles()
QUESTIONS: list[tuple[str, str]] = [(q, a) for q, a in json.loads((DATA / "questions.json").read_text(encoding="utf-8"))]
