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

import rfc8785


@dataclass(frozen=True)
class ToolCall:
    call_id: str  # Waypoint's own: unique in its turn, whatever the vendor sent
    tool: str
    arguments: dict[str, Any]
    vendor_id: str = ""  # the vendor's id for the call, sent back to it in the history; "" when it gave none

    def as_dict(self) -> dict[str, Any]:
        out = {"call_id": self.call_id, "tool": self.tool, "arguments": self.arguments}
        if self.vendor_id:
            out["vendor_id"] = self.vendor_id
        return out


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
    status: str  # completed | interrupted | failed | expired | abandoned | handed_off | open | human
    # status "human": not a turn but the part of the conversation a person held (PRODUCT.md "Human
    # handoff"): what the customer wrote, the person's replies and the changes of control, in order.
    human: list[HumanLine] = field(default_factory=list)


@dataclass(frozen=True)
class HumanLine:
    kind: str  # customer | staff | requested | joined | returned | timed_out
    text: str
    name: str = ""


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
        message, known = request.message, []
        if request.continuation:
            message, known = resume_point(request.history)
        steps = self._steps(message)
        rounds = [*known, *request.rounds]
        index = next_step_index(steps, rounds, approval_tools(request.tools))
        if index >= len(steps):
            return ModelRound()
        step = steps[index]
        last_result = next((list(past.results.values())[-1] for past in reversed(rounds) if past.results), None)
        text = _PLACEHOLDER.sub(lambda m: _placeholder(m, message, last_result, request.memory), step.get("say", ""))
        specs = step.get("calls") or ([{"call": step["call"], "arguments": step.get("arguments", {})}] if "call" in step else [])
        if "handoff" in step:  # asks for a person, as a model's `handoff_to_human` call does
            specs = [*specs, {"call": "handoff_to_human", "arguments": {"reason": step["handoff"]}}]
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


# One pass over the step's text, so a message or result that contains a placeholder is never read as one.
_PLACEHOLDER = re.compile(r"\{(message|memory|result)(?:\.([A-Za-z0-9_-]+))?\}")


def _placeholder(match: re.Match, message: str, result: Any, memory: list[str]) -> str:
    """
    The text of a `say` placeholder: {message}, {result} (the JSON of the last tool result), {result.<field>}
    (one field of it as text, "" when it has none: a reply people read) or {memory} (the remembered facts).
    """
    name, field_name = match.groups()
    if name == "message":
        return message if field_name is None else match.group(0)
    if name == "memory":
        return ("; ".join(memory) or "nothing") if field_name is None else match.group(0)
    if field_name is None:
        return json.dumps(result, sort_keys=True, separators=(", ", ": "))
    value = result.get(field_name) if isinstance(result, dict) else None
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def approval_tools(tools: list[dict[str, Any]]) -> frozenset[str]:
    """The names of the tools a person approves before they run."""
    return frozenset(t["name"] for t in tools if t.get("requires_approval"))


def outcome(past: PastRound, approval: frozenset[str]) -> str:
    """
    The outcome of a round's last call, as a `when` names it, or "" for none of those.

    Read from the result the model was given, as a model reading its history would: a denial, a
    declined answer, an error; a call that needed approval and has any other settled result was approved.
    """
    if not past.calls:
        return ""
    call = past.calls[-1]
    result = past.results.get(call.call_id)
    if isinstance(result, dict):
        if result.get("denied") is True:
            return "denied"
        if result.get("declined") is True:
            return "declined"
        if set(result) == {"error"}:
            return "failed"
        if _unsettled(result):
            return ""
    if result is None:
        return ""
    return "approved" if call.tool in approval else ""


def next_step_index(steps: list[dict[str, Any]], rounds: list[PastRound], approval: frozenset[str]) -> int:
    """
    The index of the step the next round takes, after `rounds` (each took one step).

    A step with `when` applies only right after that outcome of the previous call: otherwise it is
    passed over. Walking the rounds from the first makes the choice a function of the record alone.
    """
    index, previous = 0, ""
    for position in range(len(rounds) + 1):
        while index < len(steps) and steps[index].get("when") and steps[index]["when"] != previous:
            index += 1
        if position == len(rounds):
            break
        previous = outcome(rounds[position], approval)
        index += 1
    return index


def _unsettled(result: Any) -> bool:
    """A result that says the call's outcome is not known (or was given up on): it has to be made again."""
    return isinstance(result, dict) and (
        result.get("outcome") in ("unknown", "not_run") or result.get("expired") is True or result.get("status") == "abandoned"
    )


