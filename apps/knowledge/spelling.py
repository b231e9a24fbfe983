"""
A misspelt word of a question to the words the passages hold. Pure: no database, no settings.

Used only for a word that no passage holds (the search asks the database which those are): it is
compared with the index's own terms that start with the same letter, which are stems ("receiv",
"deliveri", "kettl"). So the word is compared as written and with a common ending taken off
("recieved" → "reciev"), and a term within one edit of either (a letter added, dropped, changed,
or two neighbours swapped: "retrun", "jakcet") is taken in its place; never a stop word, which
SQLite's index holds. Words of fewer than five letters are left alone: one edit of
"want" is "wait", of "real" "read", and a short word the help content lacks is more often a
real word than a misspelt one. A misspelling of the first letter is not found; few are.
"""

from __future__ import annotations

from apps.knowledge.passages import STOP_WORDS

MIN_LETTERS = 5
MAX_CORRECTIONS = 3  # terms taken for one word, the most common first
# Words of one question looked for: a chatty question holds many words the help content lacks,
# and on SQLite each first letter's terms cost a scan of FTS5's vocabulary (3.5 ms at 10,000 passages).
MAX_WORDS = 3
_ENDINGS = ("ing", "ed", "es", "s", "e", "d", "ly")


def correctable(word: str) -> bool:
    """Whether a question's word is worth correcting: letters only, and long enough for one edit to be telling."""
    return len(word) >= MIN_LETTERS and word.isalpha()


def worth_correcting(unknown: list[str]) -> list[str]:
    """Of a question's words that no passage holds, those to look for: the MAX_WORDS longest (the most telling)."""
    return sorted((w for w in unknown if correctable(w)), key=len, reverse=True)[:MAX_WORDS]


def forms(word: str) -> set[str]:
    """The word, without one common ending, and with a final y as the stemmers write it (i)."""
    out = {word}
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= MIN_LETTERS - 1:
            out.add(word[: -len(ending)])
    out |= {f[:-1] + "i" for f in list(out) if f.endswith("y")}
    return out


def distance(a: str, b: str, *, at_most: int = 1) -> int:
    """
    Edits from `a` to `b` (insert, delete, substitute, swap two neighbours: optimal string alignment).

    Stops early: anything over `at_most` is returned as `at_most + 1`.
    """
    if abs(len(a) - len(b)) > at_most:
        return at_most + 1
    before, row = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, start=1):
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (ca != cb))
            if before is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > at_most:
            return at_most + 1
        before, row = row, current
    return min(row[-1], at_most + 1)


def corrections(word: str, vocabulary: list[tuple[str, int]]) -> list[str]:
    """
    The index's terms to search for `word`, which no passage holds: those within one edit of one of
    its forms, at most MAX_CORRECTIONS, the ones most passages hold first.

    `vocabulary` is the index's terms starting with the word's letter, each with how many passages hold it.
    """
    if not correctable(word):
        return []
    written = forms(word)
    near = [(term, held) for term, held in vocabulary
            if term[:1] == word[:1] and len(term) >= MIN_LETTERS - 1 and term not in STOP_WORDS
            and any(distance(f, term) <= 1 for f in written)]
    near.sort(key=lambda found: (-found[1], found[0]))
    return [term for term, _ in near[:MAX_CORRECTIONS]]
