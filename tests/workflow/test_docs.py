"""The README is a front page (<= 12 KB) and every page and image it or docs/ links to exists."""

import re

import pytest
from conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_is_a_front_page():
    assert (REPO / "README.md").stat().st_size <= 12 * 1024
    text = (REPO / "README.md").read_text()
    assert text.index("make run") < text.index("## What one `make run` measured here")
    for page in (REPO / "docs").glob("*.md"):  # every detail page reachable from the front
        assert f"docs/{page.name}" in text, page.name


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    for target in LINK.findall(page.read_text()):
        if "://" in target:
            continue
        assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


def test_every_lab_note_a_comment_points_to_exists():
    """Code comments keep the why and point to docs/lab-notes.md#<anchor> for the numbers."""
    notes = (REPO / "docs" / "lab-notes.md").read_text()
    anchors = set(re.findall(r"^## ([a-z-]+)$", notes, re.MULTILINE))
    cited = {m for f in (REPO / "src").rglob("*.py")
             for m in re.findall(r"lab-notes\.md#([a-z-]+)", f.read_text())}
    assert cited and cited <= anchors, sorted(cited - anchors)
