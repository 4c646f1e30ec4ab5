"""Anticipatory prefill (`LLMPlanner.anticipate`): while a subgoal executes, the planner prefills the
prompt of the next decision as it will read if the subgoal succeeds; the decision after a correct
prediction reuses the whole prompt, and every decision answers what it answers without anticipation (the
prefix cache's standard: greedy answers equal to the plain decoder's). Tiny GPT-2, the MuJoCo tabletop,
expert skills."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from policies.control import ExpertSkillPolicy, execute_subgoal
from policies.planning import LLMConfig, LLMPlanner, LoopConfig, PlanningContext, StepRecord, run_closed_loop
from policies.planning.backends import Completion, ModelError
from policies.planning.backends.transformers_lm import TransformersModel, load_causal_lm
from policies.planning.decisions import Message
from policies.tabletop.domain import TabletopDomain
from sim.tabletop import SceneState, Subgoal, TabletopWorld, make_task


@pytest.fixture(scope="module")
def loaded(tiny_model_dir: Path) -> tuple[Any, Any]:
    return load_causal_lm(str(tiny_model_dir))


@pytest.fixture(scope="module")
def config(tiny_model_dir: Path) -> LLMConfig:
    return LLMConfig(model=str(tiny_model_dir))


@pytest.fixture(scope="module")
def world() -> TabletopWorld:
    return TabletopWorld()


class Watched:
    """A model that counts the threads inside it at once and logs its calls; `gate` holds a prefill back
    until it opens, so a decision that did not wait for the anticipation would run beside it."""

    constrains = True

    def __init__(self, model: TransformersModel, gate: threading.Event | None = None) -> None:
        self.model, self.gate = model, gate
        self.config, self.description = model.config, model.description
        self.calls: list[str] = []
        self.most_inside = 0
        self._inside = 0
        self._lock = threading.Lock()

    @contextmanager
    def _entered(self, call: str) -> Iterator[None]:
        with self._lock:
            self._inside += 1
            self.most_inside = max(self.most_inside, self._inside)
            self.calls.append(call)
        try:
            yield
        finally:
            with self._lock:
                self._inside -= 1

    def complete(self, messages: Sequence[Message], choices: Sequence[str] | None = None) -> Completion:
        with self._entered("complete"):
            return self.model.complete(messages, choices)

    def prefill(self, messages: Sequence[Message], upto: str | None = None) -> None:
        with self._entered("prefill"):
            if self.gate is not None:
                assert self.gate.wait(timeout=30)
            self.model.prefill(messages, upto)


def planner(model: TransformersModel | Watched) -> LLMPlanner:
    """The tabletop planner over `model`, with the model's settings (anticipation on or off among them)."""
    return LLMPlanner(TabletopDomain(), model, model.config)


def test_after_a_correct_prediction_the_decision_reuses_the_whole_prompt(
    loaded: tuple[Any, Any], config: LLMConfig, world: TabletopWorld
) -> None:
    task = make_task("sort", 0)
    state = world.reset(task)
    block = state.names("block")[0]
    model = TransformersModel(config, loaded)
    plans = planner(model)
    first = PlanningContext(task.instruction, state, (), task)
    plans.next_subgoal(first)
    pick = Subgoal("pick", (block,))
    plans.anticipate(first, pick)
    assert execute_subgoal(world, pick, ExpertSkillPolicy(), timeout_s=20.0).success
    after = PlanningContext(task.instruction, world.state(), (StepRecord(pick, True, "picked"),), task)
    answer = plans.next_subgoal(after)
    stats = model.last_stats
    assert stats.reused_tokens == stats.prompt_tokens - 1  # all but the token whose logits answer
    plain = planner(TransformersModel(replace(config, decoding="plain", prefix_cache=0), loaded))
    assert plain.next_subgoal(after) == answer and answer is not None and answer.args[0] == block


