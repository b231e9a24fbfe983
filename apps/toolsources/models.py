from __future__ import annotations

import uuid

from django.db import models


class ToolSource(models.Model):
    """
    A team's MCP server (PRODUCT.md "Tool sources: MCP"): where it is, its secret headers and its catalog.

    `tools` is the catalog as last listed: one object per tool with its definition, `fingerprint`,
    `class`, `enabled`, `changed` (its definition differs from the one confirmed) and `missing`
    (gone from the server). `confirmed` keeps each tool's confirmed fingerprint by name.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, default="mcp")
    url = models.URLField(max_length=2000)
    # The header values, encrypted (apps/toolsources/secrets.py): never returned, logged or shown.
    headers = models.TextField(blank=True, default="")
    header_names = models.JSONField(default=list)
    description = models.TextField(blank=True, default="")  # the server's instructions, if it gave any
    tools = models.JSONField(default=list)
    confirmed = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    refreshed_at = models.DateTimeField(null=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "tool_sources"
        ordering = ["created_at"]
