import pytest
from django.urls import reverse

from apps.ledger.models import Event
from apps.workspaces.keys import create_api_key

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

PANEL_PAGES = ["staff:conversations", "staff:quarantine", "staff:assistants", "staff:api_keys", "staff:personas"]


def inspector_url(conversation_id):
    return reverse("staff:conversation", args=[conversation_id])


class TestWhoGetsIn:
    @pytest.mark.parametrize("name", PANEL_PAGES)
    def test_anonymous_visitors_are_sent_to_the_login(self, client, name):
        response = client.get(reverse(name))

        assert response.status_code == 302
        assert response["Location"].startswith(reverse("staff:login") + "?next=")

    def test_a_customer_token_opens_nothing(self, client, start):
        started = start("hello")

        for response in (
            client.get(inspector_url(started["conversation_id"]), {"token": started["token"]}),
            client.get(inspector_url(started["conversation_id"]), headers={"Authorization": f"Bearer {started['token']}"}),
            client.post(reverse("staff:verify", args=[started["conversation_id"]]), {"token": started["token"]}),
        ):
            assert response.status_code in (302, 403)
            assert started["conversation_id"] not in response.content.decode()

    def test_an_api_key_opens_nothing(self, client, start):
        started = start("hello")
        _, raw = create_api_key(name="backend")

        for response in (
            client.get(reverse("staff:conversations"), headers={"Authorization": f"Bearer {raw}"}),
            client.get(inspector_url(started["conversation_id"]), headers={"Authorization": f"Bearer {raw}"}),
            client.post(reverse("staff:api_keys"), {"name": "sneaky"}, headers={"Authorization": f"Bearer {raw}"}),
        ):
            assert response.status_code in (302, 403)
            assert started["conversation_id"] not in response.content.decode()

    def test_a_logged_in_user_who_is_not_staff_is_forbidden(self, client, django_user_model):
        client.force_login(django_user_model.objects.create_user(username="customer", password="x" * 20))

        assert client.get(reverse("staff:conversations")).status_code == 403

    def test_staff_see_the_panel(self, staff_client):
        response = staff_client.get(reverse("staff:conversations"))

        assert response.status_code == 200 and "ops · set your name" in response.content.decode()


class TestLogin:
    def test_a_staff_member_logs_in_and_lands_where_they_were_going(self, client, staff_user):
        target = reverse("staff:quarantine")

        response = client.post(reverse("staff:login"), {"username": "ops", "password": "a long staff password", "next": target})

        assert response.status_code == 302 and response["Location"] == target
        assert client.get(target).status_code == 200

    def test_a_user_who_is_not_staff_cannot_log_in(self, client, django_user_model):
        django_user_model.objects.create_user(username="customer", password="a long customer password")

        response = client.post(reverse("staff:login"), {"username": "customer", "password": "a long customer password"})

        assert response.status_code == 401
        assert client.get(reverse("staff:conversations")).status_code == 302

    def test_an_outside_next_url_is_ignored(self, client, staff_user):
        response = client.post(reverse("staff:login"),
                               {"username": "ops", "password": "a long staff password", "next": "https://evil.example/"})

        assert response["Location"] == reverse("staff:conversations")

    def test_repeated_failures_lock_the_account_out_even_with_the_right_password(self, client, staff_user, settings):
        for _ in range(settings.AXES_FAILURE_LIMIT):
            client.post(reverse("staff:login"), {"username": "ops", "password": "wrong"})

        response = client.post(reverse("staff:login"), {"username": "ops", "password": "a long staff password"})

        assert response.status_code == 429
        assert "Too many failed logins" in response.content.decode()
        assert client.get(reverse("staff:conversations")).status_code == 302

    def test_logging_out_ends_the_session(self, staff_client):
        staff_client.post(reverse("staff:logout"))

        assert staff_client.get(reverse("staff:conversations")).status_code == 302


