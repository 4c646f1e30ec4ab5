"""docs/results.md from its spec (docs/results.yaml) and the JSON files the benchmark and evaluation commands
wrote, so every figure on the page is read from its file and names the command that wrote it.

    python -m hgpo.docs_results           # rewrite docs/results.md
    python -m hgpo.docs_results --check   # exit 1 if docs/results.md differs from what the JSONs give
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "docs" / "results.yaml"
PAGE = REPO / "docs" / "results.md"
MISSING = "—"


@dataclass(frozen=True)
class Row:
    """One rendered table row: its label, its figures, and where they came from."""

    label: str
    cells: tuple[str, ...]
    json: str
    command: str


def lookup(data: Any, dotted: str, where: str) -> Any:
    """`data` at a dotted path (`results.summary`, `config.llm.adapter`); a missing key is an error, a
    null block on the way gives None."""
    node = data
    for key in dotted.split("."):
        if node is None:
            return None  # a block the run had none of (an expert planner's `llm`)
        if not isinstance(node, Mapping) or key not in node:
            raise ValueError(f"{where}: no field {dotted!r}")
        node = node[key]
    return node


def _absent(data: Any, dotted: str) -> bool:
    try:
        lookup(data, dotted, "")
    except ValueError:
        return True
    return False


def cell(data: Any, column: Mapping[str, Any], where: str) -> str:
    """One column's text for one row: its field(s) through `format`, or a mapping through `join`."""
    fields = column["field"] if isinstance(column["field"], list) else [column["field"]]
    if column.get("optional") and any(_absent(data, name) for name in fields):
        return MISSING
    values = [lookup(data, name, where) for name in fields]
    if "join" in column:
        (mapping,) = values
        items = mapping.items() if isinstance(mapping, Mapping) else enumerate(mapping)
        parts = [
            column["join"].format(key=key, **entry)
            for key, entry in items
            if "where" not in column or entry.get(column["where"])
        ]
        return ", ".join(parts) or MISSING
    if any(value is None or value == "" for value in values):
        return MISSING
    text: str = column.get("format", "{}").format(*values)
    return text.replace("|", "\\|")


def source_rows(source: Mapping[str, Any], columns: Sequence[Mapping[str, Any]], repo: Path) -> list[Row]:
    """The rows of one source: one, or one per entry of `rows_from`."""
    path = repo / source["json"]
    where = source["json"]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"cannot read {where}: {err}") from err
    if "rows_from" not in source:
        entries: list[tuple[Any, Any]] = [(None, data)]
    else:
        found = lookup(data, source["rows_from"], where)
        if isinstance(found, Mapping):
            entries = list(found.items())
        else:
            entries = [
                (entry.get(source["key"]) if "key" in source else i, entry) for i, entry in enumerate(found)
            ]
    return [
        Row(
            source["label"].format(key=key),
            tuple(cell(entry, column, where) for column in columns),
            source["json"],
            source["command"],
        )
        for key, entry in entries
    ]


def render_table(table: Mapping[str, Any], repo: Path) -> list[str]:
    columns = table["columns"]
    headers = ["what", *(column["header"] for column in columns), "command and JSON"]
    lines = [table["caption"] + ":", "", "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for source in table["sources"]:
        for row in source_rows(source, columns, repo):
            link = f"[`{Path(row.json).name}`](../{row.json})"
            lines.append(f"| {row.label} | {' | '.join(row.cells)} | `{row.command}` → {link} |")
    return lines


def render(spec: Mapping[str, Any], repo: Path = REPO) -> str:
    """The whole page, from the spec and the JSON files it names."""
    lines = [f"# {spec['title']}", "", spec["intro"].strip(), ""]
    for section in spec["sections"]:
        lines += [f"## {section['title']}", ""]
        if "note" in section:
            lines += [section["note"], ""]
        for table in section.get("tables", ()):
            lines += [*render_table(table, repo), ""]
        history = section["history"]
        lines += [
            f"Figures measured by hand, with their commands, and their history: "
            f"[history.md](history.md#{history}).",
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def load_spec(path: Path = SPEC) -> Mapping[str, Any]:
    spec: Mapping[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return spec


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hgpo.docs_results",
        description="Write docs/results.md from docs/results.yaml and the JSON files it names.",
    )
    parser.add_argument("--check", action="store_true", help="only check: exit 1 if docs/results.md is stale")
    args = parser.parse_args(argv)
    try:
        page = render(load_spec())
    except (ValueError, KeyError) as err:
        print(f"docs/results.yaml: {err}", file=sys.stderr)
        return 2
    if args.check:
        if PAGE.read_text(encoding="utf-8") != page:
            print("docs/results.md is stale: run `python -m hgpo.docs_results`", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(page, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