@pytest.mark.parametrize("name", ["pick_place", "stack", "sort"])
def test_after_a_wrong_prediction_the_answer_is_the_one_without_anticipation(
    loaded: tuple[Any, Any], config: LLMConfig, world: TabletopWorld, name: str
) -> None:
    """Each first subgoal fails (fresh models each time): the next prompt's history, and the scene where the
    subgoal would have moved a block, differ from the predicted ones."""
    task = make_task(name, 1)
    state = world.reset(task)
    first = PlanningContext(task.instruction, state, (), task)
    answers = []
    for subgoal in TabletopDomain().valid_subgoals(state):
        ahead = TransformersModel(config, loaded)
        without = TransformersModel(replace(config, anticipate=False), loaded)
        plain = TransformersModel(replace(config, decoding="plain", prefix_cache=0), loaded)
        failed = PlanningContext(
            task.instruction, state, (StepRecord(subgoal, False, "gripper jammed"),), task
        )
        said = []
        for model in (ahead, without, plain):
            plans = planner(model)
            plans.next_subgoal(first)
            plans.anticipate(first, subgoal)
            said.append(plans.next_subgoal(failed))
        assert said[0] == said[1] == said[2]
        reused = [model.last_stats.reused_tokens for model in (ahead, without)]
        assert reused[1] <= reused[0] < ahead.last_stats.prompt_tokens - 1
        answers.append(said[0])
    assert len(set(answers)) > 1  # the failures' prompts are answered differently


def play(
    model: TransformersModel, world: TabletopWorld, name: str, seed: int
) -> tuple[list[str], list[int], list[bool]]:
    """A tabletop episode of the planner over `model`, its subgoals executed by the expert skills in
    MuJoCo: the subgoals, each decision's prompt tokens it prefilled itself, and whether each subgoal left
    the scene the domain predicted for it."""
    task = make_task(name, seed)
    domain = TabletopDomain()
    prefilled: list[int] = []
    came_true: list[bool] = []

    def execute(subgoal: Subgoal) -> StepRecord:
        prefilled.append(model.last_stats.prompt_tokens - model.last_stats.reused_tokens)
        state = world.state()
        result = execute_subgoal(world, subgoal, ExpertSkillPolicy(), timeout_s=20.0)
        predicted = domain.predict_observation(state, subgoal)
        came_true.append(result.success and predicted == domain.render_observation(world.state()))
        return StepRecord(subgoal, result.success, result.message)

    world.reset(task)
    outcome = run_closed_loop(
        planner(model),
        task.instruction,
        world.state,
        execute,
        task=task,
        config=LoopConfig(max_subgoals=6, max_repeats=6),
    )
    return [str(record.subgoal) for record in outcome.history], prefilled, came_true


@pytest.mark.parametrize(("name", "seed"), [("pick_place", 2), ("sort", 3), ("push", 4)])
def test_the_closed_loop_decodes_the_same_subgoals_with_and_without_anticipation(
    loaded: tuple[Any, Any], config: LLMConfig, world: TabletopWorld, name: str, seed: int
) -> None:
    subgoals, prefilled, came_true = play(TransformersModel(config, loaded), world, name, seed)
    without = play(TransformersModel(replace(config, anticipate=False), loaded), world, name, seed)
    plain = play(
        TransformersModel(replace(config, decoding="plain", prefix_cache=0), loaded), world, name, seed
    )
    assert without[0] == plain[0] == subgoals and len(subgoals) >= 3
    assert all(ahead <= alone for ahead, alone in zip(prefilled, without[1], strict=True))
    # a decision after a prediction that came true prefills its last token only
    after_true = [tokens for tokens, true in zip(prefilled[1:], came_true, strict=False) if true]
    assert after_true and all(tokens == 1 for tokens in after_true)


def test_the_shipped_planner_decodes_the_same_subgoals_and_reuses_whole_prompts(
    smollm2_dir: Path, world: TabletopWorld
) -> None:
    """The real planner (SmolLM2 with the tabletop adapter, greedy) on a stack episode: every decision
    after the first follows a prediction that came true and prefills one token."""
    ahead = TransformersModel(LLMConfig(adapter="tabletop"))
    without = TransformersModel(replace(ahead.config, anticipate=False), (ahead.tokenizer, ahead.model))
    subgoals, prefilled, came_true = play(ahead, world, "stack", 1000)
    assert play(without, world, "stack", 1000)[0] == subgoals
    assert len(subgoals) == 2 and all(came_true) and prefilled[1:] == [1] * (len(prefilled) - 1)


class Unpredictable(TabletopDomain):
    def predict_observation(self, observation: SceneState, subgoal: Subgoal) -> str | None:
        raise KeyError(subgoal.skill)


class NoPrefill(Watched):
    def prefill(self, messages: Sequence[Message], upto: str | None = None) -> None:
        raise ModelError("prefill failed: RuntimeError: out of memory")


