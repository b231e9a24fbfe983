"""The knowledge sources' domain errors, with the contract's codes and statuses."""

from __future__ import annotations

from apps.conversations.errors import BadInput, WaypointError


class UnsupportedFormat(BadInput):
    """Send Markdown, HTML, plain text or PDF."""

    code = "unsupported_format"


class UnreadableFile(BadInput):
    """The content cannot be read as its format, or has no text to index."""

    code = "unreadable_file"


class FileTooLarge(WaypointError):
    """The file is larger than a knowledge source may be."""

    code = "payload_too_large"
    status = 413
