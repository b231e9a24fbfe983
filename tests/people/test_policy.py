from datetime import UTC, datetime, timedelta

import pytest

from apps.workspaces.policy import MalformedDuration, idle_due, idle_timeout_seconds, parse_duration

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


class TestRetentionDurations:
    @pytest.mark.parametrize(("text", "expected"), [
        ("90m", timedelta(minutes=90)), ("24h", timedelta(hours=24)), ("2d", timedelta(days=2)), ("30s", timedelta(seconds=30)),
        (" 24h ", timedelta(hours=24)),
    ])
    def test_a_number_with_a_unit_is_read(self, text, expected):
        assert parse_duration(text) == expected

    @pytest.mark.parametrize("text", ["24", "h", "-1h", "1.5h", "24 hours", "24H", "", None, 24])
    def test_anything_else_is_malformed(self, text):
        with pytest.raises(MalformedDuration, match="not a duration"):
            parse_duration(text)


class TestIdleTimeout:
    def test_the_assistant_setting_wins_over_the_deployment(self):
        assert idle_timeout_seconds({"idle_timeout_seconds": 60}, 1800) == 60

    def test_the_deployment_setting_applies_when_the_assistant_has_none(self):
        assert idle_timeout_seconds({"idle_timeout_seconds": None}, 1800) == 1800

    def test_an_assistant_can_disable_idle_close_with_zero(self):
        assert idle_timeout_seconds({"idle_timeout_seconds": 0}, 1800) == 0


class TestIdleDue:
    def test_due_once_the_timeout_has_passed(self):
        assert idle_due(last_turn_at=NOW, timeout_seconds=60, now=NOW + timedelta(seconds=60))

    def test_not_due_before(self):
        assert not idle_due(last_turn_at=NOW, timeout_seconds=60, now=NOW + timedelta(seconds=59))

    def test_a_zero_timeout_disables_it(self):
        assert not idle_due(last_turn_at=NOW, timeout_seconds=0, now=NOW + timedelta(days=365))

    def test_a_missing_last_turn_disables_it(self):
        assert not idle_due(last_turn_at=None, timeout_seconds=60, now=NOW + timedelta(days=365))
