"""
What people see of a tool and what they may answer it: its name, a call's summary, its date bounds.

Pure: no Django. The assistant configuration is checked with `check_tool_words` and
`check_date_bounds` (apps/agent/config.py); the pages, the staff panel and the answer check read a
checked configuration, and `summary` never raises even on one stored before these checks.
"""

from __future__ import annotations

import json
import math
import re
import string
from datetime import UTC, date, datetime, timedelta
from typing import Any

import jsonschema

MAX_DISPLAY_NAME = 80
MAX_SUMMARY = 300
_PLACEHOLDER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
DECLINED = {"declined": True}  # the output of a question or client action the person skipped or cancelled


def display_name(tool: dict[str, Any], name: str) -> str:
    """
    What people call a tool: its `display_name` as written, else its name in words ("Issue refund").

    The one humanizing of a tool's name: cards, receipts, progress lines and notices all call it,
    so a tool is named the same wherever a person meets it.
    """
    given = tool.get("display_name")
    if isinstance(given, str) and given.strip():
        return given
    words = name.replace("_", " ").strip()
    return words[:1].upper() + words[1:]


def placeholders(template: str) -> list[str]:
    """
    The argument names a summary template names, in order.

    :raises ValueError: the template is malformed (an unclosed brace, a format spec or an index)
    """
    names = []
    for _, name, spec, conversion in string.Formatter().parse(template):
        if name is None:
            continue
        if not _PLACEHOLDER_NAME.match(name) or spec or conversion:
            raise ValueError(f"{{{name}}} is not an argument name (use {{order_id}}, nothing after it)")
        names.append(name)
    return names


def check_tool_words(tool: dict[str, Any], at: str, problems: list[str]) -> None:
    """Check a tool's `display_name` and `summary`; a summary may name only the tool's parameters."""
    if "display_name" in tool:
        name = tool["display_name"]
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_DISPLAY_NAME:
            problems.append(f"{at}.display_name: text of 1 to {MAX_DISPLAY_NAME} characters")
    if "summary" not in tool:
        return
    template = tool["summary"]
    if not isinstance(template, str) or not template.strip() or len(template) > MAX_SUMMARY:
        problems.append(f"{at}.summary: a template of 1 to {MAX_SUMMARY} characters, like \"Refund {{amount}} for order {{order_id}}\"")
        return
    try:
        names = placeholders(template)
    except ValueError as exc:
        problems.append(f"{at}.summary: malformed template: {exc}")
        return
    params = tool.get("parameters")
    known = set((params.get("properties") or {}) if isinstance(params, dict) and isinstance(params.get("properties"), dict) else {})
    missing = [n for n in dict.fromkeys(names) if n not in known]
    if missing:
        problems.append(f"{at}.summary: names {', '.join('{' + n + '}' for n in missing)}, which "
                        f"{'is' if len(missing) == 1 else 'are'} not among the tool's parameters")


def value_text(value: Any) -> str:
    """An argument's value as people read it: text as it is, yes/no, a number, else its JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return f"{value:g}" if isinstance(value, float) else str(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def summary(tool: dict[str, Any], arguments: Any) -> str:
    """
    A call in people's words: the tool's `summary` filled with the call's arguments, or "" without one.

    Never raises: an argument the call lacks reads as "…", and a template that does not parse
    (one stored before it was checked) gives "" so the caller falls back to the tool's name.
    """
    template = tool.get("summary")
    if not isinstance(template, str) or not template:
        return ""
    values = arguments if isinstance(arguments, dict) else {}
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:
        return ""
    out = []
    for literal, name, _, _ in parsed:
        out.append(literal)
        if name is not None:
            out.append(value_text(values[name]) if name in values and values[name] is not None else "…")
    return "".join(out)


def card_title(call: dict[str, Any], tool: dict[str, Any]) -> str:
    """A card's heading in people's words: the question, the tool's summary of the call, a label, its name."""
    arguments = call["arguments"] if isinstance(call["arguments"], dict) else {}
    if call["kind"] == "question" and arguments.get("question"):
        return str(arguments["question"])
    if worded := summary(tool, arguments):
        return worded
    if call["kind"] != "approval" and isinstance(arguments.get("label"), str) and arguments["label"]:
        return arguments["label"]
    if tool.get("display_name") or call["kind"] == "approval":
        return display_name(tool, call["tool"])
    return tool.get("description") or display_name(tool, call["tool"])


