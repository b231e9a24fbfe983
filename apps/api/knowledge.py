"""
`/v1/knowledge/…`: the workspace's knowledge sources and their search (PRODUCT.md "Knowledge", docs/knowledge.md).

A router of the v1 API (registered in apps/api/urls.py): the API's credentials, errors and
OpenAPI document. API key only: a conversation token never reads or lists sources. A source's
content comes as JSON (`text`) or as a multipart `file`, so the request body is read here by its
content type, and checked by the same schema the document shows.
"""

from __future__ import annotations

from typing import Any, Literal

import pydantic
from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpRequest
from django.http.multipartparser import MultiPartParserError
from django.utils import timezone
from ninja import Path, Router, Schema
from ninja.errors import ValidationError
from ninja.responses import Status
from pydantic import Field

from apps.api import errors
from apps.api.schemas import ErrorOut
from apps.conversations.errors import BadInput, NotFound
from apps.knowledge import actions, queries

router = Router(tags=["knowledge"])

SOURCES_PATH = "/v1/knowledge/sources"
MAX_QUERY_CHARS = 1000
_URL = r"^https?://[^\s]+$"
_FIELDS_MARGIN = 1_000_000  # what a multipart body may carry besides the file: its other fields and boundaries


def _largest_upload() -> int:
    return settings.WAYPOINT_KNOWLEDGE_MAX_FILE_BYTES + _FIELDS_MARGIN


# A file larger than the JSON body limit comes as multipart: its bytes are spooled by Django's
# parser, not read whole by the guard, and the file's own size is checked once it is parsed.
errors.LARGE_UPLOADS[SOURCES_PATH] = _largest_upload

SourceId = Path(..., description="the source id (UUID); unknown, malformed or deleted ids are 404")
BAD = frozenset({400, 401, 403, 413, 422, 429})
ERRORS = frozenset({401, 403, 404, 413, 422, 429})


