"""`manage.py display_name [NAME] [--login LOGIN]`: set the name customers see for a staff member (never their login)."""

from __future__ import annotations

import os
import sys

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from apps.conversations.errors import BadInput
from apps.people import presence
from apps.staff.actions import check_display_name, staff_identity


class Command(BaseCommand):
    help = ("Set the display name customers see for a staff member (default: the newest superuser, as after "
            "`make superuser`). Without NAME it is asked for, or read from DJANGO_SUPERUSER_DISPLAY_NAME.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("name", nargs="?", default=None)
        parser.add_argument("--login", help="the staff member's login (default: the newest superuser)")

    def handle(self, *args, name: str | None = None, login: str | None = None, **options) -> None:
        users = get_user_model().objects
        user = users.filter(username=login).first() if login else users.filter(is_superuser=True).order_by("-date_joined", "-pk").first()
        if user is None or not user.is_staff:
            raise CommandError(f"no staff member {login}" if login else "no superuser yet: run `make superuser` first")
        if name is None:
            name = os.environ.get("DJANGO_SUPERUSER_DISPLAY_NAME")
        if name is None and sys.stdin.isatty():
            name = input(f"Display name customers see for {user.get_username()} (for example Dana): ")
        if name is None:
            self.stdout.write(f"No display name set for {user.get_username()}: customers see \"Support\" until one is "
                              "set in the panel (Your profile).")
            return
        try:
            check_display_name(name.strip())
        except BadInput as exc:
            raise CommandError(exc.message) from None
        presence.set_display_name(staff_identity(user), name.strip(), now=timezone.now())
        self.stdout.write(f"Customers see {user.get_username()} as {name.strip() or 'Support'}.")
