"""Extraction quality on realistic pages: key content kept, boilerplate gone, with both parsers."""

from __future__ import annotations

import importlib.util

import pytest
from mcp_fetch.extract import convert_html, html_to_markdown, truncate_html

from .conftest import PAGES

PARSERS = ["html.parser"] + (["lxml"] if importlib.util.find_spec("lxml") else [])


def _page(
    name: str, parser: str, output: str = "markdown", base: str = "https://news.example/2024/03/tide-pools"
):  # type: ignore[no-untyped-def]
    return convert_html((PAGES / name).read_text(encoding="utf-8"), base, output, parser=parser)  # type: ignore[arg-type]


@pytest.mark.parametrize("parser", PARSERS)
def test_article_keeps_the_story_and_drops_site_chrome(parser: str) -> None:
    converted = _page("article.html", parser)
    markdown = converted.content
    assert converted.title == "Why Tide Pools Matter" and not converted.whole_page
    assert markdown.startswith("# Why Tide Pools Matter\n")
    for kept in (
        "## What lives in a tide pool",
        "- Ochre sea stars, which pry open mussels",
        "> “Look with your eyes, not with your hands,”",
        "[coastal marine laboratory](https://news.example/science/marine-lab)",
        "![A tide pool full of anemones at low tide](https://news.example/2024/images/tidepool.jpg)",
        "keep an eye on the tide tables",
    ):
        assert kept in markdown
    for dropped in (
        "Skip to content", "Subscribe", "Search", "Share on", "ADVERTISEMENT", "newsletter",
        "Tags:", "Related stories", "Comments", "Most read", "All rights reserved", "cookies",
        "Hidden tracking", "dataLayer", "position:fixed",
    ):  # fmt: skip
        assert dropped not in markdown, dropped


@pytest.mark.parametrize("parser", PARSERS)
def test_docs_page_keeps_code_with_language_and_tables_and_drops_toc(parser: str) -> None:
    markdown = _page("docs.html", parser).content
    assert markdown.startswith("# Configuration\n")
    assert (
        '```toml\n[database]\nurl = "postgres://localhost/widgets"\n\n[workers]\ncount = 4\n```' in markdown
    )
    assert (
        '```python\nfrom widgetron import load_config\n\nconfig = load_config("widgetron.toml")\n' in markdown
    )
    assert (
        "| Variable | Meaning | Default |\n| --- | --- | --- |\n| `WIDGETRON_DB_URL` | Database URL | none |"
        in markdown
    )
    assert "Never commit database passwords" in markdown
    for dropped in (
        "Table of contents",
        "Installation",
        "Changelog",
        "Previous",
        "Built with Sphinx",
        "¶",
        "Docs »",
    ):
        assert dropped not in markdown, dropped


@pytest.mark.parametrize("parser", PARSERS)
def test_data_table_becomes_a_markdown_table_with_header(parser: str) -> None:
    markdown = _page("table.html", parser).content
    assert "| Planet | Distance (AU) | Moons |\n| --- | --- | --- |\n| Mercury | 0.39 | 0 |" in markdown
    assert "| Neptune | 30.1 | 16 |" in markdown
    assert "Planetary data (2024)" in markdown
    assert "Solar system" not in markdown  # the top menu


@pytest.mark.parametrize("parser", PARSERS)
def test_mostly_navigation_page_falls_back_to_the_whole_page(parser: str) -> None:
    converted = _page("portal.html", parser, base="https://city.example/")
    assert converted.whole_page
    assert "[Parking permits](https://city.example/services/parking)" in converted.content
    assert "## Business" in converted.content


@pytest.mark.parametrize("parser", PARSERS)
def test_text_output_has_no_markdown_syntax(parser: str) -> None:
    text = _page("docs.html", parser, "text").content
    assert "Configuration\n\nWidgetron reads its settings from widgetron.toml" in text
    assert "WIDGETRON_DB_URL\tDatabase URL\tnone" in text
    assert "```" not in text and "](" not in text and "#" not in text.split("\n")[0]


@pytest.mark.parametrize("parser", PARSERS)
def test_html_output_is_main_content_with_only_essential_attributes(parser: str) -> None:
    html = _page("docs.html", parser, "html").content
    assert '<pre class="language-toml">' in html and "<table>" in html
    assert "wy-nav-side" not in html and 'class="docutils' not in html and "<nav" not in html


def test_links_are_resolved_against_the_base_element_and_javascript_links_unwrapped() -> None:
    html = """<html><head><base href="https://cdn.example/docs/"></head><body><main>
        <p>See <a href="guide.html">the guide</a>, <a href="javascript:void(0)">click here</a>,
        and <a href="//other.example/x">elsewhere</a>.
        <img src="data:image/png;base64,{blob}" alt="inline chart">
        <img data-src="/lazy.png" src="data:image/gif;base64,R0lGOD" alt="lazy"></p></main></body></html>
    """.replace("{blob}", "A" * 500)
    markdown = html_to_markdown(html, "https://site.example/page").content
    assert "[the guide](https://cdn.example/docs/guide.html)" in markdown
    assert "click here" in markdown and "javascript" not in markdown
    assert "[elsewhere](https://other.example/x)" in markdown
    assert "inline chart" in markdown and "AAAA" not in markdown
    assert "![lazy](https://cdn.example/lazy.png)" in markdown


def test_hidden_elements_and_aria_hidden_are_removed() -> None:
    html = """<main><p>Visible paragraph.</p><p hidden>hidden attr</p><div aria-hidden="true">aria</div>
              <span style="visibility: hidden">invisible</span></main>"""
    assert html_to_markdown(html, "https://x.example/").content == "Visible paragraph.\n"


def test_page_wrapped_in_a_single_form_keeps_its_content() -> None:
    body = "".join(
        f"<p>Paragraph {n} of an ASP.NET style page, which wraps everything in a form.</p>" for n in range(12)
    )
    html = (
        f"<html><body><form id='aspnetForm' action='/x'><div id='content'>{body}</div></form></body></html>"
    )
    assert "Paragraph 11 of an ASP.NET style page" in html_to_markdown(html, "https://x.example/").content


def test_density_scoring_picks_the_text_heavy_container_without_semantic_tags() -> None:
    story = "".join(
        f"<p>Sentence {n}, with commas, describing the finding in detail, as long-form articles do.</p>"
        for n in range(10)
    )
    links = "".join(f"<a href='/l{n}'>Link {n}</a> " for n in range(40))
    html = (
        f"<html><body><div id='l'>{links}</div><div id='story'>{story}</div>"
        f"<div id='r'>{links}</div></body></html>"
    )
    markdown = html_to_markdown(html, "https://x.example/").content
    assert "Sentence 9, with commas" in markdown and "Link 3" not in markdown


def test_truncate_html_cuts_before_a_tag() -> None:
    cut, truncated = truncate_html("<p>one</p><p>two</p>", 13)
    assert truncated and cut == "<p>one</p>"
    assert truncate_html("<p>x</p>", 100) == ("<p>x</p>", False)
