"""
The public JSON API v1 (PRODUCT.md "Public HTTP contract"): one domain call per operation, a module per resource.

Mounted at /v1/; the OpenAPI document is /v1/openapi.json and the browsable docs /v1/docs. The
resources' routers are added here, before apps/api/urls.py adds knowledge and tool sources and
config/urls.py the AG-UI edge: the document lists the operations in that order.
"""

from __future__ import annotations

from ninja import NinjaAPI
from ninja.operation import Operation

from apps.api import artifacts, assistants, conversations, errors, handoff, people, webhooks
from apps.api.auth import AUTH

RESOURCES = (assistants, conversations, handoff, people, artifacts, webhooks)
_RESOURCE_MODULES = frozenset(resource.__name__ for resource in RESOURCES)


class _API(NinjaAPI):
    def get_openapi_operation_id(self, operation: Operation) -> str:
        """
        `apps_api_views_<function>` for the resources' operations: the ids the document published
        while they all lived in one module, which clients and the document's own links name them by.
        """
        if operation.view_func.__module__ in _RESOURCE_MODULES:
            return f"apps_api_views_{operation.view_func.__name__}"
        return super().get_openapi_operation_id(operation)


api = _API(
    title="Waypoint API",
    version="1",
    description=(
        "Durable agent conversations. Authenticate with a workspace API key or a conversation token "
        "(`Authorization: Bearer …`; a token may also be sent as `?token=`). Every error is "
        '`{"error": {"code": "<snake_case>", "message": "…"}}`.'
    ),
    urls_namespace="v1",
    auth=AUTH,
    parser=errors.StrictJsonParser(),
    openapi_url="/openapi.json",
    docs_url="/docs",
)
errors.install(api)
api.add_decorator(errors.guard, mode="view")

for resource in RESOURCES:
    api.add_router("", resource.router)
