"""/v1/knowledge: the contract's sources and search, with an API key only, errors in the contract's shape."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.knowledge.documents import HELP_CENTRE, encrypted_pdf, pdf

pytestmark = pytest.mark.django_db

SOURCES = "/v1/knowledge/sources"


def post_file(api, name: str, content: bytes, path: str = SOURCES, method: str = "post", **fields):
    data = {"file": SimpleUploadedFile(name, content), **fields}
    if method == "post":
        return api.client.post(path, data, headers=api._headers(None))
    from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

    return api.client.put(path, encode_multipart(BOUNDARY, data), content_type=MULTIPART_CONTENT, headers=api._headers(None))


def test_adding_a_source_as_json(api):
    response = api.post(SOURCES, {"title": "Returns", "text": HELP_CENTRE["Returns"], "url": "https://help.example.com/returns"})

    assert response.status_code == 201
    body = response.json()
    assert {k: body[k] for k in ("title", "version", "status", "chunks", "format", "url")} == {
        "title": "Returns", "version": 1, "status": "ready", "chunks": 2, "format": "markdown",
        "url": "https://help.example.com/returns"}
    assert "reason" not in body


def test_adding_a_source_as_a_file(api):
    response = post_file(api, "policy.pdf", pdf(["Refunds reach your card within 5 days."]), title="Refund policy")

    assert response.status_code == 201, response.content
    assert response.json()["format"] == "pdf" and response.json()["title"] == "Refund policy"


def test_the_same_content_again_answers_the_existing_source(api):
    first = api.post(SOURCES, {"title": "Returns", "text": "Returns within 30 days."}).json()

    again = api.post(SOURCES, {"title": "Returns", "text": "Returns within 30 days."})

    assert again.status_code == 200 and again.json()["id"] == first["id"]


def test_sources_are_listed_newest_first_and_read_one_by_one(api):
    older = api.post(SOURCES, {"title": "Shipping", "text": HELP_CENTRE["Shipping"]}).json()
    newer = api.post(SOURCES, {"title": "Returns", "text": HELP_CENTRE["Returns"]}).json()

    listed = api.get(SOURCES).json()

    assert [s["id"] for s in listed] == [newer["id"], older["id"]]
    assert {"version", "status", "chunks", "updated_at"} <= set(listed[0])
    assert api.get(f"{SOURCES}/{older['id']}").json()["title"] == "Shipping"


def test_put_makes_a_new_version_and_search_sees_only_it(api):
    source = api.post(SOURCES, {"title": "Returns", "text": "Returns within 14 days."}).json()

    response = api.client.put(f"{SOURCES}/{source['id']}", {"title": "Returns", "text": "Returns within 60 days."},
                              content_type="application/json", headers=api._headers(None))

    assert response.status_code == 200 and response.json()["version"] == 2
    passages = api.post("/v1/knowledge/search", {"query": "returns within days"}).json()["passages"]
    assert [(p["version"], p["text"]) for p in passages] == [(2, "Returns within 60 days.")]


def test_put_takes_a_file_too(api):
    source = api.post(SOURCES, {"title": "Returns", "text": "Returns within 14 days."}).json()

    response = post_file(api, "returns.md", b"# Returns\n\nReturns within 90 days.", path=f"{SOURCES}/{source['id']}",
                         method="put", title="Returns")

    assert response.status_code == 200, response.content
    assert response.json()["version"] == 2


def test_delete_takes_the_passages_out_at_once(api):
    source = api.post(SOURCES, {"title": "Returns", "text": "Returns within 14 days."}).json()

    assert api.client.delete(f"{SOURCES}/{source['id']}", headers=api._headers(None)).status_code == 204

    assert api.post("/v1/knowledge/search", {"query": "returns"}).json() == {"passages": []}
    assert api.get(f"{SOURCES}/{source['id']}").status_code == 404


def test_search_answers_the_contracts_passages(api):
    for title, text in HELP_CENTRE.items():
        api.post(SOURCES, {"title": title, "text": text})

    response = api.post("/v1/knowledge/search", {"query": "how do I return a jacket that doesn't fit?", "limit": 2})

    passages = response.json()["passages"]
    assert response.status_code == 200 and len(passages) == 2
    assert passages[0]["anchor"] == "Returning an item"
    assert set(passages[0]) == {"passage_id", "source_id", "title", "version", "text", "score", "anchor"}


def test_a_large_file_answers_at_once_with_status_indexing(api, settings):
    from apps.knowledge import indexing

    settings.WAYPOINT_KNOWLEDGE_INLINE_BYTES = 100
    response = post_file(api, "guide.md", ("## Returns\n\n" + "Returns are free. " * 50).encode())

    assert response.status_code == 202 and response.json()["status"] == "indexing"
    indexing.index_pending()
    assert api.get(f"{SOURCES}/{response.json()['id']}").json()["status"] == "ready"


def test_a_file_larger_than_the_json_body_limit_is_taken(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000

    response = post_file(api, "guide.txt", b"Returns are free. " * 2000)

    assert response.status_code in (201, 202), response.content


@pytest.mark.parametrize("name, content, code", [
    ("locked.pdf", encrypted_pdf(["secret"]), "unreadable_file"),
    ("broken.pdf", b"%PDF-1.7 garbage", "unreadable_file"),
    ("photo.png", b"\x89PNG\r\n\x1a\n\x00\x00", "unsupported_format"),
    ("empty.txt", b"", "unreadable_file"),
])
def test_a_bad_file_is_a_422_in_the_contracts_shape(api, name, content, code):
    response = post_file(api, name, content)

    assert response.status_code == 422
    assert response.json()["error"]["code"] == code and response.json()["error"]["message"]
    assert api.get(SOURCES).json() == []


def test_a_file_over_the_limit_is_a_413(api, settings):
    settings.WAYPOINT_KNOWLEDGE_MAX_FILE_BYTES = 1000

    response = post_file(api, "big.txt", b"x " * 1000)

    assert response.status_code == 413 and response.json()["error"]["code"] == "payload_too_large"


def test_a_multipart_body_without_a_file_is_a_422(api):
    response = api.client.post(SOURCES, {"title": "No file"}, headers=api._headers(None))

    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"


@pytest.mark.parametrize("body", [
    {"text": "no title"},
    {"title": "Bad format", "text": "x", "format": "pdf"},
    {"title": "Bad url", "text": "x", "url": "javascript:alert(1)"},
    {"title": "Blank", "text": "   "},
    {"title": "Extra", "text": "x", "owner": "me"},
])
def test_an_invalid_json_source_is_a_422(api, body):
    response = api.post(SOURCES, body)

    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"


def test_a_query_of_100000_characters_is_a_422(api):
    response = api.post("/v1/knowledge/search", {"query": "return " * 15_000})

    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"


@pytest.mark.parametrize("source_id", ["00000000-0000-0000-0000-000000000000", "not-a-uuid"])
def test_an_unknown_source_is_a_404(api, source_id):
    assert api.get(f"{SOURCES}/{source_id}").status_code == 404
    assert api.client.delete(f"{SOURCES}/{source_id}", headers=api._headers(None)).json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("method, path, body", [
    ("get", SOURCES, None),
    ("post", SOURCES, {"title": "T", "text": "x"}),
    ("post", "/v1/knowledge/search", {"query": "returns"}),
])
def test_a_conversation_token_is_forbidden(api, token, method, path, body):
    customer = api.as_(token)

    response = customer.get(path) if method == "get" else customer.post(path, body)

    assert response.status_code == 403 and response.json()["error"]["code"] == "forbidden"


def test_no_credential_is_a_401(api):
    assert api.as_(None).get(SOURCES).json()["error"]["code"] == "unauthorized"


def test_the_openapi_document_lists_the_knowledge_operations(api):
    paths = api.get("/v1/openapi.json").json()["paths"]

    add = paths["/v1/knowledge/sources"]["post"]
    assert set(add["requestBody"]["content"]) == {"application/json", "multipart/form-data"}
    assert add["requestBody"]["content"]["multipart/form-data"]["schema"]["required"] == ["file"]
    assert {"201", "202", "413", "422"} <= set(add["responses"])
    assert {"get", "put", "delete"} <= set(paths["/v1/knowledge/sources/{source_id}"])
    assert "/v1/knowledge/search" in paths
