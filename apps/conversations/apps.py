from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "apps.conversations"
    label = "conversations"

    def ready(self) -> None:
        from apps.conversations.models import ChatMessage, ControlChange, Conversation, Lease, StaffNote
        from apps.conversations.projection import projection
        from apps.ledger import store
        from apps.ledger.projection import projector

        projector.register(projection, models={
            "conversations": Conversation, "chat_messages": ChatMessage, "control_changes": ControlChange,
            "staff_notes": StaffNote,
        })
        store.fence_with(Lease)