@pytest.mark.parametrize("where", ["domain", "model"])
def test_an_anticipation_that_raises_does_not_break_the_loop(
    loaded: tuple[Any, Any],
    config: LLMConfig,
    world: TabletopWorld,
    caplog: pytest.LogCaptureFixture,
    where: str,
) -> None:
    task = make_task("stack", 2)
    world.reset(task)
    state = world.state()

    def loop(plans: LLMPlanner) -> list[str]:
        outcome = run_closed_loop(
            plans,
            task.instruction,
            lambda: state,
            lambda subgoal: StepRecord(subgoal, True, ""),
            task=task,
            config=LoopConfig(max_subgoals=4, max_repeats=4),
        )
        return [str(record.subgoal) for record in outcome.history]

    expected = loop(planner(TransformersModel(replace(config, anticipate=False), loaded)))
    if where == "domain":
        broken = LLMPlanner(Unpredictable(), TransformersModel(config, loaded), config)
    else:
        broken = LLMPlanner(TabletopDomain(), NoPrefill(TransformersModel(config, loaded)), config)
    with caplog.at_level("WARNING"):
        assert loop(broken) == expected and len(expected) == 4
    assert caplog.text.count("anticipating the decision after") == 4
    assert ("KeyError" if where == "domain" else "out of memory") in caplog.text


def test_the_model_is_never_entered_by_two_threads(
    loaded: tuple[Any, Any], config: LLMConfig, world: TabletopWorld
) -> None:
    """The anticipation is held back until after the next decision starts: that decision waits for it."""
    task = make_task("pick_place", 0)
    state = world.reset(task)
    gate = threading.Event()
    watched = Watched(TransformersModel(config, loaded), gate)
    plans = planner(watched)
    first = PlanningContext(task.instruction, state, (), task)
    reach = Subgoal("reach", (state.names("block")[0],))
    plans.next_subgoal(first)
    plans.anticipate(first, reach)
    opener = threading.Timer(0.3, gate.set)
    opener.start()
    plans.next_subgoal(PlanningContext(task.instruction, state, (StepRecord(reach, True, ""),), task))
    opener.join()
    assert watched.calls == ["complete", "prefill", "complete"] and watched.most_inside == 1
    assert watched.model.last_stats.reused_tokens == watched.model.last_stats.prompt_tokens - 1


def test_nothing_is_prefilled_where_it_is_off_or_the_world_cannot_predict(
    loaded: tuple[Any, Any], config: LLMConfig, world: TabletopWorld
) -> None:
    from policies.alfworld.domain import AlfworldDomain, AlfworldView
    from tests.alfworld_history import AT_SHELF, ROOM, WALKED, history_of

    view = AlfworldView(ROOM, ROOM, AT_SHELF)
    subgoal = history_of(WALKED[0])[0].subgoal
    assert AlfworldDomain().predict_observation(view, subgoal) is None
    text_model = Watched(TransformersModel(replace(config, domain="alfworld"), loaded))
    text_world = LLMPlanner(AlfworldDomain(), text_model, text_model.config)
    text_world.anticipate(PlanningContext("put a candle in desk.", view, ()), subgoal)
    text_world.settle()
    task = make_task("reach", 0)
    scene = world.reset(task)
    off_model = Watched(TransformersModel(replace(config, anticipate=False), loaded))
    off = planner(off_model)
    off.anticipate(
        PlanningContext(task.instruction, scene, (), task), Subgoal("reach", (scene.names("block")[0],))
    )
    off.settle()
    assert text_model.calls == [] and off_model.calls == []


def before_instruction(model: TransformersModel, plans: LLMPlanner, instruction: str) -> int:
    """Tokens of the last decision's prompt before its instruction (system prompt, skills, observation)."""
    assert plans.last_trace is not None
    prompt = plans.last_trace.attempts[0].prompt_text
    return len(model.tokenizer.encode(prompt.partition(instruction)[0], add_special_tokens=False))


def first_decision(model: TransformersModel, task_name: str, seed: int, warm_in: SceneState | None) -> Any:
    """A fresh planner's first decision of a task in MuJoCo's reset scene, after warming it idle in
    `warm_in` (None: not warmed): the answer, the tokens it reused, and those before the instruction."""
    task = make_task(task_name, seed)
    state = TabletopWorld().reset(task)
    plans = planner(model)
    if warm_in is not None:
        plans.warm(warm_in)
        plans.settle()
    answer = plans.next_subgoal(PlanningContext(task.instruction, state, (), task))
    return answer, model.last_stats.reused_tokens, before_instruction(model, plans, task.instruction)


