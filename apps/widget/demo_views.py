from __future__ import annotations

import hmac
import json

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from apps.actions.registry import webhook_signature

# The demo shop's refunds, by Idempotency-Key: a retried delivery returns the first refund. Kept in
# this process's memory, like a toy shop would; `deliveries` counts every signed POST received.
_refunds: dict[str, dict] = {}
_deliveries: dict[str, int] = {}


@csrf_exempt
@require_http_methods(["GET", "POST"])
def refund_hook(request: HttpRequest) -> JsonResponse:
    """The demo shop's refund endpoint, called by the demo assistant's `issue_refund` webhook; GET lists its refunds."""
    if request.method == "GET":
        return JsonResponse({"refunds": [{"idempotency_key": k, **v, "deliveries": _deliveries[k]} for k, v in _refunds.items()]})
    if not hmac.compare_digest(request.headers.get("X-Waypoint-Signature", ""), webhook_signature(request.body)):
        return JsonResponse({"error": {"code": "bad_signature", "message": "signature does not match"}}, status=401)
    key = request.headers.get("Idempotency-Key", "")
    body = json.loads(request.body)
    _deliveries[key] = _deliveries.get(key, 0) + 1
    refund = _refunds.setdefault(key, {"refund_id": f"R-{len(_refunds) + 1}", "amount": body["arguments"].get("amount")})
    return JsonResponse(refund)
