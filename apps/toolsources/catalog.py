"""
A tool source's catalog (PRODUCT.md "Tool sources: MCP"): each tool's fingerprint and class, and
what a refresh does to what was reviewed. Pure: no Django.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import jsonschema

CLASSES = ("read", "idempotent", "write", "destructive")
MEANING = {
    "read": "This only reads from {source}.",
    "idempotent": "This changes data in {source}; doing it twice has the same effect as once.",
    "write": "This changes data in {source}.",
    "destructive": "This changes data in {source} and cannot be undone.",
}


def fingerprint(tool: dict[str, Any]) -> str:
    """What a review of a tool covers: its name, description, input schema and annotations."""
    seen = {k: tool.get(k) for k in ("name", "description", "input_schema", "annotations")}
    return hashlib.sha256(json.dumps(seen, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:32]


def class_of(annotations: dict[str, Any] | None) -> str:
    """
    A tool's class from its annotations, with the specification's defaults for what is missing.

    `read` (readOnlyHint), `idempotent` (idempotentHint and not destructive), `write` (not
    destructive), else `destructive`: an unannotated tool is destructive.
    """
    hints = annotations or {}
    if hints.get("readOnlyHint") is True:
        return "read"
    if hints.get("destructiveHint") is False:
        return "idempotent" if hints.get("idempotentHint") is True else "write"
    return "destructive"


def schema_problem(schema: Any) -> str:
    """Why a tool's input schema cannot be offered to a model, or ""."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return "its input schema is not a JSON schema of an object"
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        return f"its input schema is invalid: {exc.message}"
    return ""


def listed(tool: dict[str, Any]) -> dict[str, Any]:
    """One tool as the catalog keeps it, from the server's listing (name, description, input_schema, annotations)."""
    entry = {
        "name": tool["name"],
        "description": tool.get("description") or "",
        "input_schema": tool.get("input_schema") if isinstance(tool.get("input_schema"), dict) else {},
        "annotations": tool.get("annotations") or {},
    }
    entry["fingerprint"] = fingerprint(entry)
    entry["class"] = class_of(entry["annotations"])
    problem = schema_problem(tool.get("input_schema"))
    if problem:
        entry["problem"] = problem
    return entry


def merge(listing: list[dict[str, Any]], before: list[dict[str, Any]], confirmed: dict[str, str]) -> list[dict[str, Any]]:
    """
    The catalog after listing the server again.

    A tool whose fingerprint differs from the one confirmed is disabled and `changed` until
    confirmed; a tool listed before and gone now is kept as `missing`; a new tool is confirmed as
    it is (adding a source, or a tool, is the review); a tool with an invalid schema is disabled.
    """
    out = []
    names = set()
    for tool in listing:
        entry = listed(tool)
        names.add(entry["name"])
        was = confirmed.get(entry["name"])
        entry["changed"] = was is not None and was != entry["fingerprint"]
        entry["missing"] = False
        entry["enabled"] = not entry["changed"] and "problem" not in entry
        out.append(entry)
    for old in before:
        if old["name"] not in names:
            out.append({**old, "missing": True, "enabled": False})
    return out


def confirmations(catalog: list[dict[str, Any]], confirmed: dict[str, str]) -> dict[str, str]:
    """The confirmed fingerprints after a listing: new tools are confirmed as they come."""
    out = dict(confirmed)
    for tool in catalog:
        if not tool.get("missing") and tool["name"] not in out:
            out[tool["name"]] = tool["fingerprint"]
    return out
