from django.urls import path, re_path

from apps.api import errors
from apps.api.cors import with_cors
from apps.api.knowledge import router as knowledge_router
from apps.api.tool_sources import router as tool_sources_router
from apps.api.v1 import api

# Registered before the URL patterns are made from the API: `api.urls` takes the routers it has.
api.add_router("/knowledge", knowledge_router)
api.add_router("/tool-sources", tool_sources_router)

_patterns, _app, _namespace = api.urls
for _pattern in _patterns:
    _pattern.callback = with_cors(errors.json_errors(_pattern.callback))

urlpatterns = [
    path("", (_patterns, _app, _namespace)),
    re_path(r"", with_cors(errors.unknown_path)),
]
