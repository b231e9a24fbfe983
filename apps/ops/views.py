from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from apps.ops.queries import readiness


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    # Liveness: the process answers HTTP. Dependencies are /readyz's business: a database outage
    # must take replicas out of the load balancer, not make the orchestrator restart all of them.
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    result = readiness()
    return JsonResponse({"status": "ready" if result.ready else "not ready", "checks": result.checks},
                        status=200 if result.ready else 503)
