"""Each format becomes passages under their headings; bad files are refused with nothing written."""

from __future__ import annotations

import pytest

from apps.knowledge import actions
from apps.knowledge.errors import FileTooLarge, UnreadableFile, UnsupportedFormat
from apps.knowledge.models import Passage, Source
from apps.knowledge.passages import MAX_WORDS
from apps.knowledge.queries import search
from tests.knowledge.documents import HELP_CENTRE, encrypted_pdf, pdf

pytestmark = pytest.mark.django_db


def passages(source) -> list[Passage]:
    return list(Passage.objects.filter(source=source).order_by("ordinal"))


def test_markdown_is_split_at_headings_that_stay_as_anchors(add):
    source = add("Returns", HELP_CENTRE["Returns"])

    found = passages(source)

    assert [p.anchor for p in found] == ["Returning an item", "Items that cannot come back"]
    assert found[0].text.startswith("You can send back any item within 30 days")
    assert source.status == "ready" and source.chunks == 2 and source.version == 1


def test_markdown_markup_is_left_out_of_the_text(add):
    source = add("Links", "## Help\n\nSee **our** [returns page](https://example.com) and `code`.")

    assert passages(source)[0].text == "See our returns page and code."


def test_html_is_sanitised_to_text_and_its_headings_kept(add):
    html = ("<html><head><title>Shop</title><style>h1{color:red}</style></head><body>"
            "<h1>Refunds</h1><p>Money goes <b>back</b> in 5 days &amp; no fee.</p>"
            "<script>steal('cookies')</script><h2>Exchanges</h2><ul><li>Swap sizes for free</li></ul></body></html>")

    source = add("Refunds", html, format="html")

    found = passages(source)
    assert [(p.anchor, p.text) for p in found] == [("Refunds", "Money goes back in 5 days & no fee."),
                                                    ("Exchanges", "Swap sizes for free")]
    assert not search("steal cookies") and not search("color red")


def test_html_of_only_a_script_is_refused(add):
    with pytest.raises(UnreadableFile):
        add("Script", "<script>alert(1)</script>", format="html")

    assert not Source.objects.exists()


def test_plain_text_is_split_at_blank_lines(add):
    source = add("Notes", "First paragraph\nwrapped.\n\nSecond paragraph.", format="text")

    assert passages(source)[0].text == "First paragraph wrapped.\n\nSecond paragraph."
    assert passages(source)[0].anchor == ""


def test_a_pdfs_text_is_indexed(add):
    source = add("Policy", pdf(["Returns are free within 30 days.", "Refunds reach your card in 5 days."]), format=None,
                 filename="policy.pdf")

    assert source.format == "pdf" and source.status == "ready"
    assert search("refunds card")[0]["source_id"] == str(source.id)


@pytest.mark.parametrize("content, filename, error", [
    (encrypted_pdf(["secret"]), "locked.pdf", UnreadableFile),
    (b"%PDF-1.4\nnot really a pdf", "broken.pdf", UnreadableFile),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "photo.png", UnsupportedFormat),
    (b"PK\x03\x04\x00\x00", "", UnsupportedFormat),
    (b"\xff\xfe\xfa latin-1 \xe9", "notes.txt", UnreadableFile),
    (b"   \n\n  ", "empty.md", UnreadableFile),
])
def test_a_file_that_cannot_be_indexed_is_refused_with_nothing_written(add, content, filename, error):
    with pytest.raises(error):
        add("Bad", content, format=None, filename=filename)

    assert not Source.objects.exists() and not Passage.objects.exists()


def test_a_file_over_the_limit_is_refused(add, settings):
    settings.WAYPOINT_KNOWLEDGE_MAX_FILE_BYTES = 1000

    with pytest.raises(FileTooLarge):
        add("Big", "word " * 300)


def test_a_long_section_becomes_passages_of_a_few_hundred_words_each(add):
    paragraphs = "\n\n".join(f"Paragraph {n} says something about returns. " * 12 for n in range(20))

    found = passages(add("Long", f"## Returns in detail\n\n{paragraphs}"))

    assert len(found) > 1
    assert all(len(p.text.split()) <= MAX_WORDS for p in found)
    assert all(p.anchor == "Returns in detail" for p in found)
    assert all(not p.text.startswith(" ") and "\n\n" in p.text for p in found)


def test_a_paragraph_longer_than_a_passage_is_cut_at_sentence_ends(add):
    found = passages(add("Run-on", "One sentence of ten words that goes on and on. " * 100, format="text"))

    assert len(found) > 1 and all(len(p.text.split()) <= MAX_WORDS for p in found)
    assert all(p.text.endswith(".") for p in found)


def test_the_title_defaults_to_the_files_name():
    upload = actions.check_upload(title=None, content=b"text", filename="dir/Shipping FAQ.md")

    assert upload.title == "Shipping FAQ" and upload.format == "markdown"