class SourceIn(Schema):
    """A source's content as JSON text (a file comes as multipart/form-data instead)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    title: str = Field(..., min_length=1, max_length=actions.TITLE_CHARS, pattern=r"\S")
    text: str = Field(..., min_length=1, pattern=r"\S", description="the document; at most the API's body limit (1 MB by default)")
    format: Literal["markdown", "html", "text"] = Field("markdown", description="how `text` is written; HTML is sanitised to text")
    url: str | None = Field(None, max_length=actions.URL_CHARS, pattern=_URL, description="where people read it; citations link to it")


class SourceFormIn(Schema):
    """The fields beside a multipart `file`."""

    title: str | None = Field(None, min_length=1, max_length=actions.TITLE_CHARS, pattern=r"\S",
                              description="default: the file's name without its extension")
    format: Literal["markdown", "html", "text", "pdf"] | None = Field(
        None, description="default: from the file's name, its type, or its first bytes")
    url: str | None = Field(None, max_length=actions.URL_CHARS, pattern=_URL)


class SourceOut(Schema):
    id: str
    title: str
    format: Literal["markdown", "html", "text", "pdf"]
    version: int = Field(description="1 at first, + 1 for each PUT that changes the content")
    status: Literal["indexing", "ready", "failed"] = Field(
        description="`indexing`: a large file being read in the background; its passages are searched once all are written")
    chunks: int = Field(description="the passages of the current version")
    url: str | None = None
    reason: str | None = Field(None, description="`failed`: why the file could not be indexed")
    created_at: str
    updated_at: str


class SearchIn(Schema):
    model_config = pydantic.ConfigDict(extra="forbid")

    query: str = Field(..., min_length=1, max_length=MAX_QUERY_CHARS, description="a customer's question, as they wrote it")
    sources: list[str] | None = Field(None, max_length=100, description="keep to these source ids; absent: all")
    limit: int = Field(5, ge=1, le=20)


class PassageOut(Schema):
    passage_id: str = Field(description="`<source id>:<version>:<n>`")
    source_id: str
    title: str = Field(description="the source's title")
    version: int = Field(description="the source's version the passage belongs to")
    text: str
    score: float = Field(description="keyword relevance in [0, 1), higher is better; comparable within one search")
    url: str | None = None
    anchor: str | None = Field(None, description="the heading the passage sits under")


class SearchOut(Schema):
    passages: list[PassageOut]


def _body_schema(model: type[Schema]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    return schema


_FORM = _body_schema(SourceFormIn)
_FORM["properties"]["file"] = {"type": "string", "format": "binary",
                               "description": "Markdown, HTML, plain text or PDF; at most 10 MB"}
_FORM["required"] = ["file"]
_CONTENT = {
    "requestBody": {"required": True, "content": {
        "application/json": {"schema": _body_schema(SourceIn)},
        "multipart/form-data": {"schema": _FORM},
    }},
}


def _require_api_key(request: HttpRequest) -> None:
    request.auth.require_api_key()  # type: ignore[attr-defined]


def _problems(exc: pydantic.ValidationError) -> ValidationError:
    return ValidationError([{"loc": e["loc"], "msg": e["msg"], "type": e["type"]} for e in exc.errors()])


def _upload(request: HttpRequest) -> actions.Upload:
    """The checked content of a POST or PUT, from its JSON or multipart body."""
    if request.content_type == "multipart/form-data":
        return _from_form(request)
    if request.content_type not in ("application/json", ""):
        raise BadInput("send the source as application/json or as multipart/form-data with a `file`")
    try:
        body = errors.load_json(request.body)
    except RequestDataTooBig:
        raise errors.PayloadTooLarge("a JSON body this large is refused: send the document as a multipart `file`") from None
    if not isinstance(body, dict):
        raise errors.MalformedJson("the body must be a JSON object")
    try:
        given = SourceIn.model_validate(body)
    except pydantic.ValidationError as exc:
        raise _problems(exc) from None
    return actions.check_upload(title=given.title, content=given.text.encode(), format=given.format, url=given.url)


def _from_form(request: HttpRequest) -> actions.Upload:
    try:
        # Django parses multipart bodies of POSTs only; a PUT's is parsed the same way here.
        fields, files = (request.POST, request.FILES) if request.method == "POST" else request.parse_file_upload(request.META, request)
    except RequestDataTooBig:
        raise errors.PayloadTooLarge() from None
    except (MultiPartParserError, TooManyFieldsSent, TooManyFilesSent) as exc:
        raise errors.MalformedJson(f"the multipart body cannot be read ({exc})") from None
    upload = files.get("file")
    if upload is None:
        raise BadInput("file: send the document as the multipart field `file`", problems=["file: required"])
    given = {name: fields[name] for name in ("title", "format", "url") if fields.get(name)}
    if any("\x00" in value for value in given.values()):
        raise BadInput("fields must not contain NUL characters")
    try:
        form = SourceFormIn.model_validate(given)
    except pydantic.ValidationError as exc:
        raise _problems(exc) from None
    limit = settings.WAYPOINT_KNOWLEDGE_MAX_FILE_BYTES
    if upload.size > limit:
        raise errors.PayloadTooLarge(f"a knowledge source may be at most {limit:,} bytes; this file is {upload.size:,}")
    name = (upload.name or "").replace("\x00", "")
    return actions.check_upload(title=form.title, content=upload.read(), format=form.format, url=form.url,
                                filename=name, media_type=upload.content_type or "")


def _written(written: actions.Written, *, created: bool) -> Status:
    body = queries.source_out(written.source)
    if written.source.status == "indexing" and written.changed:
        return Status(202, body)
    return Status(201 if created and written.changed else 200, body)


@router.post(
    "/sources", response={201: SourceOut, 200: SourceOut, 202: SourceOut, BAD: ErrorOut}, exclude_none=True,
    summary="Add a knowledge source", openapi_extra=_CONTENT,
)
def add_source(request: HttpRequest):
    """
    Add a document as JSON `{"title", "text", "format"?, "url"?}` or as a multipart `file` (Markdown, HTML, plain
    text or PDF; at most 10 MB) with `title`?, `format`? and `url`?.

    `201`: indexed (`status: ready`). `202`: a large file, `status: indexing` until the background
    indexer has written all its passages. `200`: the same title, format and content as a source
    that exists: that source, unchanged. A wrong type, a file too large, an unreadable or encrypted
    PDF or a document without text → 413/422 and nothing is written.
    """
    _require_api_key(request)
    upload = _upload(request)
    return _written(actions.add_source(upload=upload, now=timezone.now()), created=True)


@router.get("/sources", response={200: list[SourceOut], frozenset({401, 403, 429}): ErrorOut}, exclude_none=True,
            summary="List the knowledge sources")
def list_sources(request: HttpRequest):
    """The sources, newest first, with their `version`, `status`, `chunks` and `updated_at`."""
    _require_api_key(request)
    return [queries.source_out(s) for s in queries.live_sources()]


@router.get("/sources/{source_id}", response={200: SourceOut, ERRORS: ErrorOut}, exclude_none=True,
            summary="Read a knowledge source")
def get_source(request: HttpRequest, source_id: str = SourceId):
    """One source; `status: failed` carries the `reason`."""
    _require_api_key(request)
    source = queries.live_source(source_id)
    if source is None:
        raise NotFound("no such knowledge source")
    return queries.source_out(source)


@router.put(
    "/sources/{source_id}", response={200: SourceOut, 202: SourceOut, ERRORS | {400}: ErrorOut}, exclude_none=True,
    summary="Replace a knowledge source's content", openapi_extra=_CONTENT,
)
def replace_source(request: HttpRequest, source_id: str = SourceId):
    """
    New content, the same body as POST → `version` + 1; the old version's passages leave the search at once.

    The same title, format and content as the current version → `200`, the version unchanged.
    `202`: a large file being indexed; until it is, the source has no passages in the search.
    """
    _require_api_key(request)
    if queries.live_source(source_id) is None:
        raise NotFound("no such knowledge source")
    upload = _upload(request)
    return _written(actions.replace_source(source_id=source_id, upload=upload, now=timezone.now()), created=False)


@router.delete("/sources/{source_id}", response={204: None, ERRORS: ErrorOut}, summary="Delete a knowledge source")
def delete_source(request: HttpRequest, source_id: str = SourceId):
    """Its passages leave the search at once; a later GET is 404."""
    _require_api_key(request)
    actions.delete_source(source_id=source_id, now=timezone.now())
    return Status(204, None)


@router.post("/search", response={200: SearchOut, BAD: ErrorOut}, exclude_none=True, summary="Search the knowledge")
def search(request: HttpRequest, payload: SearchIn):
    """
    The passages that best answer a question, best first: the same search the assistant's `search_knowledge` makes.

    Any of the question's words may match (its stop words and question words are left out);
    only current versions of sources that are not deleted.
    """
    _require_api_key(request)
    return {"passages": queries.search(payload.query, sources=payload.sources, limit=payload.limit)}
