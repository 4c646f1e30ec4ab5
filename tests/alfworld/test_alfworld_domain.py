"""The alfworld planning domain: the LLM planner's vocabulary, observation text and valid set for ALFWorld."""

from __future__ import annotations

from pathlib import Path

from policies.planning.alfworld_domain import AlfworldView
from policies.planning.domains import make_domain
from policies.planning.parsing import format_subgoal, is_well_formed, parse_subgoal, validate_output
from policies.planning.prompting import PromptBuilder
from sim.alfworld import TEXT_SKILLS, AlfworldTextEnv, discover_games


def test_valid_set_is_the_admissible_subgoals(game_set: Path, text_env: AlfworldTextEnv) -> None:
    domain = make_domain("alfworld")
    assert [s.name for s in domain.skills()] == list(TEXT_SKILLS)
    first = text_env.reset(discover_games(game_set)[0].path)
    view = AlfworldView(first.text, first.text, first.admissible_commands)
    valid = domain.valid_subgoals(view)
    assert domain.finish_allowed(view)  # done() is always an answer; the loop checks the game was won
    assert valid and all(is_well_formed(s) and s.skill in TEXT_SKILLS for s in valid)
    assert parse_subgoal(format_subgoal(valid[0])) == valid[0]

    def explain(subgoal):  # type: ignore[no-untyped-def]
        return domain.explain_invalid(subgoal, view)

    assert validate_output(format_subgoal(valid[0]), valid, explain).valid
    refused = validate_output("go_to(attic 1)", valid, explain)
    assert not refused.valid and "admissible go_to subgoals now" in refused.error
    text = domain.render_observation(view)
    assert "Your task" not in text and "you see a" in text
    system, user = PromptBuilder.for_domain(domain).messages(domain, first.task, view, ())
    assert first.task in user["content"] and "go_to(recep: receptacle)" in system["content"]