def approval_question(call: dict[str, Any], tool: dict[str, Any]) -> str:
    """
    An approval as the customer is asked it: "Shall I refund $20 for order A-1?".

    The card's title ("Refund $20 for order A-1") reads as an order to the person who answers it;
    the customer is asked whether the assistant should do it. Staff cards keep the title.
    """
    arguments = call["arguments"] if isinstance(call["arguments"], dict) else {}
    worded = summary(tool, arguments)
    if not worded:
        return f"Shall I go ahead with “{display_name(tool, call['tool'])}”?"
    # "Refund …" → "refund …", but a word in capitals ("SMS to …") keeps them.
    if worded[:1].isupper() and not worded[1:2].isupper():
        worded = worded[:1].lower() + worded[1:]
    return f"Shall I {worded.rstrip('.')}?"


TODAY = "today"


def _bound(spec: dict[str, Any], name: str, short: str) -> Any:
    return spec.get(name, spec.get(short, ""))


def date_bounds(spec: dict[str, Any], *, today: date, slack: int = 0) -> tuple[str, str]:
    """
    The earliest and latest date a date parameter allows (`minimum`/`maximum`, or `min`/`max`), "" for none.

    A bound may be "today": `today`, widened by `slack` days (the answer check allows for a person
    whose date is still yesterday's, or already tomorrow's, where they are).
    """
    if not isinstance(spec, dict) or spec.get("format") != "date":
        return "", ""
    low, high = _bound(spec, "minimum", "min"), _bound(spec, "maximum", "max")
    if low == TODAY:
        low = (today - timedelta(days=slack)).isoformat()
    if high == TODAY:
        high = (today + timedelta(days=slack)).isoformat()
    return (low if isinstance(low, str) else ""), (high if isinstance(high, str) else "")


def _is_date(value: Any) -> bool:
    if not isinstance(value, str) or not _ISO_DATE.match(value):
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _properties(tool: dict[str, Any]) -> dict[str, Any]:
    params = tool.get("parameters")
    props = params.get("properties") if isinstance(params, dict) else None
    return props if isinstance(props, dict) else {}


def check_date_bounds(tool: dict[str, Any], at: str, problems: list[str]) -> None:
    """Check that a date parameter's bounds are dates (YYYY-MM-DD) or "today", the earliest not after the latest."""
    for name, spec in _properties(tool).items():
        if not isinstance(spec, dict) or spec.get("format") != "date":
            continue
        given = [spec[k] for k in ("minimum", "min", "maximum", "max") if k in spec]
        if not all(v == TODAY or _is_date(v) for v in given):
            problems.append(f'{at}.parameters.properties.{name}: a date\'s minimum and maximum must be dates like 2026-12-24, or "today"')
            continue
        low, high = _bound(spec, "minimum", "min"), _bound(spec, "maximum", "max")
        if low and high and TODAY not in (low, high) and low > high:
            problems.append(f"{at}.parameters.properties.{name}: the minimum {low} is after the maximum {high}")


def answer_problem(tool: dict[str, Any], output: Any, *, today: date) -> str:
    """
    Why an answer to a client tool breaks its parameters' rules, or "".

    A declined answer has no values to check. A date outside a parameter's bounds, or a bounded
    date that is not a date, is refused; a "today" bound is `today` give or take the one day by which
    the person's own date may differ.
    """
    if output == DECLINED or not isinstance(output, dict):
        return ""
    for name, spec in _properties(tool).items():
        low, high = date_bounds(spec, today=today, slack=1)
        value = output.get(name)
        if not (low or high) or value in (None, ""):
            continue
        label = spec.get("title") or name
        if not _is_date(value):
            return f"{label} must be a date like 2026-12-24"
        if low and value < low:
            return f"{label} must be today or later" if _bound(spec, "minimum", "min") == TODAY else f"{label} must be on or after {low}"
        if high and value > high:
            return f"{label} must be today or earlier" if _bound(spec, "maximum", "max") == TODAY else f"{label} must be on or before {high}"
    return ""


def progress_phrase(tool: dict[str, Any], name: str, arguments: Any = None) -> str:
    """
    A status line for a call under way, as people say it ("Looking up your order A-1…").

    The tool's summary, filled with the call's arguments when they are known, else without its
    placeholders; without a summary, what people call the tool ("Order lookup…").
    """
    template = tool.get("summary")
    if isinstance(template, str) and template:
        if isinstance(arguments, dict):
            text = summary(tool, arguments)
        else:
            try:
                text = "".join(literal for literal, _, _, _ in string.Formatter().parse(template))
            except ValueError:
                text = ""
            text = re.sub(r"\s+", " ", text).strip(" ,:;-")
        if text:
            return text + "…"
    return f"{display_name(tool, name)}…"


