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
