from django.apps import AppConfig


class ToolSourcesConfig(AppConfig):
    name = "apps.toolsources"
    label = "toolsources"

    def ready(self) -> None:
        # The `mcp` action runs a tool source's tool; it is an action like the built-in ones, so a
        # tool of kind mcp runs through the same registry and runner as every server tool.
        from apps.actions.registry import ACTIONS
        from apps.toolsources.running import ACTION

        ACTIONS[ACTION.name] = ACTION
