"""
The `waypoint` console script: `waypoint conversation replay|verify|repair <id> --actor <identity>`.

The same command as `python manage.py conversation …`, with the same settings from the environment.
"""

from __future__ import annotations

import os
import sys

USAGE = """usage: waypoint conversation {replay,verify,repair} <conversation-id> --actor <identity> [--what-if SEQ JSON_PATCH]

  replay   rebuild the four stores from the log (no model or tool is called) and compare; exit 1 on any difference
  verify   recompute every hash and signature; exit 1 naming the first bad seq
  repair   remove unreadable entries, re-chain the rest and record a signed repair entry
"""


def main(argv: list[str] | None = None) -> None:
    """Run a `waypoint` command line; exits with the command's status."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        sys.exit(0 if argv else 2)
    if argv[0] != "conversation":
        sys.stderr.write(f"waypoint: unknown command {argv[0]!r}\n\n{USAGE}")
        sys.exit(2)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.core.exceptions import ImproperlyConfigured

    try:
        django.setup()
    except ImproperlyConfigured as exc:
        sys.stderr.write(f"waypoint: {exc}\n")
        sys.exit(2)
    from apps.conversations.management.commands.conversation import Command

    Command().run_from_argv(["waypoint", *argv])


if __name__ == "__main__":
    main()
