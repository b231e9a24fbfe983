from django.conf import settings
from django.core.management.base import BaseCommand

from apps.agent.actions import load_demo


class Command(BaseCommand):
    help = "Create or refresh the demo assistant."

    def add_arguments(self, parser):
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")
        parser.add_argument("--allowed-origin", action="append", default=[], dest="allowed_origins",
                            help="a site that may embed the demo widget, like http://127.0.0.1:8001 (repeatable)")
        parser.add_argument("--model", default=settings.WAYPOINT_DEMO_MODEL,
                            help="a model on the deployment's OpenAI-compatible endpoint (WAYPOINT_OPENAI_BASE_URL) "
                                 "instead of the scripted one; default WAYPOINT_DEMO_MODEL")
        parser.add_argument("--mcp-url", default="", help="the demo shop's MCP server (manage.py demo_mcp), whose tools "
                                                          "the demo assistant then uses as a tool source")

    def handle(self, *args, base_url: str, allowed_origins: list[str], model: str, mcp_url: str, **options):
        assistant = load_demo(base_url=base_url, allowed_origins=allowed_origins, model=model, mcp_url=mcp_url)
        on = f"model {model!r} at {settings.WAYPOINT_OPENAI_BASE_URL or 'OpenAI'}" if model else "the scripted model"
        self.stdout.write(f"demo assistant {assistant.id} ({assistant.name}), on {on}")
