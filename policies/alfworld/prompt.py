"""Prompt rendering for ALFWorld planning: the task, the first observation, the history of subgoals with
the game's answers, and the valid subgoals now. The same text is the planner's input and the behaviour
cloning demonstrations' input. The template lives in `prompts/alfworld_step.txt`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sim.alfworld import TEXT_SKILLS, TextSubgoal

TEMPLATE = (Path(__file__).parent / "prompts" / "alfworld_step.txt").read_text()
HISTORY_WINDOW = 10  # the last subgoals shown, as the GiGPO and ReAct prompts keep a bounded history


@dataclass(frozen=True)
class TextStep:
    """One executed subgoal and the game's answer."""

    subgoal: TextSubgoal
    success: bool
    feedback: str


def render_prompt(
    task: str, first_observation: str, history: Sequence[TextStep], valid: Sequence[TextSubgoal]
) -> str:
    skills = "; ".join(f"{s.name}({', '.join(s.params)}): {s.description}" for s in TEXT_SKILLS.values())
    shown = history[-HISTORY_WINDOW:]
    lines = [f"{step.subgoal!s} -> {step.feedback}" for step in shown] or ["(none yet)"]
    if len(history) > len(shown):
        lines.insert(0, f"({len(history) - len(shown)} earlier subgoals not shown)")
    intro = first_observation.split("Your task is to:")[0].strip()
    return TEMPLATE.format(
        skills=skills,
        observation=intro,
        task=task,
        history="\n".join(lines),
        valid="\n".join(str(s) for s in valid),
    )
