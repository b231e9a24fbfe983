from django.core.management.base import BaseCommand

from apps.agent.actions import load_demo


class Command(BaseCommand):
    help = "Create or refresh the demo assistant."

    def add_arguments(self, parser):
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")

    def handle(self, *args, base_url: str, **options):
        assistant = load_demo(base_url=base_url)
        self.stdout.write(f"demo assistant {assistant.id} ({assistant.name})")