def resume_point(history: list[PastTurn]) -> tuple[str, list[PastRound]]:
    """
    Where a continuation goes on, read from the history as a model reading it would.

    Returns the message of the turn that the interrupted turns (a turn, and the continuations of
    it that were interrupted too) answer, and the rounds of its rule whose outcome is known, in
    order: the rule goes on after them.
    """
    chain: list[PastTurn] = []
    for turn in reversed(history):
        if turn.status == "human":
            continue
        chain.insert(0, turn)
        if not turn.continuation:
            break
    if not chain or chain[0].continuation:
        return "", []
    known: list[PastRound] = []
    for turn in chain:
        for past in turn.rounds:
            if any(_unsettled(r) for r in past.results.values()):
                break
            known.append(past)
    return chain[0].message, known


# --- reading what OpenAI-compatible servers send ------------------------------------------------
# Servers differ in the details of the Chat Completions format (llama.cpp's llama-server,
# llama-cpp-python, vLLM, Ollama, OpenAI itself): what they send is read tolerantly, and nothing
# a vendor sends becomes one of Waypoint's keys or reaches a bounded column unchecked.

MAX_TOOL_NAME = 64  # OpenAI's limit for a function name; every configured tool name fits in it
MAX_ARGUMENT_CHARS = 100_000
MAX_VENDOR_ID = 512  # a longer id is not kept: the call is sent back under Waypoint's own id


def _text(value: Any) -> str:
    """A wire value as text: servers send strings, but some send null, an object or content parts."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts: [{"type": "text", "text": …}, …]
        return "".join(_text(part.get("text")) if isinstance(part, dict) else _text(getattr(part, "text", "")) for part in value)
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


def _no_nul(value: Any) -> Any:
    """Drop NUL characters, which PostgreSQL refuses in text and JSON, from a value received from a model."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {_no_nul(k): _no_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_nul(v) for v in value]
    return value


def _arguments(raw: str | None) -> dict[str, Any]:
    if raw is not None and len(raw) > MAX_ARGUMENT_CHARS:
        # Kept out of the log: only its size is recorded, and the call fails with that.
        return {"_oversized_arguments": len(raw)}
    try:
        arguments = json.loads(raw or "{}", parse_constant=_no_constant)
        if not isinstance(arguments, dict):
            raise ValueError
        arguments = _no_nul(arguments)
        rfc8785.dumps(arguments)  # what the log can sign: no NaN, no integer beyond ±(2^53 − 1)
    except ValueError:
        # A malformed call becomes a call whose result tells the model so; it can retry.
        return {"_malformed_arguments": _no_nul(raw)}
    return arguments


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _joined_name(pieces: list[str]) -> str:
    """A streamed tool name: sent once (OpenAI), whole in every delta (llama-cpp-python), or in parts."""
    pieces = [p for p in pieces if p]
    if len(pieces) > 1 and all(b.startswith(a) for a, b in zip(pieces, pieces[1:], strict=False)):
        return pieces[-1]
    return "".join(pieces)


def _joined_arguments(pieces: list[str]) -> str:
    """
    Streamed tool arguments: in parts (OpenAI, llama-cpp-python), or whole, repeated or at the end.

    The parts joined are taken when they make a JSON object; otherwise the last part, when it alone
    is one (a server that sent the whole text again) or each part repeats the one before (the text so
    far); otherwise what was sent, to be reported as malformed.
    """
    pieces = [p for p in pieces if p]
    whole = "".join(pieces)
    if len(pieces) < 2 or _is_object(whole):
        return whole
    if _is_object(pieces[-1]) or all(b.startswith(a) for a, b in zip(pieces, pieces[1:], strict=False)):
        return pieces[-1]
    return whole


@dataclass
class _WireCall:
    """A tool call as one vendor sent it, before Waypoint gives it its own id."""

    vendor_id: str = ""
    names: list[str] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)


def _tool_calls(wire: list[_WireCall], round_number: int) -> list[ToolCall]:
    """
    Give a round's calls Waypoint's ids (`call_<round>_<n>`) and keep each vendor id for the wire.

    A vendor id is kept only when it is there, not too long and not repeated in the round. A name
    longer than any tool's is cut (and so names no tool: the call fails as an unknown tool).
    """
    seen: set[str] = set()
    out = []
    for n, call in enumerate(wire, 1):
        vendor_id = _no_nul(call.vendor_id)
        if not vendor_id or len(vendor_id) > MAX_VENDOR_ID or vendor_id in seen:
            vendor_id = ""
        seen.add(vendor_id)
        name = _no_nul(_joined_name(call.names)).strip()
        if len(name) > MAX_TOOL_NAME:
            name = name[:MAX_TOOL_NAME] + "…"
        out.append(ToolCall(f"call_{round_number}_{n}", name, _arguments(_joined_arguments(call.arguments)), vendor_id))
    return out


