from django.contrib import admin
from django.urls import include, path

from apps.agui.views import router as agui_router
from apps.api.views import api
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
