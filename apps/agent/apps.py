from django.apps import AppConfig


class AgentConfig(AppConfig):
    name = "apps.agent"
    label = "agent"

    def ready(self) -> None:
        from apps.agent.whatif import judge_completion
        from apps.ledger.replay import WHAT_IF_JUDGES

        if judge_completion not in WHAT_IF_JUDGES:
            WHAT_IF_JUDGES.append(judge_completion)
