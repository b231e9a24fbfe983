"""
Model providers behind one small interface: `complete(request) -> ModelRound`.

`scripted` is deterministic and needs no network; `openai` speaks to any OpenAI-compatible Chat
Completions endpoint with tool calling.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class ToolCall:
    call_id: str
    tool: str
    arguments: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"call_id": self.call_id, "tool": self.tool, "arguments": self.arguments}


@dataclass(frozen=True)
class ModelRound:
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class PastRound:
    text: str
    calls: list[ToolCall]
    results: dict[str, Any]  # call_id -> the result the model sees


@dataclass(frozen=True)
class PastTurn:
    """An earlier turn of the conversation as the log recorded it (apps/agent/history.py builds these)."""

    turn_id: str
    message: str  # the user's message; "" for a continuation
    continuation: bool
    rounds: list[PastRound]
    reply: str  # the committed assistant message, "" when the turn ended without one
    status: str  # completed | interrupted | failed | expired | abandoned | open


@dataclass(frozen=True)
class ModelRequest:
    """Everything a provider may look at: the conversation's earlier turns from the record, and this turn so far."""

    history: list[PastTurn]
    message: str  # this turn's user message; "" for a continuation
    rounds: list[PastRound]
    tools: list[dict[str, Any]]
    closing: bool = False
    memory: list[str] = field(default_factory=list)
    continuation: bool = False  # this turn goes on with an interrupted one (Continue)
    instructions: str = ""  # the assistant's `instructions`: the first system message


class ModelFailed(Exception):
    """The model could not produce a round; the message is safe to show."""


# Called with the text of the current round so far, while a streaming provider produces it.
DraftSink = Callable[[str], None]


def _no_draft(text: str) -> None:
    pass


class Provider(Protocol):
    def complete(self, request: ModelRequest, on_draft: DraftSink = _no_draft) -> ModelRound: ...


class ScriptedProvider:
    """A rule-based model: the first rule whose `match` is found in the message; one step per round."""

    def __init__(self, config: dict[str, Any], *, stream_delay: float = 0.0):
        self.rules = config.get("rules", [])
        self.fallback = config.get("fallback", [{"say": "You said: {message}"}])
        self.stream_delay = stream_delay

    def _steps(self, message: str) -> list[dict[str, Any]]:
        for rule in self.rules:
            if re.search(rule["match"], message, re.IGNORECASE):
                return rule["steps"]
        return self.fallback

    def complete(self, request: ModelRequest, on_draft: DraftSink = _no_draft) -> ModelRound:
        if request.closing:
            tried = [c.tool for r in request.rounds for c in r.calls]
            if not tried:
                return ModelRound()
            return ModelRound(text="I could not finish this. I tried: " + ", ".join(dict.fromkeys(tried)) + ".")
        message, offset, last_result = request.message, 0, None
        if request.continuation:
            message, offset, last_result = resume_point(request.history)
        steps = self._steps(message)
        index = offset + len(request.rounds)
        if index >= len(steps):
            return ModelRound()
        step = steps[index]
        for past in reversed(request.rounds):
            if past.results:
                last_result = list(past.results.values())[-1]
                break
        text = step.get("say", "")
        text = text.replace("{message}", message).replace(
            "{result}", json.dumps(last_result, sort_keys=True, separators=(", ", ": "))
        )
        # {memory}: the facts remembered in this conversation (built-in `remember`), or "nothing".
        text = text.replace("{memory}", "; ".join(request.memory) or "nothing")
        specs = step.get("calls") or ([{"call": step["call"], "arguments": step.get("arguments", {})}] if "call" in step else [])
        calls = [
            ToolCall(call_id=f"call_{index + 1}_{i + 1}", tool=spec["call"], arguments=dict(spec.get("arguments", {})))
            for i, spec in enumerate(specs)
        ]
        if step.get("stream"):
            # Simulates a streaming vendor: the round's text arrives word by word.
            so_far = ""
            for chunk in re.findall(r"\S+\s*", text):
                so_far += chunk
                on_draft(so_far)
                time.sleep(self.stream_delay)
        return ModelRound(text=text, calls=calls, usage={"rounds": 1})


def _unsettled(result: Any) -> bool:
    """A result that says the call's outcome is not known (or was given up on): it has to be made again."""
    return isinstance(result, dict) and (
        result.get("outcome") in ("unknown", "not_run") or result.get("expired") is True or result.get("status") == "abandoned"
    )