# --- approvals: expiry, edits, approvers (PRODUCT.md "Approvals: expiry, edits, approvers") --------

APPROVERS = ("customer", "staff", "any")
EDITABLE_TYPES = ("string", "number", "integer")
LARGEST_INTEGER = 2**53  # what every JSON reader takes exactly (the log's canonical form refuses more)
MAX_APPROVAL_SECONDS = 30 * 86_400


def approval_settings(tool: dict[str, Any] | None) -> dict[str, Any]:
    """A tool's `approval` block with its defaults: no expiry, nothing editable, the customer approves."""
    given = (tool or {}).get("approval")
    given = given if isinstance(given, dict) else {}
    return {"expires_in_seconds": given.get("expires_in_seconds"), "editable": list(given.get("editable") or []),
            "approver": given.get("approver") or "customer"}


def named_approver(required: str, approver: str) -> str:
    """
    The one persona who may answer an approval, or "" for anyone its `approver` class allows.

    `required` is a turn's or an assistant's `required_approver`: "staff" raises the class to the
    team and names nobody; a persona outside the team beside a team approval would leave nobody who
    may answer, so the team's class stands alone then.
    """
    if not required or required == "staff":
        return ""
    if approver == "staff" and not required.startswith("staff:"):
        return ""
    return required


def check_approval(tool: dict[str, Any], at: str, problems: list[str]) -> None:
    """Check a tool's `approval` block: only on a tool that needs approval; editable fields are its parameters."""
    if "approval" not in tool:
        return
    block = tool["approval"]
    if not isinstance(block, dict):
        problems.append(f"{at}.approval: must be an object")
        return
    if not tool.get("requires_approval"):
        problems.append(f"{at}.approval: only a tool with requires_approval true has an approval to set up")
    unknown = sorted(set(block) - {"expires_in_seconds", "editable", "approver"})
    if unknown:
        problems.append(f"{at}.approval: unknown keys {unknown} (expires_in_seconds, editable, approver)")
    seconds = block.get("expires_in_seconds")
    if "expires_in_seconds" in block and not (
        isinstance(seconds, int) and not isinstance(seconds, bool) and 1 <= seconds <= MAX_APPROVAL_SECONDS
    ):
        problems.append(f"{at}.approval.expires_in_seconds: a whole number of seconds from 1 to {MAX_APPROVAL_SECONDS} (30 days)")
    if "approver" in block and block["approver"] not in APPROVERS:
        problems.append(f"{at}.approval.approver: one of {', '.join(APPROVERS)}")
    editable = block.get("editable", [])
    if not isinstance(editable, list) or not all(isinstance(n, str) for n in editable) or len(set(editable)) != len(editable):
        problems.append(f"{at}.approval.editable: a list of the tool's parameter names, each once")
        return
    missing = [n for n in editable if n not in _properties(tool)]
    if missing:
        problems.append(f"{at}.approval.editable: {', '.join(missing)} "
                        f"{'is' if len(missing) == 1 else 'are'} not among the tool's parameters")
        return
    # An edit is typed into a form field: text or a number (a list or an object is no field to type in).
    kinds = {n: (_properties(tool)[n] or {}).get("type", "string") if isinstance(_properties(tool)[n], dict) else "string"
             for n in editable}
    unfit = [n for n, kind in kinds.items() if kind not in EDITABLE_TYPES]
    if unfit:
        problems.append(f"{at}.approval.editable: {', '.join(unfit)} cannot be edited: only text and number parameters can")


def _schema_problem(spec: Any, value: Any, label: str) -> str:
    """Why `value` does not fit a parameter's JSON schema, in words, or ""."""
    if not isinstance(spec, dict):
        return ""
    try:
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(spec).iter_errors(value))
    except Exception:  # noqa: BLE001 - a tool's schema that cannot be applied (invalid, an unresolvable $ref) blocks no edit
        return ""
    if error is None:
        return ""
    kind = spec.get("type")
    if error.validator == "type" and isinstance(kind, str):
        article = "an" if kind[:1] in "aeiou" else "a"
        return f"{label} must be {article} {kind}"
    return f"{label}: {error.message}"


