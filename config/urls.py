import sys

from django.contrib import admin
from django.http import JsonResponse
from django.shortcuts import render
from django.urls import include, path
from django.views import defaults

from apps.agui.views import router as agui_router
from apps.api import errors as api_errors
from apps.api.v1 import api
from apps.conversations.errors import ServiceUnavailable
from apps.ops import outage
from apps.widget import demo_views

# The AG-UI edge is an operation of the v1 API (its credentials, parser, errors and OpenAPI
# document), while its code stays an edge of its own that knows nothing of the API's.
api.add_router("/ag-ui", agui_router)

urlpatterns = [
    path("staff/admin/", admin.site.urls),
    path("staff/", include("apps.staff.urls")),
    path("demo/hooks/refund", demo_views.refund_hook, name="demo-refund-hook"),
    path("", include("apps.ops.urls")),
    path("v1/", include("apps.api.urls")),
    path("", include("apps.widget.urls")),
]


def server_error(request):
    """
    Django's last resort, for what no view or exception handler answered.

    A lost database raised outside any view (a middleware's query, a session saved on the way out)
    is still an outage: 503 with Retry-After, in the API's error shape under /v1/. Anything else
    gets a page meant for people, or the API's shape.
    """
    failed = sys.exc_info()[1]
    api_path = request.path.startswith("/v1/")
    if isinstance(failed, outage.OUTAGE):
        if not api_path:
            return outage.unavailable(request)
        response = api_errors.error_response(ServiceUnavailable())
        response["Retry-After"] = str(ServiceUnavailable.retry_after)
        return response
    if api_path:
        return JsonResponse(api_errors.error_body("internal_error", "Something went wrong on our side."), status=500)
    try:
        return render(request, "500.html", status=500)
    except Exception:  # noqa: BLE001 - the page itself failed: Django's plain answer, never a traceback
        return defaults.server_error(request)


handler500 = server_error
