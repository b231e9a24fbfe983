"""
Sections to passages, and a customer's question to search terms. Pure: no database, no settings.

Sizes (docs/knowledge.md, "Passages"): a passage collects whole paragraphs of one section until it
holds about TARGET_WORDS words and never more than MAX_WORDS; only a paragraph longer than that
is cut, at sentence ends. About 250 words is one help-centre section, or the answer to one
question with its context; five of them are about 2,000 tokens of a model's context, and one fits
under the 512-token input of the small embedding models.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from apps.knowledge.reading import Section

TARGET_WORDS = 250
MAX_WORDS = 350
MAX_CHARS = 4000  # a "word" may be a URL or a line of code: the length of a passage is bounded too
ANCHOR_CHARS = 300
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")


@dataclass(frozen=True)
class Chunk:
    """One passage's text and the heading it sits under."""

    anchor: str | None
    text: str


def content_hash(*, title: str, format: str, content: bytes) -> str:
    """What makes two uploads the same version: the same title, format and bytes."""
    digest = hashlib.sha256()
    for part in (title.encode(), b"\x00", format.encode(), b"\x00", content):
        digest.update(part)
    return digest.hexdigest()


def _words(text: str) -> int:
    return len(text.split())


def _pieces(paragraph: str) -> list[str]:
    """A paragraph, or its sentences grouped under MAX_WORDS when it is longer than that."""
    if _words(paragraph) <= MAX_WORDS and len(paragraph) <= MAX_CHARS:
        return [paragraph]
    out: list[str] = []
    current: list[str] = []
    for sentence in _SENTENCE_END.split(paragraph):
        for part in _cut(sentence):
            if current and (_words(" ".join(current)) + _words(part) > MAX_WORDS
                            or len(" ".join(current)) + len(part) >= MAX_CHARS):
                out.append(" ".join(current))
                current = []
            current.append(part)
    if current:
        out.append(" ".join(current))
    return out


def _cut(sentence: str) -> list[str]:
    """A sentence with no end in sight (a list without full stops, a log line) cut at word counts and lengths."""
    words = sentence.split()
    out, current, size = [], [], 0
    for word in words:
        word = word[:MAX_CHARS // 2]
        if current and (len(current) >= MAX_WORDS or size + len(word) >= MAX_CHARS):
            out.append(" ".join(current))
            current, size = [], 0
        current.append(word)
        size += len(word) + 1
    if current:
        out.append(" ".join(current))
    return out


def chunk(sections: list[Section]) -> list[Chunk]:
    """
    Split sections into passages of whole paragraphs that never cross a heading.

    A passage is closed once it reaches TARGET_WORDS, or when the next paragraph would take it
    past MAX_WORDS (or MAX_CHARS).
    """
    out: list[Chunk] = []
    for section in sections:
        anchor = section.anchor[:ANCHOR_CHARS] if section.anchor else None
        current: list[str] = []
        words = chars = 0
        for paragraph in section.paragraphs:
            for piece in _pieces(paragraph):
                size = _words(piece)
                if current and (words + size > MAX_WORDS or chars + len(piece) > MAX_CHARS):
                    out.append(Chunk(anchor, "\n\n".join(current)))
                    current, words, chars = [], 0, 0
                current.append(piece)
                words += size
                chars += len(piece) + 2
                if words >= TARGET_WORDS:
                    out.append(Chunk(anchor, "\n\n".join(current)))
                    current, words, chars = [], 0, 0
        if current:
            out.append(Chunk(anchor, "\n\n".join(current)))
    return out


# --- questions ----------------------------------------------------------------------------------

# PostgreSQL's English stop words (snowball), so both databases drop the same words, with the
# fillers and the remains of contractions a customer's question brings ("doesn't" → "doesn"), the
# same contractions typed without their apostrophe ("doesnt", "whats"), and the verbs and words of
# chat that say what the customer wants, not what about ("get", "want", "something", "actually"):
# in a help article they sit in headings ("When will I get my money?") and outweigh the topic.
_STOP_WORDS = """
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her
hers herself it its itself they them their theirs themselves what which who whom this that these those
am is are was were be been being have has had having do does did doing a an the and but if or because
as until while of at by for with about against between into through during before after above below to
from up down in out on off over under again further then once here there when where why how all any both
each few more most other some such no nor not only own same so than too very s t can will just don
should now
could would may might must shall also please hi hello hey thanks thank ok okay yes yeah im ive id ill
doesn didn isn wasn aren weren won wouldn couldn shouldn haven hasn hadn mustn ll ve re m d
dont doesnt didnt isnt wasnt arent werent wont wouldnt couldnt shouldnt havent hasnt hadnt cant
whats wheres whens hows whos thats theres heres youre youve youll theyre weve lets
get gets getting got gotten want wants wanted wanting need needs needed like would
thing things stuff something anything everything nothing whatever someone anyone everyone
one lot lots many much really actually just basically usually possible instead maybe
know tell go going gone went way sure
"""
STOP_WORDS = frozenset(_STOP_WORDS.split())
MAX_TERMS = 32
MAX_TERM_CHARS = 64
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def terms(question: str) -> list[str]:
    """
    The words of a question that can decide what is found: lower-cased, without stop words or question words.

    A possessive keeps its noun ("customer's" → "customer"); any other contraction ("doesn't",
    "I'm") is a function word and goes. At most MAX_TERMS, each once, in the question's order.
    """
    out: list[str] = []
    for match in _WORD.finditer(question.lower()):
        word = match.group()
        if "'" in word or "’" in word:
            base, _, suffix = word.replace("’", "'").rpartition("'")
            if suffix != "s":
                continue
            word = base.replace("'", "")
        if word in STOP_WORDS or (len(word) < 2 and not word.isdigit()) or len(word) > MAX_TERM_CHARS:
            continue
        if word not in out:
            out.append(word)
            if len(out) == MAX_TERMS:
                break
    return out
