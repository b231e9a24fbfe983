from django.urls import path

from apps.staff import approval_views, tool_sources, views
from apps.staff import webhooks as webhook_views

app_name = "staff"
urlpatterns = [
    path("", views.conversations, name="conversations"),
    path("login/", views.login_view, name="login"),
    path("logout/", views.logout_view, name="logout"),
    path("conversations/<uuid:conversation_id>/", views.inspector, name="conversation"),
    path("conversations/<uuid:conversation_id>/live", views.inspector_live, name="conversation_live"),
    path("conversations/<uuid:conversation_id>/verify", views.verify, name="verify"),
    path("conversations/<uuid:conversation_id>/replay", views.replay_view, name="replay"),
    path("conversations/<uuid:conversation_id>/what-if", views.what_if, name="what_if"),
    path("conversations/<uuid:conversation_id>/memory/clear", views.clear_memory, name="clear_memory"),
    path("conversations/<uuid:conversation_id>/take-over", views.take_over, name="take_over"),
    path("conversations/<uuid:conversation_id>/reply", views.send_reply, name="send_reply"),
    path("conversations/<uuid:conversation_id>/hand-back", views.hand_back, name="hand_back"),
    path("conversations/<uuid:conversation_id>/hand-to", views.hand_to, name="hand_to"),
    path("conversations/<uuid:conversation_id>/notes", views.add_note, name="add_note"),
    path("waiting/", views.waiting, name="waiting"),
    path("approvals/", approval_views.queue, name="approvals"),
    path("tool-sources/", tool_sources.page, name="tool_sources"),
    path("tool-sources/add", tool_sources.add, name="tool_source_add"),
    path("tool-sources/<uuid:source_id>/refresh", tool_sources.refresh, name="tool_source_refresh"),
    path("tool-sources/<uuid:source_id>/tools/<str:name>/confirm", tool_sources.confirm, name="tool_source_confirm"),
    path("approve/<str:token>", approval_views.open_link, name="approve_link"),
    path("conversations/<uuid:conversation_id>/approvals/<str:call_id>", approval_views.answer, name="answer_approval"),
    path("quarantine/", views.quarantine, name="quarantine"),
    path("quarantine/<str:run_id>/resolve", views.resolve, name="resolve"),
    path("assistants/", views.assistants, name="assistants"),
    path("assistants/new", views.assistant_new, name="assistant_new"),
    path("assistants/<uuid:assistant_id>/", views.assistant_edit, name="assistant"),
    path("assistants/<uuid:assistant_id>/preview", views.assistant_preview, name="assistant_preview"),
    path("api-keys/", views.api_keys, name="api_keys"),
    path("api-keys/<int:key_id>/revoke", views.api_key_revoke, name="api_key_revoke"),
    path("personas/", views.personas, name="personas"),
    path("profile/", views.profile, name="profile"),
    path("away", views.away, name="away"),
    path("saved-replies/", views.saved_replies, name="saved_replies"),
    # Outgoing webhooks (docs/webhooks.md)
    path("webhooks/", webhook_views.webhooks, name="webhooks"),
    path("webhooks/deliveries/<int:delivery_id>/resend", webhook_views.resend, name="webhook_resend"),
    path("webhooks/<uuid:endpoint_id>/enabled", webhook_views.toggle, name="webhook_enabled"),
    path("webhooks/<uuid:endpoint_id>/test", webhook_views.send_test, name="webhook_test"),
    path("webhooks/<uuid:endpoint_id>/delete", webhook_views.delete, name="webhook_delete"),
]
