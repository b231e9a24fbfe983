from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "apps.runs"
    label = "runs"

    def ready(self) -> None:
        from apps.ledger.projection import projector
        from apps.runs.models import ToolUsageLog, WorkflowLog
        from apps.runs.projection import projection

        projector.register(projection, models={"workflow_logs": WorkflowLog, "tool_usage_logs": ToolUsageLog})
