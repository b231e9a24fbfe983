import os
import secrets
import subprocess
import sys

from tests.servers import ROOT

PRODUCTION = {
    "DEBUG": "0",
    "DJANGO_SECRET_KEY": secrets.token_urlsafe(60),
    "ALLOWED_HOSTS": "chat.example.com",
    "DATABASE_URL": "postgresql://waypoint@db.internal:5432/waypoint",
    "REDIS_URL": "redis://redis.internal:6379/0",
    "WAYPOINT_SIGNING_KEY": "",
}


def production_environment() -> dict[str, str]:
    # Only what a production host sets: no test runner markers, no development overrides.
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "WAYPOINT_DATA_DIR")}
    return {**keep, **PRODUCTION}


class TestDeployCheck:
    def test_production_settings_pass_every_deployment_check(self):
        result = subprocess.run(
            [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
            cwd=ROOT, env=production_environment(), capture_output=True, text=True, timeout=120,
        )

        assert result.returncode == 0, result.stdout + result.stderr
        assert "System check identified no issues" in result.stdout

    def test_production_settings_refuse_to_start_without_a_secret_key(self):
        env = {k: v for k, v in production_environment().items() if k != "DJANGO_SECRET_KEY"}

        result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)

        assert result.returncode != 0
        assert "DJANGO_SECRET_KEY must be set" in result.stderr
