from django.core.management.base import BaseCommand

from apps.workspaces.keys import create_api_key


class Command(BaseCommand):
    help = "Create a workspace API key; the key is printed once, as the last line."

    def add_arguments(self, parser):
        parser.add_argument("name")

    def handle(self, *args, name: str, **options):
        key, raw = create_api_key(name=name)
        self.stderr.write(f"API key {key.name!r} created; it is shown only once:")
        self.stdout.write(raw)
