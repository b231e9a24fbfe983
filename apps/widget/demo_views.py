from __future__ import annotations

import hmac
import json

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from apps.actions.registry import webhook_signature

# Refunds the demo shop has issued, by Idempotency-Key: a retried delivery returns the first refund.
_refunds: dict[str, dict] = {}


@csrf_exempt
@require_POST
def refund_hook(request: HttpRequest) -> JsonResponse:
    """The demo shop's refund endpoint, called by the demo assistant's `issue_refund` webhook."""
    if not hmac.compare_digest(request.headers.get("X-Waypoint-Signature", ""), webhook_signature(request.body)):
        return JsonResponse({"error": {"code": "bad_signature", "message": "signature does not match"}}, status=401)
    key = request.headers.get("Idempotency-Key", "")
    body = json.loads(request.body)
    refund = _refunds.setdefault(key, {"refund_id": f"R-{len(_refunds) + 1}", "amount": body["arguments"].get("amount")})
    return JsonResponse(refund)
