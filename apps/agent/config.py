"""
Validation of an assistant's JSON configuration (PRODUCT.md "Assistant configuration").

Checks only: no database access. `check_config` returns the normalised config or raises
`ConfigError` listing every problem with the path where it is. The built-in tools' names come from
their table (`apps/agent/calls.py`), the actions' from theirs (`apps/actions/registry.py`).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any
from urllib.parse import urlsplit

from apps.actions.registry import ACTIONS
from apps.actions.targets import TargetError, parse_target
from apps.agent.calls import BUILTINS, CLASSES
from apps.agent.handoff import HANDOFF_DEFAULTS, handoff_settings, offers_handoff_tool  # noqa: F401 - read here
from apps.agent.hours import check_hours
from apps.agent.knowledge import check_knowledge
from apps.agent.tools import check_approval, check_date_bounds, check_tool_words

PROVIDERS = {"scripted", "openai"}
MODES = {"agent", "simple"}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
TOOL_CHOICES = ("auto", "none", "required")
# The outcomes of the previous call a scripted `say` step may depend on (apps/agent/providers/scripted.py `outcome`).
WHEN = ("approved", "denied", "declined", "failed", "expired", "found", "not_found")
MAX_INSTRUCTIONS_CHARS = 20_000


class ConfigError(ValueError):
    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


def _check_steps(steps: Any, where: str, problems: list[str]) -> None:
    if not isinstance(steps, list):
        problems.append(f"{where}: must be a list of steps")
        return
    for i, step in enumerate(steps):
        at = f"{where}[{i}]"
        if not isinstance(step, dict):
            problems.append(f"{at}: must be an object")
            continue
        unknown = set(step) - {"say", "call", "arguments", "calls", "stream", "when", "handoff"}
        if unknown:
            problems.append(f"{at}: unknown keys {sorted(unknown)}")
        if "say" in step and not isinstance(step["say"], str):
            problems.append(f"{at}.say: must be text")
        if "when" in step and step["when"] not in WHEN:
            problems.append(f"{at}.when: must be one of {', '.join(WHEN)}")
        elif "when" in step and "say" not in step:
            problems.append(f"{at}.when: only a step that says something can depend on an outcome")
        if "call" in step and "calls" in step:
            problems.append(f"{at}: use either call or calls, not both")
        calls = step.get("calls", [{"call": step["call"], "arguments": step.get("arguments", {})}] if "call" in step else [])
        if not isinstance(calls, list):
            problems.append(f"{at}.calls: must be a list")
            continue
        for j, call in enumerate(calls):
            if not isinstance(call, dict) or not isinstance(call.get("call"), str):
                problems.append(f"{at}.calls[{j}]: needs a tool name in 'call'")
            elif not isinstance(call.get("arguments", {}), dict):
                problems.append(f"{at}.calls[{j}].arguments: must be an object")
        if "handoff" in step and not isinstance(step["handoff"], str):
            problems.append(f"{at}.handoff: must be the reason, as text")
        if not step.get("say") and not calls and "handoff" not in step:
            problems.append(f"{at}: a step needs 'say', a call or 'handoff'")


_HOST = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")


def is_origin(value: Any) -> bool:
    """
    Whether a value is a web origin: scheme://host[:port] and nothing else.

    No user, path, query or fragment, a host name (or an IP address) and a port from 1 to 65535;
    browsers send exactly that in `Origin`, and `frame-ancestors` takes it.
    """
    if not isinstance(value, str) or len(value) > 300:
        return False
    try:
        parts = urlsplit(value)
    except ValueError:  # an unclosed IPv6 bracket
        return False
    if parts.scheme not in ("http", "https") or f"{parts.scheme}://{parts.netloc}" != value:
        return False
    if parts.username is not None or parts.password is not None or not parts.hostname:
        return False
    try:
        port = parts.port
    except ValueError:
        return False
    if port == 0:
        return False
    host = parts.hostname
    if parts.netloc.startswith("["):
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return False
        return True
    return bool(_HOST.match(host))


def _check_webhook_url(url: Any, where: str, problems: list[str]) -> None:
    # Its address is checked when the action runs, on every connection (apps/actions/outgoing.py):
    # a name resolves anew each time, and WAYPOINT_WEBHOOK_ALLOW_PRIVATE may change in between.
    try:
        parse_target(url)
    except TargetError as exc:
        problems.append(f"{where}: a webhook needs an http(s) url; {exc}")


def same_endpoint(a: str, b: str) -> bool:
    """Whether two base URLs name the same endpoint (a trailing slash aside)."""
    return a.rstrip("/") == b.rstrip("/")


def check_config(config: Any, *, model_endpoints: tuple[str, ...] = (),
                 tool_sources: dict[str, dict[str, dict]] | None = None) -> dict[str, Any]:
    """
    Validate an assistant configuration and fill in its defaults.

    `model_endpoints`: the base URLs this deployment sends its model key to; a `model.base_url`
    must be one of them (model endpoints are the deployment's configuration, not an API caller's).
    `tool_sources`: the tools of each live tool source by id (name → input schema), which `mcp` tools name.
    :raises ConfigError: with one message per problem
    """
    problems: list[str] = []
    if not isinstance(config, dict):
        raise ConfigError(["the configuration must be a JSON object"])
    out = dict(config)
    name = config.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        problems.append("name: required text of at most 200 characters")
    out.setdefault("allow_conversation_completion", False)
    if not isinstance(out["allow_conversation_completion"], bool):
        problems.append("allow_conversation_completion: must be true or false")
    out.setdefault("step_budget", 8)
    budget = out["step_budget"]
    if not isinstance(budget, int) or isinstance(budget, bool) or not 1 <= budget <= 64:
        problems.append("step_budget: must be a whole number from 1 to 64")
    out.setdefault("mode", "agent")
    if not isinstance(out["mode"], str) or out["mode"] not in MODES:
        problems.append(f"mode: must be one of {sorted(MODES)}")
    out.setdefault("idle_timeout_seconds", None)
    idle = out["idle_timeout_seconds"]
    if idle is not None and (not isinstance(idle, int) or isinstance(idle, bool) or idle < 0):
        problems.append("idle_timeout_seconds: must be a whole number of seconds, 0 disables")
    out.setdefault("allowed_origins", [])
    if not isinstance(out["allowed_origins"], list) or not all(is_origin(o) for o in out["allowed_origins"]):
        problems.append("allowed_origins: must be a list of origins like https://shop.example")
    out.setdefault("required_approver", "")
    if not isinstance(out["required_approver"], str):
        problems.append('required_approver: must be a persona identity, or "staff"')
    out["handoff"] = _check_handoff(config.get("handoff", {}), problems)
    if "knowledge" in config:
        out["knowledge"] = check_knowledge(config["knowledge"], problems)
    if "instructions" in out and (not isinstance(out["instructions"], str) or len(out["instructions"]) > MAX_INSTRUCTIONS_CHARS):
        problems.append(f"instructions: must be text of at most {MAX_INSTRUCTIONS_CHARS} characters")

    tools = config.get("tools", [])
    names: set[str] = set(BUILTINS)
    if not isinstance(tools, list):
        problems.append("tools: must be a list")
        tools = []
    normalised_tools = []
    for i, tool in enumerate(tools):
        at = f"tools[{i}]"
        if not isinstance(tool, dict):
            problems.append(f"{at}: must be an object")
            continue
        tname = tool.get("name")
        if not isinstance(tname, str) or not _NAME.match(tname):
            problems.append(f"{at}.name: letters, digits, _ or -, starting with a letter")
            continue
        if tname in names:
            problems.append(f"{at}.name: {tname!r} is defined twice or is built in")
        names.add(tname)
        kind = tool.get("kind")
        if kind not in ("server", "client", "mcp"):
            problems.append(f"{at}.kind: unknown tool kind {kind!r} (server, client or mcp)")
            continue
        if kind == "mcp":
            normalised_tools.append(_check_mcp_tool(tool, at, problems, tool_sources))
            continue
        if kind == "server":
            action = tool.get("action")
            if not isinstance(action, str) or action not in ACTIONS:
                problems.append(f"{at}.action: unknown action {action!r} (one of {sorted(ACTIONS)})")
            if action == "webhook":
                _check_webhook_url(tool.get("url"), f"{at}.url", problems)
            if "class" in tool and tool["class"] not in CLASSES:
                problems.append(f"{at}.class: one of {', '.join(CLASSES)} (what calling it twice may do)")
        else:
            if tool.get("requires_approval"):
                problems.append(f"{at}.requires_approval: only server tools can require approval")
            if "action" in tool:
                problems.append(f"{at}.action: client tools have no server action")
            answered_by = tool.get("answered_by", "person")
            if answered_by not in ("person", "application"):
                problems.append(f"{at}.answered_by: person or application")
        if not isinstance(tool.get("requires_approval", False), bool):
            problems.append(f"{at}.requires_approval: must be true or false")
        params = tool.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(params, dict):
            problems.append(f"{at}.parameters: must be a JSON schema object")
        check_tool_words(tool, at, problems)
        check_date_bounds(tool, at, problems)
        check_approval(tool, at, problems)
        normalised_tools.append({**tool, "parameters": params, "requires_approval": bool(tool.get("requires_approval"))})
    out["tools"] = normalised_tools

    model = config.get("model")
    if not isinstance(model, dict) or not isinstance(model.get("provider"), str) or model["provider"] not in PROVIDERS:
        problems.append(f"model.provider: must be one of {sorted(PROVIDERS)}")
    elif model["provider"] == "scripted":
        rules = model.get("rules", [])
        if not isinstance(rules, list):
            problems.append("model.rules: must be a list")
            rules = []
        for i, rule in enumerate(rules):
            at = f"model.rules[{i}]"
            if not isinstance(rule, dict) or not isinstance(rule.get("match"), str):
                problems.append(f"{at}.match: needs a regular expression")
                continue
            try:
                re.compile(rule["match"], re.IGNORECASE)
            except re.error as exc:
                problems.append(f"{at}.match: bad regular expression ({exc})")
            _check_steps(rule.get("steps"), f"{at}.steps", problems)
            for step in rule.get("steps") if isinstance(rule.get("steps"), list) else []:
                calls = step.get("calls", [step] if "call" in step else []) if isinstance(step, dict) else []
                if isinstance(calls, list):  # anything else was reported by _check_steps
                    for call in calls:
                        if isinstance(call, dict) and isinstance(call.get("call"), str) and call["call"] not in names:
                            problems.append(f"{at}: calls unknown tool {call['call']!r}")
        if "fallback" in model:
            _check_steps(model["fallback"], "model.fallback", problems)
    else:
        if not isinstance(model.get("model"), str) or not model["model"]:
            problems.append("model.model: the model name is required for provider openai")
        if "base_url" in model and not (isinstance(model["base_url"], str) and re.match(r"^https?://", model["base_url"])):
            problems.append("model.base_url: must be an http(s) URL")
        elif "base_url" in model and not any(same_endpoint(model["base_url"], e) for e in model_endpoints):
            problems.append("model.base_url: not a model endpoint of this deployment (WAYPOINT_OPENAI_BASE_URL or "
                            "WAYPOINT_MODEL_BASE_URLS); leave it out to use the deployment's")
    if isinstance(model, dict):
        _check_model_settings(model, names, problems)
    if problems:
        raise ConfigError(problems)
    return out


MCP_TOOL_KEYS = {"name", "kind", "source", "tool", "requires_approval", "class", "display_name", "summary", "approval",
                 "max_result_chars", "timeout_seconds", "description"}


def _check_mcp_tool(tool: dict[str, Any], at: str, problems: list[str], sources: dict[str, dict[str, dict]] | None) -> dict[str, Any]:
    """An `mcp` tool (PRODUCT.md "Tool sources: MCP"): a live source's tool, with the assistant's overrides."""
    unknown = sorted(set(tool) - MCP_TOOL_KEYS)
    if unknown:
        problems.append(f"{at}: unknown keys {unknown} for an mcp tool")
    source, name = tool.get("source"), tool.get("tool")
    if not isinstance(source, str) or source not in (sources or {}):
        problems.append(f"{at}.source: no tool source {str(source)[:80]!r} (add it with POST /v1/tool-sources)")
    elif not isinstance(name, str) or name not in sources[source]:
        problems.append(f"{at}.tool: the source has no tool {str(name)[:80]!r}")
    if "requires_approval" in tool and not isinstance(tool["requires_approval"], bool):
        problems.append(f"{at}.requires_approval: must be true or false")
    if "class" in tool and tool["class"] not in CLASSES:
        problems.append(f"{at}.class: one of {', '.join(CLASSES)} (what calling it twice may do)")
    chars = tool.get("max_result_chars", 8000)
    if not isinstance(chars, int) or isinstance(chars, bool) or not 100 <= chars <= 1_000_000:
        problems.append(f"{at}.max_result_chars: a whole number from 100 to 1000000")
    seconds = tool.get("timeout_seconds", 30)
    if not _number(seconds) or not 0 < seconds <= 600:
        problems.append(f"{at}.timeout_seconds: a number of seconds above 0 (at most 600)")
    # Its parameters are the server's input schema: a summary or an editable field names them.
    schema = (sources or {}).get(source, {}).get(name) if isinstance(source, str) and isinstance(name, str) else None
    described = {**tool, "parameters": schema or {"type": "object", "properties": {}}}
    check_tool_words(described, at, problems)
    if "approval" in tool and tool.get("requires_approval") is not False:
        check_approval({**described, "requires_approval": True}, at, problems)
    return dict(tool)


def _check_handoff(handoff: Any, problems: list[str]) -> dict[str, Any]:
    """The `handoff` block (PRODUCT.md "Human handoff"), with its defaults filled in."""
    if not isinstance(handoff, dict):
        problems.append("handoff: must be an object")
        return dict(HANDOFF_DEFAULTS)
    out = {**HANDOFF_DEFAULTS, **handoff}
    unknown = set(handoff) - set(HANDOFF_DEFAULTS)
    if unknown:
        problems.append(f"handoff: unknown keys {sorted(unknown)}")
    for flag in ("enabled", "model_tool"):
        if not isinstance(out[flag], bool):
            problems.append(f"handoff.{flag}: must be true or false")
    timeout = out["queue_timeout_seconds"]
    if not isinstance(timeout, int) or isinstance(timeout, bool) or not 1 <= timeout <= 7 * 86_400:
        problems.append("handoff.queue_timeout_seconds: must be a whole number of seconds from 1 to 604800 (a week)")
    for text in ("queued_message", "unavailable_message"):
        if not isinstance(out[text], str) or not out[text].strip() or len(out[text]) > 500:
            problems.append(f"handoff.{text}: must be text of at most 500 characters")
    out["hours"] = check_hours(out["hours"], problems)
    return out


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_model_settings(model: dict[str, Any], tool_names: set[str], problems: list[str]) -> None:
    """The sampling and request settings any provider may be given (the scripted one ignores them)."""
    if "temperature" in model and not (_number(model["temperature"]) and 0 <= model["temperature"] <= 2):
        problems.append("model.temperature: must be a number from 0 to 2")
    tokens = model.get("max_output_tokens")
    if "max_output_tokens" in model and not (isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 1):
        problems.append("model.max_output_tokens: must be a whole number of at least 1")
    choice = model.get("tool_choice")
    if "tool_choice" in model and not (isinstance(choice, str) and (choice in TOOL_CHOICES or choice in tool_names)):
        problems.append("model.tool_choice: must be auto, none, required or the name of one of the assistant's tools")
    timeout = model.get("timeout_seconds")
    if "timeout_seconds" in model and not (_number(timeout) and 0 < timeout <= 3600):
        problems.append("model.timeout_seconds: must be a number of seconds above 0 (at most 3600)")
    context = model.get("context_tokens")
    if "context_tokens" in model and not (isinstance(context, int) and not isinstance(context, bool) and 256 <= context <= 10_000_000):
        problems.append("model.context_tokens: must be a whole number of tokens, at least 256")
    elif "context_tokens" in model and isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= context:
        problems.append("model.context_tokens: must be larger than max_output_tokens, which it has to hold")
    if "stream" in model and not isinstance(model["stream"], bool):
        problems.append("model.stream: must be true or false")


def tool_by_name(config: dict[str, Any], name: str) -> dict[str, Any] | None:
    """Return a configured tool, or the definition of a built-in one."""
    if name in BUILTINS:
        return {"name": name, "kind": "builtin", "requires_approval": False}
    return next((t for t in config.get("tools", []) if t["name"] == name), None)
