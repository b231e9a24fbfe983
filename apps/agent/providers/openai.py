"""Any OpenAI-compatible Chat Completions endpoint with tool calling."""

from __future__ import annotations

import json
import time
from typing import Any

from apps.agent.providers.prompt import estimate_tokens, openai_messages
from apps.agent.providers.types import DraftSink, ModelFailed, ModelRequest, ModelRound, _no_draft
from apps.agent.providers.wire import (
    _message_calls,
    _no_nul,
    _openai_tools,
    _StreamedCalls,
    _text,
    _tool_calls,
    _usage,
)


class OpenAIProvider:
    """
    Any OpenAI-compatible Chat Completions endpoint with tool calling.

    Sends only what the specification allows and every common server accepts; reads answers
    tolerantly (`wire.py`).
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
