"""Regenerate the example outputs quoted in README.md from the code.

Each example in the README stands between ``<!-- example: NAME -->`` and ``<!-- /example -->`` as a
fenced block; :data:`EXAMPLES` says which command makes it (run as a user would, in a fresh process on an
80-column terminal) and which lines of its output are quoted. ``python tools/make_readme_examples.py``
rewrites the blocks; ``--check`` only says whether they are current (exit 1 if not), which
``tests/test_readme.py`` also checks against a fresh run.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

#: name -> (arguments of ``acmemodel``, first quoted line's start or None, last quoted line's start or None)
EXAMPLES: dict[str, tuple[list[str], str | None, str | None]] = {
    # the shipped example configuration: the first run's sensitivity to the failure rate
    "plan": (["plan"], "Sensitivity of llm-123b", "(c), the run"),
    "checkpoint": (["checkpoint", "--gpus", "2048", "--ckpt-cost", "60s", "--restart", "20m", "--mttf", "8h",
                    "--weibull-shape", "0.8"], None, "Daly"),
}
BLOCK = re.compile(r"(<!-- example: (\w+) -->\n```\n)(.*?)(```\n<!-- /example -->)", re.S)


def render(name: str) -> str:
    """The quoted lines of example ``name``'s output (trailing spaces removed), as the README shows them."""
    args, first, last = EXAMPLES[name]
    env = {**os.environ, "COLUMNS": "80", "PYTHONWARNINGS": "ignore"}
    with tempfile.TemporaryDirectory() as tmp:  # a user's empty working directory
        out = subprocess.run([sys.executable, "-m", "acmemodel", *args], cwd=tmp, env=env, capture_output=True,
                             text=True, check=True).stdout
    lines = [ln.rstrip() for ln in out.splitlines()]
    i = 0 if first is None else next(k for k, ln in enumerate(lines) if ln.startswith(first))
    j = len(lines) - 1 if last is None else next(k for k in range(i, len(lines)) if lines[k].lstrip().startswith(last))
    return "\n".join(lines[i:j + 1]) + "\n"


def quoted(text: str) -> dict[str, str]:
    """name -> the block the README quotes now."""
    return {m.group(2): m.group(3) for m in BLOCK.finditer(text)}


def update(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + render(m.group(2)) + m.group(4), text)


def main(argv: list[str]) -> int:
    text = README.read_text(encoding="utf-8")
    new = update(text)
    if "--check" in argv:
        stale = [n for n, b in quoted(text).items() if quoted(new)[n] != b]
        print("stale: " + ", ".join(stale) if stale else "README examples are current")
        return 1 if stale else 0
    README.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
