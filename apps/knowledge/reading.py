"""
Reading a document: Markdown, HTML, plain text or PDF in, its sections out (a heading and its paragraphs).

Pure apart from the parsers it calls (markdown-it, nh3, pypdf): no database, no settings. Every
failure is an `Unreadable` whose message says what is wrong in words an uploader can act on.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

import nh3
from markdown_it import MarkdownIt

FORMATS = ("markdown", "html", "text", "pdf")
_EXTENSIONS = {
    ".md": "markdown", ".markdown": "markdown", ".mdown": "markdown",
    ".html": "html", ".htm": "html", ".xhtml": "html",
    ".txt": "text", ".text": "text",
    ".pdf": "pdf",
}
_MEDIA_TYPES = {
    "text/markdown": "markdown", "text/x-markdown": "markdown",
    "text/html": "html", "application/xhtml+xml": "html",
    "text/plain": "text",
    "application/pdf": "pdf",
}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
# Tags that end a paragraph when HTML becomes text; everything else is inline.
_BLOCKS = {"p", "div", "section", "article", "li", "tr", "pre", "blockquote", "dd", "dt", "table", "ul", "ol",
           "header", "footer", "main", "aside", "figure", "figcaption", "details", "summary", "hr"}
# Elements whose content is not the page's text: code, metadata, embedded objects.
_DROPPED = {"script", "style", "noscript", "template", "head", "title", "svg", "math", "iframe", "object"}
_WHITESPACE = re.compile(r"[ \t\r\f\v\u00a0]+")


class Unreadable(Exception):
    """The content cannot be read as the format it claims (or as any format we take)."""


@dataclass
class Section:
    """The paragraphs under one heading (`anchor`; None before the first heading)."""

    anchor: str | None
    paragraphs: list[str] = field(default_factory=list)


def detect_format(*, declared: str | None, filename: str = "", media_type: str = "", head: bytes = b"") -> str:
    """
    The format of an upload: what the caller declared, else its file name, else its media type, else its bytes.

    :raises Unreadable: a type we do not take (an image, a Word file, an archive, …)
    """
    if declared:
        if declared not in FORMATS:
            raise Unreadable(f"format must be one of {', '.join(FORMATS)}")
        return declared
    if head.startswith(b"%PDF-"):
        return "pdf"
    suffix = filename[filename.rfind("."):].lower() if "." in filename else ""
    media = media_type.split(";", 1)[0].strip().lower()
    found = _EXTENSIONS.get(suffix) or _MEDIA_TYPES.get(media)
    if found is None and (suffix or (media and media != "application/octet-stream")):
        raise Unreadable(f"{filename or media} is not a type we index: send Markdown, HTML, plain text or PDF")
    if found == "pdf":
        return found
    # A name or a type says text, but an image or an archive is not text whatever it is called.
    if _looks_binary(head):
        raise Unreadable(f"{filename or 'the file'} is not text, and not a PDF: send Markdown, HTML, plain text or PDF")
    return found or "text"


def _looks_binary(head: bytes) -> bool:
    return b"\x00" in head[:8192]


def read(content: bytes, format: str) -> list[Section]:
    """
    The sections of a document in `format`.

    :raises Unreadable: not UTF-8 text, an unreadable or encrypted PDF, or no text at all
    """
    if format == "pdf":
        sections = _pdf(content)
    else:
        text = _decode(content)
        sections = {"markdown": _markdown, "html": _html, "text": _plain}[format](text)
    sections = [s for s in sections if s.paragraphs]
    if not sections:
        raise Unreadable("the document has no text to index")
    return sections


def _decode(content: bytes) -> str:
    if _looks_binary(content):
        raise Unreadable("the file is not text (it contains NUL bytes)")
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Unreadable("text must be UTF-8") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _clean(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def _plain(text: str) -> list[Section]:
    paragraphs = [_clean(" ".join(block.split("\n"))) for block in re.split(r"\n\s*\n", text)]
    return [Section(None, [p for p in paragraphs if p])]


# --- Markdown -----------------------------------------------------------------------------------

_MD = MarkdownIt("commonmark").enable("table")


def _markdown(text: str) -> list[Section]:
    sections = [Section(None)]
    in_heading = False
    lists = 0
    cells: list[str] | None = None
    for token in _MD.parse(text):
        kind = token.type
        if kind == "heading_open":
            in_heading = True
        elif kind == "heading_close":
            in_heading = False
        elif kind in ("bullet_list_open", "ordered_list_open"):
            lists += 1
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists -= 1
        elif kind == "tr_open":
            cells = []
        elif kind == "tr_close" and cells is not None:
            if row := " | ".join(c for c in cells if c):
                sections[-1].paragraphs.append(row)
            cells = None
        elif kind == "inline":
            words = _clean(_inline_text(token))
            if not words:
                continue
            if in_heading:
                sections.append(Section(words))
            elif cells is not None:
                cells.append(words)
            else:
                sections[-1].paragraphs.append(f"- {words}" if lists else words)
        elif kind in ("fence", "code_block") and token.content.strip():
            sections[-1].paragraphs.append(token.content.strip())
        elif kind == "html_block":
            sections[-1].paragraphs.extend(p for s in _html(token.content) for p in s.paragraphs)
    return sections


def _inline_text(token) -> str:
    parts = []
    for child in token.children or ():
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(child.content)  # its alt text
        elif child.type == "html_inline":
            continue  # markup, not words
    return "".join(parts)


# --- HTML ---------------------------------------------------------------------------------------


def sanitised(html: str) -> str:
    """HTML with every script, style, comment, attribute and unknown tag gone: only text and its structure."""
    return nh3.clean(html, tags=_HEADINGS | _BLOCKS | {"br", "td", "th"}, clean_content_tags=_DROPPED,
                     attributes={}, strip_comments=True, link_rel=None)


class _Text(HTMLParser):
    """Sanitised HTML to sections: a heading opens one, a block tag ends a paragraph."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections = [Section(None)]
        self.buffer: list[str] = []
        self.heading: list[str] | None = None

    def _flush(self) -> None:
        if text := _clean(" ".join(self.buffer)):
            self.sections[-1].paragraphs.append(text)
        self.buffer = []

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in _HEADINGS:
            self._flush()
            self.heading = []
        elif tag in _BLOCKS or tag == "br":
            self._flush()
        elif tag in ("td", "th"):
            self.buffer.append(" | " if self.buffer else "")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HEADINGS and self.heading is not None:
            if title := _clean(" ".join(self.heading)):
                self.sections.append(Section(title))
            self.heading = None
        elif tag in _BLOCKS:
            self._flush()

    def handle_data(self, data: str) -> None:
        (self.heading if self.heading is not None else self.buffer).append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def _html(text: str) -> list[Section]:
    parser = _Text()
    parser.feed(sanitised(text))
    parser.close()
    return parser.sections


