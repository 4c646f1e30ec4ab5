"""The table every benchmark prints."""

from __future__ import annotations

from hgpo.bench.report import table


def test_floats_keep_three_digits_and_large_ones_stay_out_of_exponent_form() -> None:
    lines = table(
        ["learner", "train s", "success"], [["sb3", 4800.0, 0.05], ["hgpo", 1954.3, 0.95]]
    ).splitlines()
    assert lines[2].split() == ["sb3", "4800", "0.05"]
    assert lines[3].split() == ["hgpo", "1954", "0.95"]
    assert table(["x"], [[0.123456]]).splitlines()[2].strip() == "0.123"
