import pytest
from django.db.migrations.recorder import MigrationRecorder

pytestmark = pytest.mark.django_db

REDIS = "redis://127.0.0.1:6379/0"


def closed_port_url() -> str:
    from tests.servers import free_port

    return f"redis://127.0.0.1:{free_port()}/0"


class TestHealthz:
    def test_answers_ok_without_touching_dependencies(self, client, settings):
        settings.REDIS_URL = closed_port_url()

        response = client.get("/healthz")

        assert response.status_code == 200
        assert response.json() == {"status": "ok"}


class TestReadyz:
    def test_is_ready_when_the_database_redis_and_migrations_are_good(self, client, settings):
        settings.REDIS_URL = REDIS

        response = client.get("/readyz")

        assert response.status_code == 200
        assert response.json() == {"status": "ready", "checks": {"database": "ok", "migrations": "ok", "redis": "ok"}}

    def test_does_not_check_redis_when_none_is_configured(self, client, settings):
        settings.REDIS_URL = ""

        response = client.get("/readyz")

        assert response.status_code == 200
        assert "redis" not in response.json()["checks"]

    def test_is_not_ready_when_redis_does_not_answer(self, client, settings):
        settings.REDIS_URL = closed_port_url()

        response = client.get("/readyz")

        assert response.status_code == 503
        assert response.json()["checks"]["redis"] == "unreachable: ConnectionError"

    def test_is_not_ready_while_a_migration_is_not_applied(self, client, settings):
        settings.REDIS_URL = ""
        # Forget one applied migration inside the test's transaction (rolled back afterwards).
        latest = MigrationRecorder.Migration.objects.filter(app="ledger").order_by("-id").first()
        latest.delete()

        response = client.get("/readyz")

        assert response.status_code == 503
        assert response.json()["checks"]["migrations"] == "1 migration(s) not applied"
