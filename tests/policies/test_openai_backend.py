"""The OpenAI-compatible HTTP backend against a local server started by the test (`tests/fake_llm_api.py`),
which answers like the API, including with garbage, errors and silence on purpose."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from policies.planning import LLMConfig, PlannerError, PlanningContext, StepRecord, run_closed_loop
from policies.planning.backends import ModelError
from policies.worlds import make_planner
from sim.tabletop import Subgoal, TabletopWorld, make_task
from tests.fake_llm_api import MODEL, FakeAPI, send_json, serve_fake_api


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with serve_fake_api() as state:
        yield state


def _config(api: FakeAPI, **overrides: object) -> LLMConfig:
    values = {"backend": "openai", "model": MODEL, "base_url": api.url, "timeout_s": 2.0, "max_retries": 1}
    return LLMConfig.from_mapping({**values, **overrides})


@pytest.fixture(scope="module")
def world() -> TabletopWorld:
    return TabletopWorld()


def _context(world: TabletopWorld) -> PlanningContext:
    task = make_task("stack", 0)
    return PlanningContext(task.instruction, world.reset(task), ())


def test_answer_is_parsed_and_key_is_sent(api: FakeAPI, world: TabletopWorld, monkeypatch) -> None:
    monkeypatch.setenv("HGPO_TEST_KEY", "sekrit")
    api.replies = ["  pick(blue_block)\n"]
    planner = make_planner("llm", _config(api, api_key_env="HGPO_TEST_KEY"))
    assert planner.next_subgoal(_context(world)) == Subgoal("pick", ("blue_block",))
    request = api.requests[0]
    assert request["auth"] == "Bearer sekrit" and request["body"]["model"] == MODEL
    assert request["body"]["messages"][0]["role"] == "system"
    assert "stack the blue block" in request["body"]["messages"][1]["content"]


def test_unknown_object_is_reasked_with_the_reason(api: FakeAPI, world: TabletopWorld) -> None:
    api.replies = ["pick(purple_block)", "pick(blue_block)"]
    planner = make_planner("llm", _config(api))
    assert planner.next_subgoal(_context(world)) == Subgoal("pick", ("blue_block",))
    reask = api.requests[1]["body"]["messages"]
    assert reask[-2] == {"role": "assistant", "content": "pick(purple_block)"}
    assert "unknown object 'purple_block'; known objects:" in reask[-1]["content"]
    trace = planner.last_trace
    assert trace is not None and [a.valid for a in trace.attempts] == [False, True]


def test_walking_back_without_a_change_is_reasked_with_the_reason(api: FakeAPI) -> None:
    from policies.alfworld.domain import AlfworldView
    from tests.alfworld_history import AT_SHELF, ROOM, WALKED, history_of

    api.replies = ["go_to(bed 1)", "go_to(desk 1)"]
    planner = make_planner("llm", _config(api, domain="alfworld"))
    view = AlfworldView(ROOM, WALKED[-1][1], AT_SHELF)
    context = PlanningContext("put a candle in desk.", view, history_of(*WALKED))
    assert planner.next_subgoal(context) == Subgoal("go_to", ("desk 1",))
    reask = api.requests[1]["body"]["messages"][-1]["content"]
    assert "go_to(bed 1): you went there after your last change" in reask


def test_persistent_garbage_fails_the_step_clearly(api: FakeAPI, world: TabletopWorld) -> None:
    api.replies = ["¯\\_(ツ)_/¯", "pick(purple_block)", "I would rather not."]
    task = make_task("stack", 0)
    world.reset(task)
    planner = make_planner("llm", _config(api, max_reasks=2))
    outcome = run_closed_loop(
        planner, task.instruction, world.state, lambda sg: StepRecord(sg, True, ""), task
    )
    assert not outcome.success and outcome.subgoals_executed == 0
    assert "no valid subgoal in 3 answers" in outcome.message and "I would rather not." in outcome.message
    assert outcome.decisions[0].invalid_outputs == 3


def test_non_json_and_missing_content_are_clear(api: FakeAPI, world: TabletopWorld) -> None:
    api.replies = [
        lambda h: send_json(h, 200, b"<html>gateway</html>"),
        lambda h: send_json(h, 200, b'{"choices": []}'),
    ]
    planner = make_planner("llm", _config(api))
    for expected in ("not JSON", "without choices\\[0\\].message.content"):
        with pytest.raises(PlannerError, match=expected):
            planner.next_subgoal(_context(world))


def test_server_errors_are_retried(api: FakeAPI, world: TabletopWorld) -> None:
    api.replies = [lambda h: send_json(h, 503, b'{"error": "overloaded"}'), "pick(blue_block)"]
    planner = make_planner("llm", _config(api, max_retries=1))
    assert planner.next_subgoal(_context(world)) == Subgoal("pick", ("blue_block",))
    assert len(api.requests) == 2


def test_timeout_is_retried_then_fails(api: FakeAPI, world: TabletopWorld) -> None:
    def silent(handler: BaseHTTPRequestHandler) -> None:
        time.sleep(1.5)
        with contextlib.suppress(OSError):  # the client has hung up by now
            send_json(handler, 200, b"{}")

    api.replies = [silent, silent]
    planner = make_planner("llm", _config(api, timeout_s=0.3, max_retries=1))
    with pytest.raises(PlannerError, match="no answer from .* within 0.3 s \\(after 2 tries\\)"):
        planner.next_subgoal(_context(world))


def test_auth_error_is_not_retried(api: FakeAPI, world: TabletopWorld) -> None:
    api.replies = [lambda h: send_json(h, 401, b'{"error": "bad key"}')]
    planner = make_planner("llm", _config(api, max_retries=3))
    with pytest.raises(PlannerError, match="HTTP 401 .*\\(check the key in \\$OPENAI_API_KEY\\)"):
        planner.next_subgoal(_context(world))
    assert len(api.requests) == 1


def test_endpoint_down_fails_at_start_up() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = LLMConfig(backend="openai", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, timeout_s=1.0)
    with pytest.raises(ModelError, match="cannot reach .*/models.*after 2 tries.*is the server running"):
        make_planner("llm", config)


def test_unserved_model_fails_at_start_up(api: FakeAPI) -> None:
    with pytest.raises(ModelError, match="does not serve model 'gpt-9'; it serves: tiny-planner"):
        make_planner("llm", _config(api, model="gpt-9"))
    with pytest.raises(ModelError, match="must start with http"):
        make_planner("llm", _config(api, base_url="localhost:1234"))
