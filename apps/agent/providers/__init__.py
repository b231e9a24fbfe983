"""
Model providers behind one small interface: `complete(request) -> ModelRound`.

`scripted` is deterministic and needs no network; `openai` speaks to any OpenAI-compatible Chat
Completions endpoint with tool calling. The package: `types` (what a round is given and gives
back), `scripted`, `wire` (reading what servers send), `prompt` (the messages of a request and
fitting them to a context window), `openai` (the client).
"""

from __future__ import annotations

from typing import Any

from apps.agent.providers.openai import OPENAI_DEFAULT_BASE_URL, OpenAIProvider, model_endpoints
from apps.agent.providers.prompt import estimate_tokens, openai_messages
from apps.agent.providers.scripted import ScriptedProvider
from apps.agent.providers.types import (
    DraftSink,
    HumanLine,
    ModelFailed,
    ModelRequest,
    ModelRound,
    PastRound,
    PastTurn,
    Provider,
    ToolCall,
)
from apps.agent.providers.wire import _arguments, _openai_tools

__all__ = [
    "OPENAI_DEFAULT_BASE_URL", "DraftSink", "HumanLine", "ModelFailed", "ModelRequest", "ModelRound", "OpenAIProvider",
    "PastRound", "PastTurn", "Provider", "ScriptedProvider", "ToolCall", "_arguments", "_openai_tools", "estimate_tokens",
    "model_endpoints", "openai_messages", "provider_for",
]


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
