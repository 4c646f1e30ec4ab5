"""Rephrased demonstrations: the same decisions under other training phrasings of their task, for BC data
whose language varies more than the episodes played (`hgpo tabletop-demos --rephrase`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from hgpo.cli import main as hgpo
from policies.planner_training.demos import rephrase, tabletop_demonstrations
from sim.tabletop.phrasing import PHRASINGS

NAMES = re.compile(r"\b(red|green|blue|yellow|left|right)\b")


@pytest.fixture(scope="module")
def records() -> list[dict]:
    played = tabletop_demonstrations(["pick_place", "sort"], [0, 1], split="train")
    return [record for success, lines in played if success for record in lines]


def test_copies_change_the_instruction_line_only(records: list[dict]) -> None:
    held_out = {p.id for family in PHRASINGS.values() for p in family if p.split == "heldout"}
    rng = np.random.default_rng(0)
    for record in records:
        copies = rephrase(record, 3, rng)
        assert len(copies) == 3
        assert len({record["instruction"], *(c["instruction"] for c in copies)}) == 4
        for copy in copies:
            assert copy["phrasing"] not in held_out and copy["phrasing"].startswith(record["task"] + "/")
            assert {k: v for k, v in copy.items() if k not in ("instruction", "phrasing", "messages")} == {
                k: v for k, v in record.items() if k not in ("instruction", "phrasing", "messages")
            }
            old, new = record["messages"][-1]["content"], copy["messages"][-1]["content"]
            assert old.replace(f"Instruction: {record['instruction']}\n", "") == new.replace(
                f"Instruction: {copy['instruction']}\n", ""
            )
            assert copy["messages"][0] == record["messages"][0]
            if record["task"] == "pick_place":  # the same block and plate, in other words
                assert set(NAMES.findall(copy["instruction"])) == set(NAMES.findall(record["instruction"]))


def test_held_out_records_are_never_rephrased(records: list[dict]) -> None:
    with pytest.raises(ValueError, match="held-out records are never rephrased"):
        rephrase({**records[0], "split": "heldout"}, 1, np.random.default_rng(0))


def test_the_command_writes_each_record_and_its_copies(
    records: list[dict], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out = tmp_path / "demos.jsonl", tmp_path / "rephrased.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert hgpo(["tabletop-demos", "--rephrase", str(source), "--copies", "2", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3 * len(records) and rows[0] == records[0] and rows[3] == records[1]
    assert f"{len(records)} from {source} and {2 * len(records)} rephrased" in capsys.readouterr().out
    source.write_text("".join(json.dumps({**r, "split": "heldout"}) + "\n" for r in records))
    assert hgpo(["tabletop-demos", "--rephrase", str(source), "--out", str(out)]) == 2
    assert "held-out records are never rephrased" in capsys.readouterr().err
