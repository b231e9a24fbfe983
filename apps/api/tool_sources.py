"""
`/v1/tool-sources/…`: the team's MCP servers and their catalogs (PRODUCT.md "Tool sources: MCP", docs/tools.md).

A router of the v1 API (registered in apps/api/urls.py), API key only. Header values are
write-only: they are stored encrypted and no answer, page or log carries them.
"""

from __future__ import annotations

from typing import Any, Literal

import pydantic
from django.http import HttpRequest
from ninja import Path, Router, Schema
from ninja.responses import Status
from pydantic import Field

from apps.api.schemas import ErrorOut
from apps.toolsources import actions

router = Router(tags=["tool sources"])

SourceId = Path(..., description="the tool source id (UUID); unknown, malformed or deleted ids are 404")
ToolName = Path(..., description="the tool's name on its server")
BAD = frozenset({400, 401, 403, 413, 422, 429})
ERRORS = frozenset({401, 403, 404, 413, 422, 429})


class ToolSourceIn(Schema):
    model_config = pydantic.ConfigDict(extra="forbid")

    name: str = Field(..., min_length=1, max_length=200, pattern=r"\S")
    kind: Literal["mcp"] = "mcp"
    url: str = Field(..., min_length=1, max_length=2000, description="the MCP server's Streamable HTTP endpoint")
    headers: dict[str, str] | None = Field(
        None, description="sent with every request to the server (an Authorization, say); stored encrypted, never returned")


class CatalogTool(Schema):
    model_config = pydantic.ConfigDict(extra="allow")

    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]
    class_: Literal["read", "idempotent", "write", "destructive"] = Field(..., alias="class")
    fingerprint: str
    enabled: bool
    changed: bool = False
    missing: bool = False
    problem: str | None = Field(None, description="why the tool cannot be enabled (an invalid input schema)")


class ToolSourceOut(Schema):
    id: str
    name: str
    kind: Literal["mcp"]
    url: str
    header_names: list[str] = Field(..., description="the names of the headers set; their values are never returned")
    description: str
    refreshed_at: str | None
    tools: list[CatalogTool]


def _key(request: HttpRequest) -> None:
    request.auth.require_api_key()  # type: ignore[attr-defined]


@router.post("", response={201: ToolSourceOut, frozenset(BAD): ErrorOut}, summary="Add a tool source", by_alias=True)
def create(request: HttpRequest, payload: ToolSourceIn):
    """
    Connect to an MCP server and list its tools; each is confirmed as listed.

    A URL that is malformed or refused by the SSRF rules, a server that cannot be listed (not MCP,
    401, 500, too slow) → 422 in words; nothing is kept.
    """
    _key(request)
    made = actions.create_source(name=payload.name, url=payload.url, headers=payload.headers, kind=payload.kind)
    return Status(201, actions.shown(made))


@router.get("", response={200: list[ToolSourceOut], frozenset({401, 403, 429}): ErrorOut}, summary="List the tool sources", by_alias=True)
def list_sources(request: HttpRequest):
    """The live sources, oldest first, with their catalogs (never their header values)."""
    _key(request)
    return [actions.shown(s) for s in actions.live_sources()]


@router.get("/{source_id}", response={200: ToolSourceOut, frozenset(ERRORS): ErrorOut}, summary="Read a tool source", by_alias=True)
def read(request: HttpRequest, source_id: str = SourceId):
    _key(request)
    return actions.shown(actions.live_source(source_id))


@router.post("/{source_id}/refresh", response={200: ToolSourceOut, frozenset(ERRORS): ErrorOut}, summary="List a source's tools again", by_alias=True)
def refresh(request: HttpRequest, source_id: str = SourceId):
    """A tool whose definition changed is disabled (`changed: true`) until confirmed; one gone is `missing`."""
    _key(request)
    return actions.shown(actions.refresh_source(source_id))


@router.post("/{source_id}/tools/{name}/confirm", response={200: ToolSourceOut, frozenset(ERRORS): ErrorOut},
             summary="Confirm a changed tool", by_alias=True)
def confirm(request: HttpRequest, source_id: str = SourceId, name: str = ToolName):
    """Enable a changed tool as it now is (its new fingerprint is the reviewed one)."""
    _key(request)
    return actions.shown(actions.confirm_tool(source_id, name))


@router.delete("/{source_id}", response={204: None, frozenset(ERRORS): ErrorOut}, summary="Delete a tool source")
def delete(request: HttpRequest, source_id: str = SourceId):
    """Assistants that use its tools refuse them from then on (a call fails with the reason)."""
    _key(request)
    actions.delete_source(source_id)
    return Status(204, None)
