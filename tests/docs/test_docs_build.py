"""The documentation site builds in strict mode, and README stays a front page the site holds.

``scripts/docs.sh build`` draws the plots from docs/data/ and runs ``mkdocs build --strict``: a
broken link or anchor, a page missing from the navigation, an unresolved cross-reference or
a snippet that includes nothing fails it. Built once per session into a temporary folder.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
from html import unescape

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run(["bash", str(ROOT / "scripts" / "docs.sh"), "build", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"strict docs build failed:\n{run.stdout[-4000:]}\n{run.stderr[-8000:]}"
    return out


def test_every_page_of_the_navigation_is_built(site):
    nav = re.findall(r":\s*([\w/.-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    assert len(nav) >= 20, nav
    for page in nav:
        html = site / ("index.html" if page == "index.md" else page[:-3] + "/index.html")
        if page.endswith("/index.md"):
            html = site / page[: -len("index.md")] / "index.html"
        assert html.is_file(), f"{page} was not built ({html})"
        text = html.read_text()
        assert "<article" in text, f"{page} rendered no article"
        assert "<p>```" not in text, f"{page} shows a code fence as text (no blank line around it?)"


def test_the_search_index_holds_every_page(site):
    index = (site / "search" / "search_index.json").read_text()
    for words in ("worker_slot", "ShareConsumer", "oauth_cb", "maxOffsetsPerTrigger"):
        assert words in index, f"search finds no page with {words!r}"


def test_home_page_holds_the_readme_samples(site):
    html = (site / "index.html").read_text()
    text = unescape(re.sub(r"<[^>]+>", "", html))  # the code as a reader sees it, highlighting gone
    for sample in ("num_workers=2, worker_slot=0", 'format("rdkafka")', "producer.flush(10)"):
        assert sample in text, sample
    assert "--8<--" not in text, "a snippet was not expanded"


def test_readme_is_a_front_page_whose_sections_the_site_holds():
    text = README.read_text()
    assert len(text.splitlines()) <= 170, "README.md grew past a front page: move the detail into docs/"
    sections = re.findall(r"<!-- --8<-- \[start:([\w-]+)\] -->", text)
    index = (ROOT / "docs" / "index.md").read_text()
    missing = [s for s in sections if f'--8<-- "README.md:{s}"' not in index]
    assert sections and not missing, f"README sections the site does not include: {missing}"


def test_readme_links_point_at_files_that_exist():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text())
    local = [link for link in links if "://" not in link]
    assert local, "README links into the docs"
    assert [link for link in local if not (ROOT / link).exists()] == []


def test_every_page_has_one_title():
    for page in sorted((ROOT / "docs").rglob("*.md")):
        titles, in_fence = [], False
        for line in page.read_text().splitlines():
            if line.startswith("```"):
                in_fence = not in_fence
            elif not in_fence and line.startswith("# "):
                titles.append(line)
        assert len(titles) == 1, f"{page.relative_to(ROOT)}: {titles or 'no title'}"
