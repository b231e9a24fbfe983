"""
Words a customer and a help article use for the same thing, searched for each other. Pure.

A small, fixed list for support questions in general English, not a thesaurus: each group holds
words that stand for one another in a question about a shop or a service (British and American
names of the same thing, the everyday word and the help centre's word). A question's word in a
group adds the group's other words to the search, as more terms any of which may match; the
ranking then prefers the passages that hold the most of the question. What a list cannot do,
reading "shopping with you a lot" as loyalty points, is left to embeddings (docs/knowledge.md).
"""

from __future__ import annotations

GROUPS = (
    # British and American names of one thing
    "colour color", "jumper sweater", "trainers sneakers", "trousers pants", "postcode zip", "mobile cell",
    "parcel package", "post mail", "sofa couch settee", "flat apartment", "holiday vacation", "queue line",
    "instalment installment", "cheque check", "catalogue catalog", "cancelled canceled",
    # the everyday word and the help centre's
    "broken faulty damaged defective smashed cracked", "voucher coupon", "deal discount offer promotion",
    "info information details data", "delete erase wipe", "declined rejected refused", "text sms",
    "phone call telephone ring", "uni university student", "complaint complain", "cost price",
    "courier carrier", "refund reimbursement", "unsubscribe opt",
)
_BY_WORD: dict[str, tuple[str, ...]] = {}
for _group in GROUPS:
    _words = tuple(_group.split())
    for _word in _words:
        _BY_WORD[_word] = tuple(w for w in _words if w != _word)


def synonyms(words: list[str]) -> list[str]:
    """The words of `words`' groups that the question does not hold already (a plural finds its singular's group)."""
    out: list[str] = []
    for word in words:
        found = _BY_WORD.get(word) or (_BY_WORD.get(word[:-1], ()) if word.endswith("s") else ())
        out += [w for w in found if w not in words and w not in out]
    return out
