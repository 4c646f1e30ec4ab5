"""The README stays a short front page, and the Markdown docs link to files that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
MAX_README_LINES = 200

# [text](target) or [text](target "title"); images too. Targets with a scheme or "mailto:" are not relative.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(path: Path) -> list[tuple[int, str]]:
    """The file's lines outside fenced code blocks, numbered from 1, with inline code spans blanked."""
    lines, in_fence = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            lines.append((number, re.sub(r"`[^`]*`", "``", line)))
    return lines


def relative_links(path: Path) -> list[tuple[int, str]]:
    """(line number, target without its anchor) of every relative link in a Markdown file."""
    links = []
    for number, line in prose_lines(path):
        for target in LINK.findall(line):
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
                continue
            links.append((number, target.split("#", 1)[0]))
    return links


def test_readme_is_short() -> None:
    count = len(README.read_text(encoding="utf-8").splitlines())
    assert count <= MAX_README_LINES, (
        f"README.md has {count} lines, more than {MAX_README_LINES}: move detail into docs/ and link to it"
    )


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_point_to_existing_files(path: Path) -> None:
    missing = [
        f"{path.relative_to(REPO)}:{number}: {target}"
        for number, target in relative_links(path)
        if not (path.parent / target).exists()
    ]
    assert not missing, "links to files that do not exist:\n" + "\n".join(missing)


def headline_rows() -> list[str]:
    """The body rows of the table under README's '## Headline figures' heading."""
    text = README.read_text(encoding="utf-8")
    match = re.search(r"^## Headline figures\n(.*?)(?=^## |\Z)", text, flags=re.MULTILINE | re.DOTALL)
    assert match, "README.md has no '## Headline figures' section"
    table = [line for line in match.group(1).splitlines() if line.startswith("|")]
    assert len(table) >= 3, "the headline figures section has no table"
    return table[2:]  # past the header and its |---| line


def test_every_headline_figure_links_into_docs() -> None:
    rows = headline_rows()
    assert len(rows) <= 10, f"{len(rows)} headline figures: keep the table short, the rest is docs/results.md"
    for row in rows:
        targets = [target for target in LINK.findall(row) if target.startswith("docs/")]
        assert targets, f"headline figure without a link into docs/: {row}"
        for target in targets:
            path = REPO / target.split("#", 1)[0]
            assert path.is_file(), f"headline figure links to a missing file: {row}"


def test_link_parsing_on_examples(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        'See [a](a.md#x), [b](../b.md "title"), [web](https://example.org), [top](#top)\n'
        "and ![img](i.png).\n"
        "`[not a link](code.md)`\n"
        "```\n[fenced](fenced.md)\n```\n",
        encoding="utf-8",
    )
    assert relative_links(page) == [(1, "a.md"), (1, "../b.md"), (2, "i.png")]


def headings(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings."""
    from hgpo.docs_results import anchor

    raw = path.read_text(encoding="utf-8").splitlines()
    return {anchor(raw[n - 1].lstrip("#")) for n, line in prose_lines(path) if re.match(r"^#{1,6} ", line)}


def test_anchored_links_point_to_existing_headings() -> None:
    broken = []
    for path in [README, *DOCS]:
        for number, line in prose_lines(path):
            for target in LINK.findall(line):
                if "#" not in target or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                    continue
                file, fragment = target.split("#", 1)
                linked = (path.parent / file) if file else path
                if linked.suffix == ".md" and fragment not in headings(linked):
                    broken.append(f"{path.relative_to(REPO)}:{number}: {target}")
    assert not broken, "links to headings that do not exist:\n" + "\n".join(broken)


def test_results_page_is_what_its_spec_and_jsons_give() -> None:
    from hgpo.docs_results import PAGE, load_spec, render

    assert PAGE.read_text(encoding="utf-8") == render(load_spec()), (
        "docs/results.md differs from docs/results.yaml and its JSON files: run `python -m hgpo.docs_results`"
    )


def test_every_results_figure_links_to_its_command_and_json() -> None:
    page = REPO / "docs" / "results.md"
    rows = [line for _, line in prose_lines(page) if line.startswith("| ") and not line.startswith("| what ")]
    assert len(rows) >= 20, "docs/results.md has (almost) no figures"
    raw = {number: line for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1)}
    for number, line in prose_lines(page):
        if line not in rows:
            continue
        source = raw[number].rsplit("|", 2)[-2]
        assert re.search(r"`(hgpo|make) [^`]+`", source), f"results.md:{number}: a figure without its command"
        jsons = [t for t in LINK.findall(source) if t.endswith(".json")]
        assert jsons and all((page.parent / t).is_file() for t in jsons), (
            f"results.md:{number}: a figure without a link to the JSON file it came from"
        )


def test_results_renderer_on_a_small_spec(tmp_path: Path) -> None:
    from hgpo.docs_results import render

    (tmp_path / "run.json").write_text('{"success_rate": 0.5, "per": {"a": {"n": 1}, "b": {"n": 0}}}')
    spec = {
        "title": "T",
        "intro": "I",
        "sections": [
            {
                "title": "S",
                "history": "s",
                "tables": [
                    {
                        "caption": "C",
                        "columns": [
                            {"header": "success", "field": "success_rate", "format": "{:.2f}"},
                            {"header": "per", "field": "per", "join": "{key} {n}", "where": "n"},
                        ],
                        "sources": [{"label": "L", "json": "run.json", "command": "hgpo x"}],
                    }
                ],
            }
        ],
    }
    page = render(spec, tmp_path)
    assert "| L | 0.50 | a 1 | `hgpo x` → [`run.json`](../run.json) |" in page
    bad = {**spec["sections"][0]["tables"][0], "columns": [{"header": "x", "field": "nope"}]}  # type: ignore[index]
    with pytest.raises(ValueError, match="run.json: no field 'nope'"):
        render({**spec, "sections": [{"title": "S", "history": "s", "tables": [bad]}]}, tmp_path)