def _usage(usage: Any) -> dict[str, int]:
    """Token counts when the server reports them (some never do, some only in a stream's last chunk)."""
    out = {}
    for name in ("prompt_tokens", "completion_tokens"):
        n = getattr(usage, name, None)
        if isinstance(n, int) and not isinstance(n, bool):
            out[name] = n
    return out


def _message_calls(message: Any) -> list[_WireCall]:
    """The tool calls of a whole (non-streamed) answer: `tool_calls`, else the legacy `function_call`."""
    wire = []
    for tc in getattr(message, "tool_calls", None) or []:
        function = getattr(tc, "function", None)
        wire.append(_WireCall(_text(getattr(tc, "id", None)), [_text(getattr(function, "name", None))],
                              [_text(getattr(function, "arguments", None))]))
    legacy = getattr(message, "function_call", None)
    if not wire and legacy is not None:
        wire.append(_WireCall("", [_text(getattr(legacy, "name", None))], [_text(getattr(legacy, "arguments", None))]))
    return wire


class _StreamedCalls:
    """The tool calls of a streamed answer, assembled from deltas whatever the server's habits."""

    def __init__(self) -> None:
        self.calls: list[_WireCall] = []
        self.at: dict[int, int] = {}  # the vendor's index -> the position of its current call
        self.legacy = _WireCall()

    def add(self, delta: Any) -> None:
        for position, tc in enumerate(getattr(delta, "tool_calls", None) or []):
            vendor_id = _text(getattr(tc, "id", None))
            index = getattr(tc, "index", None)
            if not isinstance(index, int) or isinstance(index, bool):
                index = -1 - position  # no index: the position in this delta (ids below tell calls apart)
            current = self.calls[self.at[index]] if index in self.at else None
            # Another id at the same index is another call (servers that send each call whole at index 0).
            if current is None or (vendor_id and current.vendor_id and vendor_id != current.vendor_id):
                current = _WireCall(vendor_id)
                self.at[index] = len(self.calls)
                self.calls.append(current)
            current.vendor_id = current.vendor_id or vendor_id
            function = getattr(tc, "function", None)
            if function is not None:
                current.names.append(_text(getattr(function, "name", None)))
                current.arguments.append(_text(getattr(function, "arguments", None)))
        legacy = getattr(delta, "function_call", None)
        if legacy is not None:
            self.legacy.names.append(_text(getattr(legacy, "name", None)))
            self.legacy.arguments.append(_text(getattr(legacy, "arguments", None)))

    def wire(self) -> list[_WireCall]:
        # Servers that send both (llama-cpp-python) mean the same call twice: tool_calls wins.
        if self.calls:
            return self.calls
        return [self.legacy] if any(self.legacy.names) else []


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
            {"id": c.vendor_id or c.call_id, "type": "function", "function": {"name": c.tool, "arguments": json.dumps(c.arguments)}}
            for c in past.calls
        ],
    }]
    for c in past.calls:
        # Always a string: a tool message's content is text on every server, whatever the result is.
        out.append({"role": "tool", "tool_call_id": c.vendor_id or c.call_id, "content": json.dumps(past.results.get(c.call_id))})
    return out


def _human_message(line: HumanLine) -> dict[str, str]:
    """One line of the part a person held, as the model reads it: the customer as the user, the rest said by the system."""
    person = line.name or "A person from the support team"
    match line.kind:
        case "customer":
            return {"role": "user", "content": line.text}
        case "staff":
            return {"role": "system", "content": f"{person} (a person, not you) replied to the customer: {line.text}"}
        case "requested":
            why = f" Reason: {line.text}" if line.text else ""
            return {"role": "system", "content": f"The conversation was handed to a person.{why}"}
        case "joined":
            return {"role": "system", "content": f"{person} took over the conversation from you."}
        case "returned":
            note = f" Their note for you: {line.text}" if line.text else ""
            return {"role": "system", "content": f"{person} handed the conversation back to you.{note}"}
        case _:
            return {"role": "system", "content": f"No person was free; the customer was told: {line.text}"}


