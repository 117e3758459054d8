"""The README and docs/: every relative link leads somewhere, and every command and option of the
command line has its page (docs/commands/<command>.md) that names it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer

from conftest import REPO
from equita.runners.cli import app

COMMANDS = typer.main.get_command(app).commands
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
# [text](target) and [text]: target, outside code; a target with a scheme or only an anchor is not a file.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|^\[[^\]]+\]:\s*(\S+)", re.M)


def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [a or b for a, b in LINK.findall(text)]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_relative_link_resolves(page):
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        path = target.split("#")[0]
        assert (page.parent / path).exists(), f"{page.relative_to(REPO)}: link {target} leads nowhere"


def test_the_readme_stays_short_and_links_every_command_page():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme) <= 12_000
    for command in COMMANDS:
        assert f"docs/commands/{command}.md" in links(REPO / "README.md"), command


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_and_option_is_documented(command):
    page = REPO / "docs" / "commands" / f"{command}.md"
    assert page.is_file(), f"{command} has no page in docs/commands/"
    text = page.read_text(encoding="utf-8")
    for param in COMMANDS[command].params:
        if param.name == "help":
            continue
        names = [*param.opts, *param.secondary_opts] if param.param_type_name == "option" else [param.name.upper()]
        for name in names:
            assert name in text, f"docs/commands/{command}.md does not name {name}"
