"""The staff panel's Webhooks page: each endpoint, its recent deliveries, Resend, enable/disable."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from apps.staff.views import staff_only
from apps.webhooks import endpoints
from apps.webhooks.models import WebhookDelivery

RECENT = 20


@staff_only
@require_GET
def webhooks(request: HttpRequest) -> HttpResponse:
    shown = [{"endpoint": e, "deliveries": endpoints.recent(e, RECENT)} for e in endpoints.live()]
    return render(request, "staff/webhooks.html", {"endpoints": shown})


@staff_only
@require_POST
def resend(request: HttpRequest, delivery_id: int) -> HttpResponse:
    delivery = WebhookDelivery.objects.filter(pk=delivery_id, endpoint__deleted_at__isnull=True).first()
    if delivery is None:
        raise Http404("no such delivery")
    endpoints.retry(delivery)
    messages.success(request, f"{delivery.type} ({delivery.webhook_id}) is sent again now, with the same webhook-id.")
    return redirect("staff:webhooks")


@staff_only
@require_POST
def toggle(request: HttpRequest, endpoint_id) -> HttpResponse:
    endpoint = endpoints.find(str(endpoint_id))
    if endpoint is None:
        raise Http404("no such endpoint")
    enable = request.POST.get("enabled") == "1"
    endpoints.set_enabled(endpoint, enable)
    messages.success(request, f"{endpoint.url} is {'enabled' if enable else 'disabled'}.")
    return redirect("staff:webhooks")
