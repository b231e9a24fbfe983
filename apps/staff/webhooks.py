"""The staff panel's Webhooks page: add an endpoint (its secret shown once), each endpoint's recent deliveries, Resend, Send test, enable/disable, Delete."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from apps.staff.views import staff_only
from apps.webhooks import endpoints
from apps.webhooks import queries as webhook_queries
from apps.webhooks.endpoints import EndpointRefused
from apps.webhooks.events import TYPES
from apps.webhooks.models import WebhookDelivery

RECENT = 20


def _page(request: HttpRequest, *, status: int = 200, **context) -> HttpResponse:
    shown = [{"endpoint": e, "deliveries": webhook_queries.recent(e, RECENT)} for e in webhook_queries.live()]
    template = "staff/webhooks.html#endpoints" if request.GET.get("live") else "staff/webhooks.html"
    return render(request, template, {"endpoints": shown, "types": [t for t in TYPES if t != "webhook.test"], **context},
                  status=status)


@staff_only
@require_http_methods(["GET", "POST"])
def webhooks(request: HttpRequest) -> HttpResponse:
    """
    The endpoints and their deliveries (`?live=1`: only that part, which the page polls); a POST adds an endpoint.

    The new endpoint's secret is shown on the answer to its POST and never again, as the API does.
    """
    if request.method == "GET":
        return _page(request)
    url = request.POST.get("url", "").strip()
    chosen = request.POST.getlist("events")
    try:
        made = endpoints.create(url=url, events=chosen, description=request.POST.get("description", "").strip()[:200])
    except EndpointRefused as exc:
        return _page(request, status=422, problem=exc.message, form={"url": url, "events": chosen})
    return _page(request, status=201, created=made)


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
    endpoint = _endpoint(endpoint_id)
    enable = request.POST.get("enabled") == "1"
    endpoints.set_enabled(endpoint, enable)
    messages.success(request, f"{endpoint.url} is {'enabled' if enable else 'disabled'}.")
    return redirect("staff:webhooks")


@staff_only
@require_POST
def send_test(request: HttpRequest, endpoint_id) -> HttpResponse:
    endpoint = _endpoint(endpoint_id)
    made = endpoints.send_test(endpoint)
    messages.success(request, f"A webhook.test event ({made.webhook_id}) is on its way to {endpoint.url}.")
    return redirect("staff:webhooks")


@staff_only
@require_POST
def delete(request: HttpRequest, endpoint_id) -> HttpResponse:
    endpoint = _endpoint(endpoint_id)
    endpoints.delete(endpoint)
    messages.success(request, f"{endpoint.url} is deleted: nothing more is sent to it.")
    return redirect("staff:webhooks")


def _endpoint(endpoint_id):
    """The live endpoint of a URL. :raises Http404: none (or a deleted one)"""
    endpoint = webhook_queries.find(str(endpoint_id))
    if endpoint is None:
        raise Http404("no such endpoint")
    return endpoint

