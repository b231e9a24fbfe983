from __future__ import annotations

import pytest
from django.utils import timezone

from tests.api.conftest import Api, api, api_key, fresh_rate_limits  # noqa: F401 - fixtures of this package too
from tests.knowledge.documents import HELP_CENTRE


@pytest.fixture
def add(db):
    """Add a source through the actions, as the API does; returns the source."""
    from apps.knowledge import actions

    def make(title: str, text: str | bytes, *, format: str | None = "markdown", url: str | None = None, filename: str = ""):
        content = text.encode() if isinstance(text, str) else text
        upload = actions.check_upload(title=title, content=content, format=format, url=url, filename=filename)
        return actions.add_source(upload=upload, now=timezone.now()).source

    return make


@pytest.fixture
def help_centre(add) -> dict:
    """The demo shop's help centre, by title."""
    return {title: add(title, text, url=f"https://help.example.com/{title.lower()}") for title, text in HELP_CENTRE.items()}


@pytest.fixture
def token(api) -> str:
    """A conversation token: a customer's credential, not the workspace's."""
    return api.start("hello")["token"]


__all__ = ["Api", "api", "api_key", "fresh_rate_limits"]
