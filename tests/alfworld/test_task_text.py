"""Reading the task an ALFWorld instruction states, with ALFWorld's own goal templates."""

from __future__ import annotations

from alfworld.gen import goal_library

from sim.alfworld.rooms import TASK_TYPES
from sim.alfworld.task_text import TREATMENTS, TaskAsk, parse_task


def test_every_template_of_the_six_task_types_reads_back() -> None:
    for task_type in TASK_TYPES:
        for template in goal_library.gdict[task_type]["templates"]:
            text = template.format(obj="mug", recep="cabinet", toggle="desklamp")
            recep = None if task_type == "look_at_obj_in_light" else "cabinet"
            assert parse_task(text) == TaskAsk("mug", recep, TREATMENTS.get(task_type)), text


def test_a_users_own_words_state_no_task() -> None:
    assert parse_task("Put a hot egg in garbagecan.") == TaskAsk("egg", "garbagecan", "heated")
    assert parse_task("put the two pans by the sink") is None
    assert parse_task("put a clean mug in cabinet and then dance") is None
