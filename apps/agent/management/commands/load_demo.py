from django.core.management.base import BaseCommand

from apps.agent.actions import load_demo


class Command(BaseCommand):
    help = "Create or refresh the demo assistant."

    def add_arguments(self, parser):
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")
        parser.add_argument("--allowed-origin", action="append", default=[], dest="allowed_origins",
                            help="a site that may embed the demo widget, like http://127.0.0.1:8001 (repeatable)")

    def handle(self, *args, base_url: str, allowed_origins: list[str], **options):
        assistant = load_demo(base_url=base_url, allowed_origins=allowed_origins)
        self.stdout.write(f"demo assistant {assistant.id} ({assistant.name})")
