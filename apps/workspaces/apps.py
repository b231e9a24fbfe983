from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "apps.workspaces"
    label = "workspaces"

    def ready(self) -> None:
        from apps.ledger.projection import projector
        from apps.workspaces.models import Artifact, Closure, Memory
        from apps.workspaces.projection import projection

        projector.register(projection, models={"memories": Memory, "artifacts": Artifact, "closures": Closure})
