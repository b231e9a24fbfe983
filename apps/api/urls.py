from django.urls import path, re_path

from apps.api import errors
from apps.api.cors import with_cors
from apps.api.views import api

_patterns, _app, _namespace = api.urls
for _pattern in _patterns:
    _pattern.callback = with_cors(errors.json_errors(_pattern.callback))

urlpatterns = [
    path("", (_patterns, _app, _namespace)),
    re_path(r"", with_cors(errors.unknown_path)),
]
