from __future__ import annotations

import uuid

from django.db import models


class Assistant(models.Model):
    """An assistant's configuration: the JSON of PRODUCT.md "Assistant configuration", validated."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    config = models.JSONField()
    is_demo = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.name