@pytest.mark.parametrize(("name", "seed"), [("pick_place", 0), ("stack", 1), ("sort", 2), ("push", 3)])
def test_a_first_decision_after_an_idle_warm_reuses_the_scene_and_answers_the_same(
    loaded: tuple[Any, Any], config: LLMConfig, name: str, seed: int
) -> None:
    """Warmed in the task's own scene, the first decision reuses everything before the instruction (its
    cut can cost the last token); warmed in another task's scene, what the two prompts share; the answer
    is the one of a cold planner and of the plain decoder without a cache, every time."""
    scene = TabletopWorld().reset(make_task(name, seed))
    stale = TabletopWorld().reset(make_task("stack" if name == "sort" else "sort", seed + 100))
    assert TabletopDomain().render_observation(stale) != TabletopDomain().render_observation(scene)
    answer, reused, before = first_decision(TransformersModel(config, loaded), name, seed, scene)
    assert before - 1 <= reused <= before  # the instruction's words are not known when warming
    cold = first_decision(TransformersModel(replace(config, anticipate=False), loaded), name, seed, scene)
    plain = TransformersModel(replace(config, decoding="plain", prefix_cache=0), loaded)
    assert cold[:2] == (answer, 0) and first_decision(plain, name, seed, None)[0] == answer
    after_stale = first_decision(TransformersModel(config, loaded), name, seed, stale)
    assert after_stale[0] == answer and 0 < after_stale[1] < before - 1  # system prompt and skills


def test_an_idle_warm_runs_once_a_scene_never_blocks_and_is_redone_after_a_task(
    loaded: tuple[Any, Any], config: LLMConfig, world: TabletopWorld
) -> None:
    task = make_task("stack", 0)
    scene = world.reset(task)
    other = world.reset(make_task("stack", 1))
    gate = threading.Event()
    watched = Watched(TransformersModel(config, loaded), gate)
    plans = planner(watched)
    assert plans.warm(scene)
    assert not plans.warm(other)  # returns at once: the first still runs (held by the gate)
    gate.set()
    plans.settle()
    assert not plans.warm(scene)  # done already
    assert watched.calls == ["prefill"]
    assert plans.warm(other)
    plans.next_subgoal(PlanningContext(task.instruction, other, (), task))
    assert plans.warm(other)  # after a decision the cache has moved on: warmed again
    plans.settle()
    assert watched.calls == ["prefill", "prefill", "complete", "prefill"] and watched.most_inside == 1
    off = Watched(TransformersModel(replace(config, anticipate=False), loaded))
    assert not planner(off).warm(scene) and off.calls == []


def test_alfworld_first_decisions_reuse_the_warmed_room(loaded: tuple[Any, Any], config: LLMConfig) -> None:
    """ALFWorld's template puts the room first too: the same answer, the room reused."""
    from policies.alfworld.domain import AlfworldDomain, AlfworldView
    from tests.alfworld_history import AT_SHELF, ROOM

    view = AlfworldView(ROOM, ROOM, AT_SHELF)
    context = PlanningContext("put a candle in desk.", view, ())
    answers, reused = [], []
    for anticipate in (True, False):
        model = TransformersModel(replace(config, domain="alfworld", anticipate=anticipate), loaded)
        plans = LLMPlanner(AlfworldDomain(), model, model.config)
        plans.warm(view)
        plans.settle()
        answers.append(plans.next_subgoal(context))
        reused.append((model.last_stats.reused_tokens, before_instruction(model, plans, context.instruction)))
    assert answers[0] == answers[1] and reused[1][0] == 0 and reused[0][0] >= reused[0][1] - 1


def test_the_shipped_planner_reuses_the_warmed_scene_up_to_the_instruction(smollm2_dir: Path) -> None:
    """SmolLM2's own tokenizer: the cut before the instruction costs its last token only."""
    warmed = TransformersModel(LLMConfig(adapter="tabletop"))
    cold = TransformersModel(replace(warmed.config, anticipate=False), (warmed.tokenizer, warmed.model))
    state = TabletopWorld().reset(make_task("sort", 1000))
    answer, reused, before = first_decision(warmed, "sort", 1000, state)
    assert reused == before - 1 and first_decision(cold, "sort", 1000, state)[:2] == (answer, 0)