def openai_messages(request: ModelRequest, *, budget_tokens: int = 0) -> list[dict[str, Any]]:
    """
    Build the Chat Completions message list for a request: the earlier turns from the record, then this one.

    `budget_tokens` (0: no bound) bounds what is sent (docs/api.md, "Bounded context"): the newest
    earlier turns that fit are kept, and always the instructions, the remembered facts, this turn and
    every earlier turn with an action whose outcome is still unknown (what a re-attempt repeats).
    One system line says what was left out.
    """
    messages: list[dict[str, Any]] = []
    if request.instructions:
        messages.append({"role": "system", "content": request.instructions})
    if request.memory:
        messages.append({"role": "system", "content": "Facts to remember:\n" + "\n".join(f"- {m}" for m in request.memory)})
    earlier = [_turn_messages(turn) for turn in request.history]
    current = _current_messages(request)
    if budget_tokens:
        earlier = _fit(earlier, request.history, budget_tokens - estimate_tokens(messages) - estimate_tokens(current))
    for block in earlier:
        messages += block
    return messages + current


def _turn_messages(turn: PastTurn) -> list[dict[str, Any]]:
    messages = [_human_message(line) for line in turn.human]
    if turn.message:
        messages.append({"role": "user", "content": turn.message})
    for past in turn.rounds:
        if past.calls:
            messages += _round_messages(past)
    if turn.reply:
        messages.append({"role": "assistant", "content": turn.reply})
    return messages