def resume_point(history: list[PastTurn]) -> tuple[str, int, Any]:
    """
    Where a continuation goes on, read from the history as a model reading it would.

    Returns the message of the turn that the interrupted turns (a turn, and the continuations of
    it that were interrupted too) answer, the index of the first step of its rule whose outcome is
    not known, and the last known result before it.
    """
    chain: list[PastTurn] = []
    for turn in reversed(history):
        chain.insert(0, turn)
        if not turn.continuation:
            break
    if not chain or chain[0].continuation:
        return "", 0, None
    index, last = 0, None
    for turn in chain:
        known = 0
        for past in turn.rounds:
            if any(_unsettled(r) for r in past.results.values()):
                break
            known += 1
            if past.results:
                last = list(past.results.values())[-1]
        index += known
    return chain[0].message, index, last


def _arguments(raw: str | None) -> dict[str, Any]:
    try:
        arguments = json.loads(raw or "{}")
        if not isinstance(arguments, dict):
            raise ValueError
    except ValueError:
        # A malformed call becomes a call whose result tells the model so; it can retry.
        return {"_malformed_arguments": raw}
    return arguments


def _openai_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for tool in tools:
        out.append(
            {
                "type": "function",
                "function": {
                    "name": tool["name"],
                    "description": tool.get("description", ""),
                    "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
                },
            }
        )
    return out


CONTINUE_NOTE = (
    "The previous turn was interrupted before it finished. Go on from where it stopped, using the results "
    "above. A call whose outcome is unknown may or may not have taken effect: if you call it again with the "
    "same arguments it is sent with its first attempt's idempotency key, so the other system can tell."
)


def _round_messages(past: PastRound) -> list[dict[str, Any]]:
    """A model round with tool calls: the assistant's calls, then one tool message per call, in order."""
    out: list[dict[str, Any]] = [{
        "role": "assistant",
        # Never null: several OpenAI-compatible servers refuse a null content beside tool calls.
        "content": past.text or "",
        "tool_calls": [
            {"id": c.call_id, "type": "function", "function": {"name": c.tool, "arguments": json.dumps(c.arguments)}}
            for c in past.calls
        ],
    }]
    for c in past.calls:
        out.append({"role": "tool", "tool_call_id": c.call_id, "content": json.dumps(past.results.get(c.call_id))})
    return out


def openai_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """Build the Chat Completions message list for a request: the earlier turns from the record, then this one."""
    messages: list[dict[str, Any]] = []
    if request.instructions:
        messages.append({"role": "system", "content": request.instructions})
    if request.memory:
        messages.append({"role": "system", "content": "Facts to remember:\n" + "\n".join(f"- {m}" for m in request.memory)})
    for turn in request.history:
        if turn.message:
            messages.append({"role": "user", "content": turn.message})
        for past in turn.rounds:
            if past.calls:
                messages += _round_messages(past)
        if turn.reply:
            messages.append({"role": "assistant", "content": turn.reply})
    if request.continuation:
        messages.append({"role": "system", "content": CONTINUE_NOTE})
    else:
        messages.append({"role": "user", "content": request.message})
    for past in request.rounds:
        if past.calls:
            messages += _round_messages(past)
        elif past.text:
            messages.append({"role": "assistant", "content": past.text})
    if request.closing:
        messages.append(
            {
                "role": "system",
                "content": "The step budget is spent. Reply to the user now, without tools: say briefly what you tried.",
            }
        )
    return messages


