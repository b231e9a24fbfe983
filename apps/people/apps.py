from django.apps import AppConfig


class PeopleConfig(AppConfig):
    name = "apps.people"
    label = "people"

    def ready(self) -> None:
        from apps.ledger.projection import projector
        from apps.people.models import Participant
        from apps.people.projection import projection

        projector.register(projection, models={"participants": Participant})
