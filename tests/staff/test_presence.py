"""Staff presence (online, away, offline), the Away toggle and the display name customers see."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.agent import handoff
from apps.people import presence
from tests.staff.conftest import HTMX, logged_in_staff

pytestmark = pytest.mark.django_db


class TestPresence:
    def test_a_live_page_makes_its_member_online_and_closing_it_offline(self):
        now = timezone.now()
        presence.seen("socket-1", "staff:dana", active=True, now=now)
        online = presence.status("staff:dana", now)

        presence.gone("socket-1")

        assert online == "online" and presence.status("staff:dana", now) == "offline"

    def test_a_second_tab_closing_leaves_the_first_ones_member_online(self):
        now = timezone.now()
        presence.seen("tab-1", "staff:dana", active=True, now=now)
        presence.seen("tab-2", "staff:dana", active=True, now=now)

        presence.gone("tab-2")

        assert presence.status("staff:dana", now) == "online"

    def test_five_minutes_without_a_sign_of_a_person_is_away_and_a_sign_ends_it(self):
        start = timezone.now()
        presence.seen("tab", "staff:dana", active=True, now=start)
        for minutes in range(1, 6):  # the page keeps beating, nobody touches it
            presence.seen("tab", "staff:dana", active=False, now=start + timedelta(minutes=minutes))
        idle = presence.status("staff:dana", start + timedelta(minutes=5, seconds=1))
        still_at_4 = presence.status("staff:dana", start + timedelta(minutes=4, seconds=59))

        presence.seen("tab", "staff:dana", active=True, now=start + timedelta(minutes=5, seconds=30))

        assert (still_at_4, idle) == ("online", "away")
        assert presence.status("staff:dana", start + timedelta(minutes=5, seconds=31)) == "online"

    def test_a_page_of_a_process_that_died_stops_counting_once_it_is_no_longer_seen(self):
        then = timezone.now()
        presence.seen("killed", "staff:dana", active=True, now=then)

        assert presence.anyone_online(then + presence.SEEN_WITHIN - timedelta(seconds=1))
        assert not presence.anyone_online(then + presence.SEEN_WITHIN + timedelta(seconds=1))

    def test_away_by_choice_holds_while_the_page_is_busy_and_nobody_else_is_promised(self):
        now = timezone.now()
        presence.seen("tab", "staff:dana", active=True, now=now)
        presence.set_away("staff:dana", True, now=now)

        assert presence.status("staff:dana", now) == "away" and not presence.anyone_online(now)
        presence.set_away("staff:dana", False, now=now)
        assert presence.anyone_online(now)


class TestThePanel:
    def test_the_away_toggle_shows_in_the_navigation_and_is_undone_by_im_back(self):
        dana = logged_in_staff("dana", "Dana")
        presence.seen("tab", "staff:dana", active=True, now=timezone.now())

        dana.post("/staff/away", {"away": "1"})
        away_page = dana.get("/staff/").content.decode()
        dana.post("/staff/away", {"away": "0"})
        back_page = dana.get("/staff/").content.decode()

        assert 'class="presence-label">Away<' in away_page and "I'm back" in away_page
        assert 'class="presence-label">Online<' in back_page and "Set away" in back_page

    def test_idle_shows_in_the_counts_every_page_polls(self):
        dana = logged_in_staff("dana", "Dana")
        long_ago = timezone.now() - timedelta(minutes=6)
        presence.seen("tab", "staff:dana", active=True, now=long_ago)
        presence.seen("tab", "staff:dana", active=False, now=timezone.now())

        counts = dana.get("/staff/waiting/?count=1", headers=HTMX).content.decode()

        assert 'id="presence"' in counts and "Away (idle)" in counts

    def test_the_team_and_each_members_presence_are_on_the_profile(self):
        dana = logged_in_staff("dana", "Dana")
        logged_in_staff("sam", "Sam")
        presence.seen("sams-tab", "staff:sam", active=True, now=timezone.now())

        page = dana.get("/staff/profile/").content.decode()

        assert "Sam <span class=\"muted\">online</span>" in page and "Dana <span class=\"muted\">offline</span>" in page


class TestTheDisplayName:
    def test_customers_see_the_display_name_and_never_the_login(self, start, make_assistant):
        sam = logged_in_staff("sam")  # no name of any kind yet
        cid = start("hello", assistant=make_assistant(handoff={"enabled": True}))["conversation_id"]
        sam.post(f"/staff/conversations/{cid}/take-over")
        nameless = handoff.control_of(_row(cid))["staff"]["name"]
        sam.post(f"/staff/conversations/{cid}/hand-back")

        saved = sam.post("/staff/profile/", {"display_name": "Samira"})
        sam.post(f"/staff/conversations/{cid}/take-over")

        assert nameless == "Support"
        assert saved.status_code == 302
        assert handoff.control_of(_row(cid))["staff"] == {"id": "staff:sam", "name": "Samira"}

    def test_a_name_that_is_not_one_is_refused_in_words_and_nothing_changes(self):
        sam = logged_in_staff("sam", "Sam")

        refused = sam.post("/staff/profile/", {"display_name": "x" * 201})

        assert refused.status_code == 422 and "at most 200 characters" in refused.content.decode()
        assert presence.profile("staff:sam") is None

    def test_make_superuser_sets_it_for_the_newest_superuser(self, django_user_model, capsys):
        django_user_model.objects.create_superuser("ada", "ada@example.com", "a long password")

        call_command("display_name", "Ada L.")

        assert presence.display_names(["staff:ada"]) == {"staff:ada": "Ada L."}
        assert "Customers see ada as Ada L." in capsys.readouterr().out


def _row(cid):
    from apps.conversations.models import Conversation

    return Conversation.objects.get(pk=cid)
