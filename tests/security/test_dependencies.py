"""The installed Python environment has no dependency with a known vulnerability (pip-audit)."""

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import httpx
import pytest

PIP_AUDIT = Path(sys.executable).with_name("pip-audit")
# The per-release PyPI JSON document pip-audit's default service reads for each installed package.
ADVISORIES = f"https://pypi.org/pypi/django/{version('django')}/json"


def advisory_database_unreachable() -> str:
    """Why pip-audit cannot read its vulnerability database from here, or "" when it can."""
    try:
        response = httpx.get(ADVISORIES, timeout=10, follow_redirects=True)
    except httpx.HTTPError as exc:
        return f"pip-audit cannot reach its vulnerability database (PyPI's JSON API): {type(exc).__name__}"
    if response.status_code != 200 or "vulnerabilities" not in response.text:
        return (f"pip-audit cannot reach its vulnerability database: PyPI's JSON API ({ADVISORIES}) answered "
                f"{response.status_code} from this machine")
    return ""


class TestDependencies:
    def test_no_installed_dependency_has_a_known_vulnerability(self):
        unreachable = advisory_database_unreachable()
        if unreachable:
            pytest.skip(unreachable)

        result = subprocess.run(
            [str(PIP_AUDIT), "--local", "--skip-editable", "--progress-spinner", "off", "--format", "json"],
            capture_output=True, text=True, timeout=300,
        )

        report = json.loads(result.stdout)
        vulnerable = {d["name"]: [v["id"] for v in d["vulns"]] for d in report["dependencies"] if d.get("vulns")}
        assert vulnerable == {}, f"known vulnerabilities: {vulnerable}"
        audited = [d for d in report["dependencies"] if "skip_reason" not in d]
        assert audited, "pip-audit audited nothing: " + result.stderr[-500:]
