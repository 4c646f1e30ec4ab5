"""In-process runs recorded as the graph records them (`hgpo run-task|eval-planner --record`): the graph's
topics and types, every message decoded by the mcap ROS 2 decoder and by rclpy, counts equal to what the
loop did, and a file closed however the run ends. Scripted planner and skills: the recording does not
depend on who decides."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import numpy as np
import pytest

from policies.control import ExpertSkillPolicy, SkillPolicy, make_skill_policy
from policies.evaluation import EpisodeResult, run_episode
from policies.worlds import make_planner
from ros_nodes.bag.info import bag_info
from ros_nodes.bag.reader import Ros2Decoder, open_bag
from sim.tabletop import SceneState, Subgoal, TabletopWorld, WorldConfig, make_task
from tests.fake_llm_api import MODEL, serve_fake_api
from tests.processes import Captured

rclpy_serialization = pytest.importorskip(
    "rclpy.serialization", reason="needs the venv built by `make setup`"
)
from action_msgs.msg import GoalStatus  # noqa: E402
from hgpo_msgs.msg import SubgoalStatus  # noqa: E402

from ros_nodes.bag.episode import TOPICS, EpisodeRecorder, EpisodeRecording  # noqa: E402
from ros_nodes.message_types import message_class  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
HOLD = 4  # world steps per control tick: 100 Hz physics, 25 Hz controller, as in the graph


def _run(path: Path, policy: SkillPolicy | None = None) -> EpisodeResult:
    world = TabletopWorld(WorldConfig(control_dt=0.01))
    with world, EpisodeRecording(path) as recording:
        return run_episode(
            world,
            make_task("pick_place", 1),
            make_planner("expert"),
            policy or make_skill_policy("expert"),
            action_hold=HOLD,
            watch=recording,
        )


def _read(path: Path) -> tuple[Counter[str], dict[str, list], list[int]]:
    """Counts per topic, every message decoded (mcap_ros2), log times in file order; each message is also
    deserialized by rclpy from the recorded bytes and must equal the decoder's reading of them."""
    counts: Counter[str] = Counter()
    decoded: dict[str, list] = {}
    times = []
    decoder = Ros2Decoder()
    for record in open_bag(path).messages():
        counts[record.topic] += 1
        message = decoder.decode(record)
        decoded.setdefault(record.topic, []).append(message)
        times.append(record.log_time_ns)
        ros = rclpy_serialization.deserialize_message(record.data, message_class(record.type_name))
        assert type(ros).__name__.replace("_", "") == type(message).__name__.replace("_", "")
    return counts, decoded, times


def test_a_recorded_episode_holds_what_the_loop_did_on_the_graphs_topics(tmp_path: Path) -> None:
    path = tmp_path / "run.mcap"
    result = _run(path)
    assert result.success
    subgoals, ticks = len(result.subgoals), result.steps // HOLD
    counts, decoded, times = _read(path)
    assert counts == {
        "/hgpo/instruction": 1,
        "/hgpo/subgoal": subgoals,
        "/hgpo/run_task/_action/feedback": 2 * subgoals,  # planned, then succeeded or failed
        "/hgpo/run_task/_action/status": 2,  # executing, then the outcome
        "/hgpo/subgoal_status": 2 * subgoals,  # active, then the outcome
        "/hgpo/execute_subgoal/_action/feedback": ticks,
        "/hgpo/cmd_twist": ticks + subgoals,  # a zero twist when each subgoal ends
        "/hgpo/gripper_cmd": ticks,
        "/hgpo/scene_state": result.steps + 1,  # after the reset and after every world step
        "/hgpo/joint_states": result.steps + 1,
    }
    assert set(counts) == {f"/hgpo/{topic}" for topic in TOPICS}
    assert times == sorted(times), "simulated time only moves forward"

    assert decoded["/hgpo/instruction"][0].data == result.instruction
    planned = [f for f in decoded["/hgpo/run_task/_action/feedback"] if f.feedback.status == "planned"]
    assert [f.feedback.subgoal for f in planned] == [str(s.subgoal) for s in result.subgoals]
    assert [f.feedback.subgoal for f in planned] == [d.subgoal for d in result.decisions if d.subgoal]
    assert [m.text for m in decoded["/hgpo/subgoal"]] == [str(s.subgoal) for s in result.subgoals]
    assert [s.state for s in decoded["/hgpo/subgoal_status"]] == [
        SubgoalStatus.ACTIVE,
        SubgoalStatus.SUCCEEDED,
    ] * subgoals
    statuses = [m.status_list[0].status for m in decoded["/hgpo/run_task/_action/status"]]
    assert statuses == [GoalStatus.STATUS_EXECUTING, GoalStatus.STATUS_SUCCEEDED]
    last = decoded["/hgpo/scene_state"][-1]
    assert {o.name for o in last.objects} >= {"green_block", "right_plate"}

    info = bag_info(path)  # what `hgpo bag info` prints: the graph's rates, on simulated time
    assert info.complete and info.messages == sum(counts.values())
    assert info.duration_s == pytest.approx(result.sim_time, abs=0.02)
    assert info.topics["/hgpo/scene_state"].rate_hz == pytest.approx(100.0, rel=0.01)
    assert info.topics["/hgpo/gripper_cmd"].rate_hz == pytest.approx(25.0, rel=0.05)

    from mcap.reader import make_reader  # the mcap package's own reader agrees: profile, schemas, QoS

    with path.open("rb") as stream:
        reader = make_reader(stream)
        summary = reader.get_summary()
        assert reader.get_header().profile == "ros2" and summary is not None
        channels = {c.topic: c for c in summary.channels.values()}
        schemas = {s.id: s for s in summary.schemas.values()}
    for topic, (type_name, _qos) in TOPICS.items():
        channel = channels[f"/hgpo/{topic}"]
        assert channel.message_encoding == "cdr" and schemas[channel.schema_id].name == type_name
        assert schemas[channel.schema_id].encoding == "ros2msg"
    assert "transient_local" in channels["/hgpo/instruction"].metadata["offered_qos_profiles"]


