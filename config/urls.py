from django.contrib import admin
from django.urls import include, path

from apps.widget import demo_views

urlpatterns = [
    path("staff/admin/", admin.site.urls),
    path("staff/", include("apps.staff.urls")),
    path("demo/hooks/refund", demo_views.refund_hook, name="demo-refund-hook"),
    path("", include("apps.ops.urls")),
    path("v1/", include("apps.api.urls")),
    path("", include("apps.widget.urls")),
]
