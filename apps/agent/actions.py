"""Writes of assistants."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from apps.agent.config import ConfigError, check_config
from apps.agent.models import Assistant
from apps.conversations.errors import InvalidAssistantConfig

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"


def model_endpoints() -> tuple[str, ...]:
    """The base URLs this deployment sends its model key to: its own, and those it lists besides."""
    return (settings.WAYPOINT_OPENAI_BASE_URL or OPENAI_DEFAULT_BASE_URL, *settings.WAYPOINT_MODEL_BASE_URLS)


def check_assistant_config(config: Any) -> dict[str, Any]:
    """`check_config` with this deployment's model endpoints. :raises ConfigError: see `check_config`"""
    return check_config(config, model_endpoints=model_endpoints())


def create_assistant(*, config: Any, is_demo: bool = False) -> Assistant:
    """
    Validate a configuration and store it as a new assistant.

    :raises InvalidAssistantConfig: the configuration is invalid; `details["problems"]` lists why
    """
    try:
        clean = check_assistant_config(config)
    except ConfigError as exc:
        raise InvalidAssistantConfig("invalid assistant configuration: " + "; ".join(exc.problems), problems=exc.problems) from exc
    return Assistant.objects.create(name=clean["name"], config=clean, is_demo=is_demo)


def load_demo(*, base_url: str, allowed_origins: list[str] | None = None, model: str = "") -> Assistant:
    """
    Create or refresh the demo assistant, whose refund webhook points at this server's demo shop.

    `allowed_origins` are the sites that may embed its widget (the demo shop of `make run`).
    `model`: a model name on the deployment's OpenAI-compatible endpoint instead of the scripted model.
    :raises ConfigError: an allowed origin is not like https://shop.example
    """
    from apps.agent.demo import DEMO_NAME, demo_config

    config = demo_config(f"{base_url.rstrip('/')}/demo/hooks/refund", model=model)
    if allowed_origins:
        config["allowed_origins"] = list(allowed_origins)
    clean = check_assistant_config(config)
    assistant = Assistant.objects.filter(is_demo=True, name=DEMO_NAME).first()
    if assistant is None:
        return Assistant.objects.create(name=clean["name"], config=clean, is_demo=True)
    assistant.config = clean
    assistant.save(update_fields=["config", "updated_at"])
    return assistant
