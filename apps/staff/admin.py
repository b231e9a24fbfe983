"""
The Django admin (/staff/admin/): a raw, read-only view of the stores, the event log and the audit.

Nothing here can add, change or delete: the four stores are what the log says (an edit would only
make `conversation replay` report a difference), events are append-only, and assistants and API
keys change through the staff panel, which validates the change and records who made it.
"""

from __future__ import annotations

from django.contrib import admin

from apps.actions.models import ActionLog
from apps.agent.models import Assistant
from apps.conversations.models import ChatMessage, Conversation
from apps.ledger.models import Event
from apps.runs.models import ToolUsageLog, WorkflowLog
from apps.staff.models import StaffAuditLog
from apps.workspaces.models import ApiKey


class ReadOnlyAdmin(admin.ModelAdmin):
    show_full_result_count = False  # no COUNT(*) over a large table on every page

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Conversation)
class ConversationAdmin(ReadOnlyAdmin):
    list_display = ["id", "assistant", "status", "owner", "message_count", "created_at"]
    list_filter = ["status", "visibility"]
    search_fields = ["=id", "owner"]
    list_select_related = ["assistant"]


@admin.register(ChatMessage)
class ChatMessageAdmin(ReadOnlyAdmin):
    list_display = ["id", "conversation", "role", "author", "seq", "created_at"]
    list_filter = ["role"]
    search_fields = ["=conversation__id", "=turn_id"]


@admin.register(WorkflowLog)
class WorkflowLogAdmin(ReadOnlyAdmin):
    list_display = ["run_id", "conversation", "status", "quarantined", "edge", "caller", "rounds", "updated_at"]
    list_filter = ["status", "quarantined", "edge"]
    search_fields = ["=run_id", "=turn_id", "=conversation__id"]


@admin.register(ToolUsageLog)
class ToolUsageLogAdmin(ReadOnlyAdmin):
    list_display = ["call_id", "run_id", "kind", "tool", "status", "answered_by", "requested_at"]
    list_filter = ["kind", "status"]
    search_fields = ["=run_id", "=call_id", "=conversation__id"]


@admin.register(ActionLog)
class ActionLogAdmin(ReadOnlyAdmin):
    list_display = ["call_id", "run_id", "tool", "action", "status", "attempts", "started_at"]
    list_filter = ["status", "action", "side_effecting"]
    search_fields = ["=run_id", "=idempotency_key", "=conversation__id"]


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ["conversation", "seq", "kind", "turn_id", "actor", "created_at"]
    list_filter = ["kind"]
    search_fields = ["=conversation__id", "=turn_id", "actor"]


@admin.register(Assistant)
class AssistantAdmin(ReadOnlyAdmin):
    list_display = ["name", "id", "is_demo", "updated_at"]


@admin.register(ApiKey)
class ApiKeyAdmin(ReadOnlyAdmin):
    list_display = ["name", "prefix", "created_at", "revoked_at"]
    exclude = ["key_hash"]


@admin.register(StaffAuditLog)
class StaffAuditLogAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "actor", "action", "target"]
    list_filter = ["action"]
    search_fields = ["actor", "target"]
