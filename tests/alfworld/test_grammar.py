"""Command grammars read from the game: alfworld's own `alfred.twl2` is 0.4's, the 0.2-style variant the
generator writes is read as 0.2's, a grammar of other words is refused naming its file, and the answers of
both grammars are read alike (where the agent stands, what it moved)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from alfworld.info import ALFRED_TWL2_PATH

from hgpo.alfworld import eval_main
from policies.alfworld.domain import AlfworldDomain, AlfworldView
from sim.alfworld import GRAMMARS, AlfworldTextEnv, GameFileError, discover_games
from sim.alfworld.grammar import canonical_answer, grammar_of, grammar_words, rewrite
from sim.alfworld.text_state import search_state
from tests.alfworld_games import generated_game_set

TWL2 = Path(ALFRED_TWL2_PATH)


def test_the_shipped_grammar_is_04_and_its_02_rewording_reads_as_02() -> None:
    text = TWL2.read_text()
    assert grammar_of(text, TWL2) == GRAMMARS["alfworld-0.4"]
    old = rewrite(text, GRAMMARS["alfworld-0.2"], TWL2)
    assert grammar_words(old) == (
        "put {o} in/on {r}",
        "You put the {o.name} in/on the {r.name}.",
        "You arrive at {lend.name}.",
    )
    assert "move {o} to {r}" not in old and grammar_of(old, TWL2) == GRAMMARS["alfworld-0.2"]
    assert rewrite(old, GRAMMARS["alfworld-0.4"], TWL2) == text


def test_an_unknown_grammar_is_an_error_naming_the_file(
    game_set: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = discover_games(game_set)[0]
    copy = tmp_path / "set" / source.name
    shutil.copytree(source.folder, copy)
    game_file = copy / "game.tw-pddl"
    data = json.loads(game_file.read_text())
    data["grammar"] = data["grammar"].replace("move {o} to {r}", "place {o} onto {r}")
    game_file.write_text(json.dumps(data))
    with pytest.raises(GameFileError, match=r"game.tw-pddl has a grammar the text skills do not know") as err:
        AlfworldTextEnv().reset(game_file)
    assert str(game_file) in str(err.value) and "'place {o} onto {r}'" in str(err.value)
    assert "alfworld-0.2: 'put {o} in/on {r}'" in str(err.value)
    with pytest.raises(GameFileError, match="1 bad game") as err:
        discover_games(tmp_path / "set")
    assert str(game_file) in str(err.value)
    with pytest.raises(SystemExit) as code:  # `hgpo alfworld eval` plays none of the set and says why
        eval_main(["--games", str(tmp_path / "set"), "--planner", "expert"])
    assert code.value.code == 2
    assert f"{game_file} has a grammar the text skills do not know" in capsys.readouterr().err


def test_answers_of_both_grammars_say_where_the_agent_stands_and_what_it_moved() -> None:
    room = "You are in the middle of a room. Looking quickly around you, you see a desk 1, and a drawer 2."
    for arrival in (
        "You arrive at loc 5.",
        "You arrive at drawer 2.",
    ):  # 0.2 names a location, 0.4 the receptacle
        walked = search_state(room, [f"{arrival} The drawer 2 is closed."])
        assert walked.here == "drawer 2" and walked.visited == ["drawer 2"] and walked.closed_here
    for put in ("You put the mug 1 in/on the desk 1.", "You move the mug 1 to the desk 1."):
        state = search_state(room, ["You arrive at loc 3. On the desk 1, you see a mug 1, and a pen 2.", put])
        assert state.here == "desk 1" and state.seen_at == {"pen 2": "desk 1"}
        assert state.visible_here == ["pen 2"]


def test_a_02_game_reads_in_04_words_to_the_planner(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The same six games played command for command (their walkthroughs, in each grammar's words): every
    answer of the 0.2 game, made canonical, is the 0.4 game's answer, so the LLM planner's prompt is the
    same in both; a canonical answer is left as it is."""
    sets = {
        g: discover_games(generated_game_set(tmp_path_factory, g)) for g in ("alfworld-0.2", "alfworld-0.4")
    }
    env, domain, answers = AlfworldTextEnv(max_steps=60), AlfworldDomain(), 0
    try:
        for old, new in zip(sets["alfworld-0.2"], sets["alfworld-0.4"], strict=True):
            plays = {}
            for game in (old, new):
                first = env.reset(game.path)
                walkthrough = json.loads(game.path.read_text())["walkthrough"]
                plays[game.grammar] = [first, *(env.step(command) for command in walkthrough)]
            for before, after in zip(plays["alfworld-0.2"], plays["alfworld-0.4"], strict=True):
                assert canonical_answer(before.text) == after.text == canonical_answer(after.text)
                views = (
                    AlfworldView(plays[g][0].text, o.text, o.admissible_commands)
                    for g, o in (("alfworld-0.2", before), ("alfworld-0.4", after))
                )
                assert len({domain.render_observation(view) for view in views}) == 1
                answers += before.text != after.text
    finally:
        env.close()
    assert answers >= 12  # every walk and every put differed before