class OpenAIProvider:
    """Any OpenAI-compatible Chat Completions endpoint with tool calling."""

    RETRIES = 3
    DEFAULT_TIMEOUT_SECONDS = 60.0

    def __init__(self, config: dict[str, Any], *, api_key: str, base_url: str, retry_seconds: float = 0.5,
                 client: Any = None, sleep=time.sleep, refusal: str = ""):
        import openai

        self.refusal = refusal  # why this endpoint may not be called: the round fails with it, nothing is sent
        self.model = config["model"]
        self.stream = bool(config.get("stream"))
        self.temperature = config.get("temperature")
        self.max_output_tokens = config.get("max_output_tokens")
        self.tool_choice = config.get("tool_choice")
        self.timeout = float(config.get("timeout_seconds") or self.DEFAULT_TIMEOUT_SECONDS)
        self.sleep = sleep
        self.retry_seconds = retry_seconds
        self.client = client or openai.OpenAI(
            api_key=api_key or "not-needed", base_url=base_url or None, max_retries=0, timeout=self.timeout
        )

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The Chat Completions request for a model round (without the transport's timeout)."""
        body: dict[str, Any] = {"model": self.model, "messages": openai_messages(request)}
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_output_tokens is not None:
            # `max_tokens`, not `max_completion_tokens`: llama.cpp, llama-cpp-python, vLLM and Ollama
            # read only this one, and OpenAI still accepts it for its chat models.
            body["max_tokens"] = self.max_output_tokens
        if request.tools and not request.closing:
            body["tools"] = _openai_tools(request.tools)
            choice = self.tool_choice
            # A forced tool is forced until the turn has called a tool: forcing every round would
            # call it again and again until the step budget ran out.
            if choice not in (None, "auto", "none") and any(past.calls for past in request.rounds):
                choice = "auto"
            if choice is not None:
                body["tool_choice"] = choice if choice in ("auto", "none", "required") else {
                    "type": "function", "function": {"name": choice}}
        return body

    def complete(self, request: ModelRequest, on_draft: DraftSink = _no_draft) -> ModelRound:
        import openai

        if self.refusal:
            raise ModelFailed(self.refusal)
        kwargs = self.request_body(request)
        delay = self.retry_seconds
        for attempt in range(self.RETRIES + 1):
            try:
                response = self.client.chat.completions.create(**kwargs, timeout=self.timeout)
                if self.stream:
                    return self._collect(response, on_draft)
                break
            except (openai.RateLimitError, openai.InternalServerError, openai.APIConnectionError) as exc:
                if attempt == self.RETRIES:
                    raise ModelFailed(f"The model service is unavailable ({type(exc).__name__}); please try again later.") from exc
                self.sleep(delay)
                delay *= 2
            except openai.APIStatusError as exc:
                raise ModelFailed(f"The model service refused the request (HTTP {exc.status_code}).") from exc
        if not response.choices:
            raise ModelFailed("The model returned no answer.")
        message = response.choices[0].message
        calls = [ToolCall(call_id=tc.id, tool=tc.function.name, arguments=_arguments(tc.function.arguments)) for tc in message.tool_calls or []]
        usage = {}
        if response.usage is not None:
            usage = {
                "prompt_tokens": response.usage.prompt_tokens or 0,
                "completion_tokens": response.usage.completion_tokens or 0,
            }
        return ModelRound(text=message.content or "", calls=calls, usage=usage)

    def _collect(self, stream, on_draft: DraftSink) -> ModelRound:
        """Assemble a streamed answer, passing the text so far to `on_draft` as it grows."""
        text = ""
        parts: dict[int, dict[str, str]] = {}
        usage: dict[str, int] = {}
        for chunk in stream:
            if chunk.usage is not None:
                usage = {"prompt_tokens": chunk.usage.prompt_tokens or 0, "completion_tokens": chunk.usage.completion_tokens or 0}
            for choice in chunk.choices:
                delta = choice.delta
                if delta.content:
                    text += delta.content
                    on_draft(text)
                for tc in delta.tool_calls or []:
                    part = parts.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                    part["id"] = tc.id or part["id"]
                    if tc.function is not None:
                        part["name"] += tc.function.name or ""
                        part["arguments"] += tc.function.arguments or ""
        calls = [ToolCall(call_id=p["id"], tool=p["name"], arguments=_arguments(p["arguments"])) for _, p in sorted(parts.items())]
        return ModelRound(text=text, calls=calls, usage=usage)

def provider_for(config: dict[str, Any]) -> Provider:
    """Build the provider an assistant configuration names."""
    from django.conf import settings

    from apps.actions.registry import private_target
    from apps.agent.actions import OPENAI_DEFAULT_BASE_URL, model_endpoints
    from apps.agent.config import same_endpoint

    model = config["model"]
    if model["provider"] == "scripted":
        return ScriptedProvider(model, stream_delay=settings.WAYPOINT_SCRIPTED_STREAM_DELAY_SECONDS)
    # The deployment's key goes only to the deployment's endpoints; one stored before that rule is refused.
    deployment = settings.WAYPOINT_OPENAI_BASE_URL or OPENAI_DEFAULT_BASE_URL
    base_url = model.get("base_url") or deployment
    refusal = ""
    if not any(same_endpoint(base_url, e) for e in model_endpoints()):
        refusal = "This assistant's model endpoint is not one this deployment allows."
    elif not same_endpoint(base_url, deployment) and not settings.WAYPOINT_WEBHOOK_ALLOW_PRIVATE and (problem := private_target(base_url)):
        refusal = f"This assistant's model endpoint is refused: {problem}."
    return OpenAIProvider(
        model,
        api_key=settings.WAYPOINT_OPENAI_API_KEY,
        base_url=base_url,
        retry_seconds=settings.WAYPOINT_MODEL_RETRY_SECONDS,
        refusal=refusal,
    )
