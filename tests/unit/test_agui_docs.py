"""docs/ag-ui.md's CopilotKit code is the code e2e/test_copilotkit.py runs, as it is."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE = ROOT / "e2e" / "copilotkit"


def blocks() -> list[str]:
    return re.findall(r"^```\w*\n(.*?)^```", (ROOT / "docs" / "ag-ui.md").read_text(), re.DOTALL | re.MULTILINE)


def test_the_page_and_its_hooks_are_shown_as_the_test_runs_them():
    shown = blocks()

    assert (CODE / "page.jsx").read_text() in shown
    assert (CODE / "support.jsx").read_text() in shown


def test_the_runtime_is_shown_as_the_test_runs_it_under_the_packages_own_name():
    runtime = (CODE / "runtime.mjs").read_text()
    part = runtime.split("// --- as in docs/ag-ui.md\n", 1)[1].split("// --- end\n", 1)[0]

    assert part.replace('"ag-ui-client-copilotkit"', '"@ag-ui/client"') in blocks()
