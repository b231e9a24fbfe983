from django.apps import AppConfig


class ActionsConfig(AppConfig):
    name = "apps.actions"
    label = "actions"

    def ready(self) -> None:
        from apps.actions.models import ActionLog
        from apps.actions.projection import projection
        from apps.ledger.projection import projector

        projector.register(projection, models={"action_logs": ActionLog})
