from django.urls import path, re_path

from apps.api import errors
from apps.api.views import api

_patterns, _app, _namespace = api.urls
for _pattern in _patterns:
    _pattern.callback = errors.json_errors(_pattern.callback)

urlpatterns = [
    path("", (_patterns, _app, _namespace)),
    re_path(r"", errors.unknown_path),
]
