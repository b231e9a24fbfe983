from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "apps.webhooks"
    label = "webhooks"

    def ready(self) -> None:
        from apps.ledger.projection import projector
        from apps.webhooks.outbox import announce

        projector.announce(announce)
