"""The README's Quick start is what CI runs."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.+?)\n```", quick)
    assert len(commands) == 2, "the Quick start is exactly two commands"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert commands[1] in ci, "CI must run the README's test command verbatim"


def test_readme_examples_are_the_code_s_output():
    """Every example output quoted in the README (between ``<!-- example: NAME -->`` markers) is what the
    command prints now: ``tools/make_readme_examples.py`` regenerates them; this runs each afresh."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_readme_examples", ROOT / "tools" / "make_readme_examples.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    quoted = tool.quoted((ROOT / "README.md").read_text(encoding="utf-8"))
    assert set(quoted) == set(tool.EXAMPLES), "every example is quoted once, and every quote has its command"
    for name, block in quoted.items():
        assert block == tool.render(name), f"README example {name!r} is stale: run python tools/make_readme_examples.py"


def test_readme_is_a_page_for_users():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    for doc in re.findall(r"\]\((docs/[\w.-]+\.md)\)", readme):
        if doc not in ("docs/own-cluster.md", "docs/fleet-reliability.md", "docs/forecasting.md"):  # other issues'
            assert (ROOT / doc).is_file(), doc