class TestTheAdmin:
    def test_the_event_log_is_read_only_in_the_admin(self, client, django_user_model, start):
        started = start("hello")
        event = Event.objects.filter(conversation_id=started["conversation_id"]).first()
        client.force_login(django_user_model.objects.create_superuser(username="root", password="x" * 20))

        view = client.get(reverse("admin:ledger_event_change", args=[event.pk]))
        change = client.post(reverse("admin:ledger_event_change", args=[event.pk]), {"actor": "mallory"})
        add = client.get(reverse("admin:ledger_event_add"))
        delete = client.post(reverse("admin:ledger_event_delete", args=[event.pk]), {"post": "yes"})

        assert view.status_code == 200 and "Save" not in view.content.decode()
        assert change.status_code == 403 and add.status_code == 403 and delete.status_code == 403
        assert Event.objects.get(pk=event.pk).actor == event.actor

    @pytest.mark.parametrize("model", ["conversations_conversation", "conversations_chatmessage", "runs_workflowlog",
                                       "runs_toolusagelog", "actions_actionlog", "agent_assistant", "workspaces_apikey"])
    def test_the_raw_models_are_listed_in_the_admin(self, client, django_user_model, model):
        client.force_login(django_user_model.objects.create_superuser(username="root", password="x" * 20))

        assert client.get(reverse(f"admin:{model}_changelist")).status_code == 200

    def test_only_the_staffs_accounts_can_be_changed_in_the_admin_as_docs_staff_md_says(self, rf, django_user_model):
        from pathlib import Path

        from django.contrib import admin

        request = rf.get("/staff/admin/")
        request.user = django_user_model.objects.create_superuser(username="root", password="x" * 20)
        changeable = sorted(model._meta.label for model, model_admin in admin.site._registry.items()
                            if model_admin.has_add_permission(request) or model_admin.has_change_permission(request))

        assert changeable == ["auth.Group", "auth.User", "axes.AccessAttempt", "axes.AccessFailureLog", "axes.AccessLog"]
        said = " ".join((Path(__file__).parents[2] / "docs" / "staff.md").read_text().split())
        assert "can be changed there, by a superuser only: **Users**" in said and "**Groups**" in said
        assert "**Access attempts**, **Access failures** and **Access logs**" in said


class TestLockoutPolicy:
    def test_failures_from_other_addresses_do_not_lock_the_owner_out(self, client, staff_user, settings):
        for n in range(settings.AXES_FAILURE_LIMIT + 2):
            client.post(reverse("staff:login"), {"username": "ops", "password": "wrong"}, REMOTE_ADDR=f"203.0.113.{n + 1}")

        response = client.post(reverse("staff:login"), {"username": "ops", "password": "a long staff password"},
                               REMOTE_ADDR="198.51.100.7")

        assert response.status_code == 302 and response["Location"] == reverse("staff:conversations")

    def test_one_address_failing_for_a_username_is_locked_out_for_it(self, client, staff_user, settings):
        for _ in range(settings.AXES_FAILURE_LIMIT):
            client.post(reverse("staff:login"), {"username": "ops", "password": "wrong"}, REMOTE_ADDR="203.0.113.9")

        response = client.post(reverse("staff:login"), {"username": "ops", "password": "a long staff password"},
                               REMOTE_ADDR="203.0.113.9")

        assert response.status_code == 429

    def test_a_flood_against_one_username_from_many_addresses_is_slowed_down(self, client, staff_user, settings):
        from django.core.cache import cache

        cache.clear()  # the attempts of the tests before, counted in the same window
        settings.WAYPOINT_STAFF_LOGIN_PER_USERNAME = 8
        codes = [client.post(reverse("staff:login"), {"username": "ops", "password": "wrong"}, REMOTE_ADDR=f"203.0.113.{n + 1}").status_code
                 for n in range(10)]

        assert codes[:8] == [401] * 8 and codes[8:] == [429, 429]
        response = client.post(reverse("staff:login"), {"username": "ops", "password": "a long staff password"},
                               REMOTE_ADDR="198.51.100.7")
        assert response.status_code == 429 and "Too many login attempts" in response.content.decode()