class _Interrupted(KeyboardInterrupt):
    pass


class _StopsMidway(ExpertSkillPolicy):
    """The expert skills, until the run is interrupted (as Ctrl-C would) on its 30th control tick."""

    ticks = 0

    def act(self, subgoal: Subgoal, state: SceneState) -> np.ndarray:
        self.ticks += 1
        if self.ticks == 30:
            raise _Interrupted
        return super().act(subgoal, state)


def test_an_interrupted_episode_leaves_a_closed_readable_recording(tmp_path: Path) -> None:
    path = tmp_path / "cut.mcap"
    with pytest.raises(_Interrupted):
        _run(path, policy=_StopsMidway())
    counts, _decoded, _times = _read(path)
    info = bag_info(path)
    assert info.complete, "the footer was written on the way out"
    assert counts["/hgpo/gripper_cmd"] == 29 and counts["/hgpo/instruction"] == 1
    assert "/hgpo/run_task/_action/status" in counts  # executing; no outcome: it had none


def _hgpo(*args: str) -> list[str]:
    return [sys.executable, "-m", "hgpo.cli", *args]


def test_run_task_record_writes_what_hgpo_bag_info_reads_without_rclpy(tmp_path: Path) -> None:
    path = tmp_path / "reach.mcap"
    code = (
        "import sys; from hgpo.run_task import main; "
        f"rc = main(['--task', 'reach', '--seed', '3', '--planner', 'expert', '--skills', 'expert', "
        f"'--record', {str(path)!r}]); "
        "assert not [m for m in sys.modules if m.startswith('rclpy')], 'rclpy imported'; sys.exit(rc)"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"recording: {sum(_read(path)[0].values())} messages on 10 topics" in run.stdout
    info = subprocess.run(
        _hgpo("bag", "info", str(path), "--json", str(tmp_path / "info.json")),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert info.returncode == 0 and "(closed)" in info.stdout and "/hgpo/scene_state" in info.stdout
    assert json.loads((tmp_path / "info.json").read_text())["topics"]["/hgpo/subgoal"]["count"] == 1
    again = subprocess.run(
        _hgpo("run-task", "--record", str(path)), cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 2 and "the file exists" in again.stderr


def test_ctrl_c_in_run_task_closes_the_recording(tmp_path: Path) -> None:
    """Ctrl-C while the planner waits for its second answer: an LLM endpoint that answers the first decision
    and holds the second back until the run was interrupted, so the task cannot end before the signal."""
    path = tmp_path / "sort.mcap"
    released = threading.Event()

    def held_back(handler: BaseHTTPRequestHandler) -> None:
        released.wait(timeout=120)

    with serve_fake_api() as api:
        api.replies = ["pick(red_block)", held_back]
        llm = ("backend=openai", f"model={MODEL}", f"base_url={api.url}", "timeout_s=120", "max_retries=0")
        args = ["--task", "sort", "--planner", "llm", "--skills", "expert", "--record", str(path)]
        args += [item for setting in llm for item in ("--set", setting)]
        # unbuffered, as on a terminal: through a pipe the subgoal lines would come only when the task is over
        run = Captured(_hgpo("run-task", *args), cwd=REPO, env=dict(os.environ, PYTHONUNBUFFERED="1"))
        try:
            deadline = time.monotonic() + 120
            while not (len(api.requests) == 2 and any(" ok (" in line for line in run.lines)):
                assert run.proc.poll() is None and time.monotonic() < deadline, run.output
                time.sleep(0.01)
            assert run.stop(timeout=60) == 130, run.output  # SIGINT, as Ctrl-C sends it
        finally:
            released.set()
    assert "interrupted; the recording up to here is closed" in run.output
    info = bag_info(path)
    assert info.complete and info.topics["/hgpo/subgoal"].count == 1


def test_eval_planner_records_one_file_per_episode(tmp_path: Path) -> None:
    folder = tmp_path / "bags"
    args = ("eval-planner", "--planner", "expert", "--skills", "expert", "--task", "reach", "--episodes", "2")
    run = subprocess.run(
        _hgpo(*args, "--record", str(folder), "--run-dir", str(tmp_path / "run")),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    episodes = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    assert sorted(p.name for p in folder.iterdir()) == ["reach-seed0.mcap", "reach-seed1.mcap"]
    for episode in episodes:
        counts, decoded, _times = _read(EpisodeRecorder(folder).path("reach", episode["seed"]))
        assert counts["/hgpo/scene_state"] == episode["steps"] + 1
        assert decoded["/hgpo/instruction"][0].data == episode["instruction"]
    again = subprocess.run(_hgpo(*args, "--record", str(folder)), cwd=REPO, capture_output=True, text=True)
    assert again.returncode == 2 and "reach-seed0.mcap and 1 more exist" in again.stderr