# --- PDF ----------------------------------------------------------------------------------------


def _pdf(content: bytes) -> list[Section]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(content))
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("the PDF is encrypted: upload it without a password")
        headings = _outline(reader)
        sections = [Section(None)]
        for number, page in enumerate(reader.pages):
            if number in headings:
                sections.append(Section(headings[number]))
            text = (page.extract_text() or "").replace("\r\n", "\n")
            for block in re.split(r"\n\s*\n", text):
                if paragraph := _clean(" ".join(block.split("\n"))):
                    sections[-1].paragraphs.append(paragraph)
    except Unreadable:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError, OSError) as exc:
        # pypdf raises all of these on damaged files; none is ours to show as a 500.
        raise Unreadable(f"the PDF cannot be read ({type(exc).__name__})") from None
    if not any(s.paragraphs for s in sections):
        raise Unreadable("the PDF has no text layer (a scan?): nothing to index")
    return sections


def check_pdf(content: bytes) -> None:
    """
    Refuse a PDF that cannot be opened or is encrypted, without reading its pages.

    :raises Unreadable: not a PDF, damaged beyond opening, or encrypted
    """
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    if not content.startswith(b"%PDF-"):
        raise Unreadable("the file is not a PDF")
    try:
        reader = PdfReader(io.BytesIO(content))
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("the PDF is encrypted: upload it without a password")
        if len(reader.pages) == 0:
            raise Unreadable("the PDF has no pages")
    except Unreadable:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError, OSError) as exc:
        raise Unreadable(f"the PDF cannot be read ({type(exc).__name__})") from None


def _outline(reader) -> dict[int, str]:
    """The first bookmark of each page that has one: a PDF's headings, where its author made them."""
    found: dict[int, str] = {}

    def walk(items) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item)
                continue
            try:
                page = reader.get_destination_page_number(item)
            except Exception:  # noqa: BLE001 - a broken bookmark is no heading, not a failed file
                continue
            if page is not None and page not in found and (title := _clean(str(item.title or ""))):
                found[page] = title[:300]

    try:
        walk(reader.outline)
    except Exception:  # noqa: BLE001 - as above: without headings the pages are still read
        return {}
    return found
