"""The README and docs/ link to files and anchors that exist, and the README's test command
is what CI runs (issue 15: the README keeps what a new user needs, the rest is in docs/)."""

from __future__ import annotations

import glob
import os
import re

from support import REPO

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(path: str) -> set[str]:
    """GitHub's heading anchors, plus explicit `<a id=...>` ones."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)  # headings inside code blocks are not headings
    out = set(re.findall(r'<a id="([^"]+)"></a>', text))
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        out.add(slug)
    return out


def _documents() -> list[str]:
    return [os.path.join(REPO, "README.md"), os.path.join(REPO, "CONTRIBUTING.md")] + sorted(
        glob.glob(os.path.join(REPO, "docs", "*.md"))
    )


def test_every_relative_link_and_anchor_exists():
    broken = []
    for document in _documents():
        with open(document, encoding="utf-8") as handle:
            text = re.sub(r"```.*?```", "", handle.read(), flags=re.DOTALL)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(document), path)) if path else document
            if not os.path.exists(resolved) or anchor and resolved.endswith(".md") and anchor not in _anchors(resolved):
                broken.append((os.path.relpath(document, REPO), target))
    assert broken == []


def test_the_readme_keeps_what_a_new_user_needs_and_the_ci_test_command():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    with open(os.path.join(REPO, ".ci", "run"), encoding="utf-8") as handle:
        ci = handle.read()
    ci_test_commands = set(re.findall(r"^(python -m pytest[^\n#]*?)\s*$", ci, flags=re.MULTILINE))
    assert ci_test_commands, "no test command in .ci/run"
    for command in ci_test_commands:
        assert f"&& {command}\n" in readme, command
    assert "atenlint check examples/" in readme
    for section in ("## Quick start", "## Configuration", "## Editors", "## VS Code", "## Development"):
        assert section in readme
    for reference in (
        "docs/usage.md",
        "docs/rules.md",
        "docs/targets.md",
        "docs/configuration.md",
        "docs/editors.md",
        "docs/architecture.md",
        "CONTRIBUTING.md",
    ):
        assert f"]({reference}" in readme, reference
    assert len(readme.encode("utf-8")) < 20_000  # was 39 KB for four audiences at once