def edit_problem(tool: dict[str, Any], editable: list[str], edits: Any, arguments: dict[str, Any] | None = None) -> str:
    """
    Why edited arguments cannot be approved, or "": only `editable` fields, each valid for the tool's schema.

    With the call's `arguments`, the edited whole is checked against the tool's schema too (rules
    across fields), unless the call itself did not fit it: then only the edits are the approver's.
    """
    if not isinstance(edits, dict) or not edits:
        return "edited_arguments must be an object of the fields you changed"
    props = _properties(tool)
    for name, value in edits.items():
        if name not in editable:
            allowed = ", ".join(editable) if editable else "none"
            return f"{name} cannot be edited (editable: {allowed})"
        spec = props.get(name)
        label = (spec.get("title") if isinstance(spec, dict) else None) or name
        if value is None and name in ((tool.get("parameters") or {}).get("required") or []):
            return f"{label} is required"
        if isinstance(value, float) and not math.isfinite(value):
            return f"{label} must be a number"
        if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) > LARGEST_INTEGER:
            return f"{label} is too large"
        if problem := _schema_problem(spec, value, label):
            return problem
    params = tool.get("parameters")
    if isinstance(arguments, dict) and isinstance(params, dict) and not _schema_problem(params, arguments, "the call"):
        return _schema_problem(params, {**arguments, **edits}, "the changed call")
    return ""


def changes_text(arguments: dict[str, Any], edits: dict[str, Any]) -> str:
    """What an approval with changes changed, as people read it: "amount 20 → 15, note … → Thanks"."""
    parts = []
    for name, value in edits.items():
        before = arguments.get(name) if isinstance(arguments, dict) else None
        if before == value:
            continue
        parts.append(f"{name} {'…' if before is None else value_text(before)} → {value_text(value)}")
    return ", ".join(parts)


def edited_text(edits: dict[str, Any]) -> str:
    """The edited fields as the model is told them: "amount 15, note Thanks"."""
    return ", ".join(f"{name} {value_text(value)}" for name, value in edits.items())


# --- forms: a client action's fields, an approval's Edit ---------------------------------------------

_INPUT_TYPES = {"date": "date", "email": "email", "uri": "url", "date-time": "datetime-local"}


def form_fields(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Form fields for a client tool's JSON-schema parameters (flat objects of scalars)."""
    props = (schema or {}).get("properties") or {}
    required = set((schema or {}).get("required") or [])
    fields = []
    for name, spec in props.items():
        spec = spec if isinstance(spec, dict) else {}
        kind = spec.get("type", "string")
        input_type = "number" if kind in ("number", "integer") else _INPUT_TYPES.get(spec.get("format", ""), "text")
        low, high = date_bounds(spec, today=datetime.now(UTC).date())
        fields.append(
            {"name": name, "label": spec.get("title") or name.replace("_", " ").capitalize(), "input_type": input_type,
             "required": name in required or len(props) == 1, "type": kind, "min": low, "max": high}
        )
    if not fields:
        fields.append({"name": "value", "label": "Value", "input_type": "text", "required": True, "type": "string"})
    return fields


def form_output(fields: list[dict[str, Any]], data) -> dict[str, Any]:
    """Read a client-action form post back into the tool's output object."""
    out: dict[str, Any] = {}
    for field in fields:
        raw = data.get(f"field.{field['name']}", "")
        if field["type"] in ("number", "integer") and raw != "":
            try:
                out[field["name"]] = int(raw) if field["type"] == "integer" else float(raw)
            except ValueError:
                out[field["name"]] = raw
        else:
            out[field["name"]] = raw
    if list(out) == ["value"]:
        return {"value": out["value"]}
    return out


def edit_fields(tool: dict[str, Any], call: dict[str, Any]) -> list[dict[str, Any]]:
    """
    The fields of an approval's Edit: one per editable argument, typed by the tool's schema, each
    with the value the assistant asked for (`was`) and a form value to start from.
    """
    editable = call.get("editable") or []
    if not editable:
        return []
    params = tool.get("parameters") or {}
    props = params.get("properties") or {}
    schema = {"type": "object", "properties": {n: props.get(n, {}) for n in editable}, "required": params.get("required") or []}
    fields = form_fields(schema)
    for field in fields:
        value = call["arguments"].get(field["name"])
        field["was"] = "—" if value is None else value_text(value)
        field["value"] = "" if value is None else (value if isinstance(value, int | float | str) else json.dumps(value))
        field["required"] = field["name"] in schema["required"]
    return fields


def edited_arguments(call: dict[str, Any], fields: list[dict[str, Any]], data) -> dict[str, Any]:
    """The fields of an Edit that differ from what the assistant asked for, typed as the tool's schema says."""
    typed = form_output(fields, data)
    edits = {}
    for name, value in typed.items():
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # "15" in a number field is the 15 the assistant would have written
        if value != call["arguments"].get(name) and not (value == "" and call["arguments"].get(name) is None):
            edits[name] = value
    return edits