def estimate_tokens(messages: list[dict[str, Any]]) -> int:
    """
    A generous count of the tokens messages take: a token per three characters of their JSON.

    Tokenizers differ per model and none is at hand here; English runs about four characters a
    token, so this errs on the side of sending less.
    """
    return sum(len(json.dumps(m, ensure_ascii=False)) // 3 + 4 for m in messages)


def _unknown_outcome(turn: PastTurn) -> bool:
    return any(isinstance(r, dict) and r.get("outcome") == "unknown" for past in turn.rounds for r in past.results.values())


def _fit(blocks: list[list[dict[str, Any]]], history: list[PastTurn], budget: int) -> list[list[dict[str, Any]]]:
    """The newest earlier turns that fit `budget`, the ones that must not be forgotten, and a line for the rest."""
    if estimate_tokens([m for block in blocks for m in block]) <= budget:
        return blocks
    kept = [_unknown_outcome(turn) for turn in history]
    budget -= sum(estimate_tokens(block) for block, keep in zip(blocks, kept, strict=True) if keep) + 40
    for i in range(len(blocks) - 1, -1, -1):
        if kept[i]:
            continue
        cost = estimate_tokens(blocks[i])
        if cost > budget:
            break
        kept[i], budget = True, budget - cost
    left_out = [turn for turn, keep in zip(history, kept, strict=True) if not keep]
    if not left_out:
        return blocks
    said = sum(1 for turn in left_out if turn.status != "human")
    parts = [f"{said} earlier turn{'s' if said != 1 else ''}"] if said else []
    if any(turn.status == "human" for turn in left_out):
        parts.append("earlier messages with a person")
    line = {"role": "system", "content": (
        f"Left out here to fit the model's context: {' and '.join(parts)} of this conversation. What follows is "
        "its newest part, and every earlier action whose outcome is still unknown.")}
    return [[line], *(block for block, keep in zip(blocks, kept, strict=True) if keep)]


def _current_messages(request: ModelRequest) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
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
    """
    Any OpenAI-compatible Chat Completions endpoint with tool calling.

    Sends only what the specification allows and every common server accepts; reads answers
    tolerantly (see "reading what OpenAI-compatible servers send" above).
    """

    RETRIES = 3
    DEFAULT_TIMEOUT_SECONDS = 60.0

    DEFAULT_REPLY_TOKENS = 512  # kept free for the reply when the model sets no max_output_tokens

    def __init__(self, config: dict[str, Any], *, api_key: str, base_url: str, retry_seconds: float = 0.5,
                 client: Any = None, sleep=time.sleep, refusal: str = "", context_tokens: int = 0):
        import openai

        self.refusal = refusal  # why this endpoint may not be called: the round fails with it, nothing is sent
        self.model = config["model"]
        self.stream = bool(config.get("stream"))
        self.temperature = config.get("temperature")
        self.max_output_tokens = config.get("max_output_tokens")
        # The model's context window (the assistant's, else the deployment's; 0: unbounded): what is sent fits in it.
        self.context_tokens = int(config.get("context_tokens") or context_tokens or 0)
        self.tool_choice = config.get("tool_choice")
        self.timeout = float(config.get("timeout_seconds") or self.DEFAULT_TIMEOUT_SECONDS)
        self.sleep = sleep
        self.retry_seconds = retry_seconds
        self.client = client or openai.OpenAI(
            api_key=api_key or "not-needed", base_url=base_url or None, max_retries=0, timeout=self.timeout
        )

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The Chat Completions request for a model round (without the transport's timeout)."""
        body: dict[str, Any] = {"model": self.model}
        tools = _openai_tools(request.tools) if request.tools and not request.closing else []
        budget = 0
        if self.context_tokens:
            reply = self.max_output_tokens or self.DEFAULT_REPLY_TOKENS
            budget = max(1, self.context_tokens - reply - estimate_tokens(tools))
        body["messages"] = openai_messages(request, budget_tokens=budget)
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_output_tokens is not None:
            # `max_tokens`, not `max_completion_tokens`: llama.cpp, llama-cpp-python, vLLM and Ollama
            # read only this one, and OpenAI still accepts it for its chat models.
            body["max_tokens"] = self.max_output_tokens
        if tools:
            body["tools"] = tools
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
        import httpx
        import openai

        if self.refusal:
            raise ModelFailed(self.refusal)
        body = self.request_body(request)
        round_number = len(request.rounds) + 1
        delay = self.retry_seconds
        for attempt in range(self.RETRIES + 1):
            try:
                response = self.client.chat.completions.create(**body, timeout=self.timeout)
                if self.stream:
                    return self._collect(response, on_draft, round_number)
                return self._read(response, round_number)
            except (openai.RateLimitError, openai.InternalServerError, openai.APIConnectionError, httpx.TransportError) as exc:
                # A stream cut off half way is retried as a whole: the next attempt's drafts replace its text.
                if attempt == self.RETRIES:
                    raise ModelFailed(f"The model service is unavailable ({type(exc).__name__}); please try again later.") from exc
                self.sleep(delay)
                delay *= 2
            except openai.APIStatusError as exc:
                raise ModelFailed(f"The model service refused the request (HTTP {exc.status_code}).") from exc
            except (openai.APIError, json.JSONDecodeError) as exc:
                # An error event inside a stream, or a chunk that is not JSON.
                raise ModelFailed("The model service sent an answer that could not be read.") from exc
        raise AssertionError("unreachable")

    def _read(self, response: Any, round_number: int) -> ModelRound:
        """Read a whole answer."""
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list):
            # A proxy's HTML page or another non-JSON body comes back from the client as a string.
            raise ModelFailed("The model service did not answer with a chat completion.")
        message = getattr(choices[0], "message", None) if choices else None
        if message is None:
            raise ModelFailed("The model returned no answer.")
        text = _no_nul(_text(getattr(message, "content", None)))
        return ModelRound(text=text, calls=_tool_calls(_message_calls(message), round_number), usage=_usage(getattr(response, "usage", None)))

    def _collect(self, stream: Any, on_draft: DraftSink, round_number: int) -> ModelRound:
        """Assemble a streamed answer, passing the text so far to `on_draft` as it grows."""
        text = ""
        calls = _StreamedCalls()
        usage: dict[str, int] = {}
        for chunk in stream:
            usage = _usage(getattr(chunk, "usage", None)) or usage
            for choice in getattr(chunk, "choices", None) or []:
                if getattr(choice, "index", 0) not in (0, None):
                    continue  # only the first choice is the answer (n is never asked for)
                delta = getattr(choice, "delta", None)
                if delta is None:
                    continue
                piece = _no_nul(_text(getattr(delta, "content", None)))
                if piece:
                    text += piece
                    on_draft(text)
                calls.add(delta)
        return ModelRound(text=text, calls=_tool_calls(calls.wire(), round_number), usage=usage)


OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"


def model_endpoints() -> tuple[str, ...]:
    """The base URLs this deployment sends its model key to: its own, and those it lists besides."""
    from django.conf import settings

    return (settings.WAYPOINT_OPENAI_BASE_URL or OPENAI_DEFAULT_BASE_URL, *settings.WAYPOINT_MODEL_BASE_URLS)


def provider_for(config: dict[str, Any]) -> Provider:
    """Build the provider an assistant configuration names."""
    from django.conf import settings

    from apps.actions.registry import private_target
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
        context_tokens=settings.WAYPOINT_MODEL_CONTEXT_TOKENS,
    )
