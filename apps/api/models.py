from __future__ import annotations

from django.db import models


class ApiKey(models.Model):
    """A workspace API key; only its SHA-256 is stored, the key itself is shown once."""

    name = models.CharField(max_length=200)
    prefix = models.CharField(max_length=16, db_index=True)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"
