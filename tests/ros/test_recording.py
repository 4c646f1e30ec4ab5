"""The recorder over real DDS: counts equal to what was published, Ctrl-C and SIGKILL, a recorded sim run,
and `hgpo bag replay` delivering the same messages in order."""

from __future__ import annotations

import signal
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from action_msgs.msg import GoalStatus
from hgpo_msgs.action import RunTask
from hgpo_msgs.msg import ObjectState, SceneState
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from rclpy.serialization import serialize_message
from std_msgs.msg import Float64

from ros_nodes.bag.definitions import message_definition
from ros_nodes.bag.info import TopicInfo, bag_info
from ros_nodes.bag.reader import Ros2Decoder, open_bag
from ros_nodes.bag.writer import BagWriter, OfferedQos
from ros_nodes.message_types import message_class
from tests.processes import Captured
from tests.ros.conftest import HGPO, REPO, Launched
from tests.ros.helpers import DISCOVERY_S, ActionCall, becomes_true, wait_until

TASK_TIMEOUT_S = 180.0
RECORDER_NAME = "recorder"


def recording(folder: Path) -> Path:
    found = sorted(folder.glob("*/recording.mcap"))
    assert len(found) == 1, f"one recording under {folder}: {found}"
    return found[0]


def recorded_by_recorder(node: Node, topic: str) -> bool:
    return any(info.node_name == RECORDER_NAME for info in node.get_subscriptions_info_by_topic(topic))


def wait_recorded(node: Node, topics: list[str]) -> None:
    for topic in topics:
        wait_until(lambda t=topic: recorded_by_recorder(node, t), DISCOVERY_S, f"the recorder on {topic}")


def scene(i: int) -> SceneState:
    msg = SceneState(gripper_width=float(i))
    msg.header.stamp.sec = i
    msg.objects = [ObjectState(name=f"block_{i}")]
    return msg


def publish_known(node: Node, namespace: str, n: int) -> None:
    """n Float64 and n SceneState messages on two topics the recorder already follows."""
    counter = node.create_publisher(Float64, f"/{namespace}/counter", 1000)  # the whole burst in history
    scenes = node.create_publisher(SceneState, f"/{namespace}/scene", 1000)
    wait_recorded(node, [f"/{namespace}/counter", f"/{namespace}/scene"])
    for i in range(n):
        counter.publish(Float64(data=float(i)))
        scenes.publish(scene(i))


def read_all(path: Path) -> tuple[dict[str, list], bool]:
    bag, decoder = open_bag(path), Ros2Decoder()
    decoded: dict[str, list] = defaultdict(list)
    for record in bag.messages():
        decoded[record.topic].append(decoder.decode(record))
    return decoded, bag.complete


def recorder_with_known_messages(
    start_node: Callable[..., Captured], test_node: Node, namespace: str, out: Path, n: int
) -> tuple[Captured, Path]:
    """A recorder under /namespace that has flushed 2n messages the test published (within 1 s, its flush
    period, while it runs)."""
    recorder = start_node(RECORDER_NAME, namespace, f"output_dir:={out}", f"prefix:=/{namespace}")
    wait_until(lambda: f"recording topics under /{namespace}" in recorder.output, DISCOVERY_S, "the recorder")
    publish_known(test_node, namespace, n)
    path = recording(out)
    wait_until(lambda: bag_info(path).messages == 2 * n, DISCOVERY_S, f"{2 * n} messages flushed to the file")
    return recorder, path


def test_ctrl_c_closes_a_recording_with_every_message(start_node, test_node, tmp_path: Path) -> None:
    recorder, path = recorder_with_known_messages(start_node, test_node, "rec_int", tmp_path, 300)
    assert recorder.stop(timeout=20) == 0, recorder.output
    decoded, complete = read_all(path)
    assert complete, recorder.output
    assert [m.data for m in decoded["/rec_int/counter"]] == [float(i) for i in range(300)]
    assert [m.header.stamp.sec for m in decoded["/rec_int/scene"]] == list(range(300))
    assert decoded["/rec_int/scene"][7].objects[0].name == "block_7"
    assert "600 messages on 2 topics" in recorder.output


def test_sigkill_leaves_a_readable_recording(start_node, test_node, tmp_path: Path) -> None:
    # Everything published reaches the file within a flush period (1 s) while the recorder runs ...
    recorder, path = recorder_with_known_messages(start_node, test_node, "rec_kill", tmp_path, 200)
    recorder.proc.send_signal(signal.SIGKILL)
    assert recorder.wait(timeout=20) == -signal.SIGKILL
    # ... and is still there after a SIGKILL: the file has no footer, every complete chunk reads.
    decoded, complete = read_all(path)
    assert not complete
    assert [m.data for m in decoded["/rec_kill/counter"]] == [float(i) for i in range(200)]
    info = Captured([*HGPO, "bag", "info", str(path)], REPO)
    assert info.wait(timeout=60) == 0, info.output
    assert "not closed" in info.output and "/rec_kill/counter" in info.output


@pytest.fixture
def recorded_graph(ros_env: dict[str, str], tmp_path: Path) -> Iterator[Launched]:
    """The sim graph with record:=true in the test node's domain, driven over DDS by the test."""
    args = ["sim", "run_task:=false", "planner:=expert", "record:=true", f"record_dir:={tmp_path}"]
    launched = Launched(args, ros_env)
    yield launched
    launched.stop(timeout=30)


def recorded_in(path: Path, topics: list[str]) -> dict[str, list[bytes]]:
    """The cdr bytes on each topic in a recording, read up to its last flushed chunk if it is still open."""
    recorded: dict[str, list[bytes]] = {topic: [] for topic in topics}
    for record in open_bag(path).messages():
        if record.topic in recorded:
            recorded[record.topic].append(record.data)
    return recorded


def run_pick_place(test_node: Node, seed: int, launched: Launched) -> None:
    call = ActionCall(
        test_node, RunTask, "/hgpo/run_task", RunTask.Goal(task="pick_place", reset=True, seed=seed)
    )
    status, result = call.result(TASK_TIMEOUT_S)
    assert status == GoalStatus.STATUS_SUCCEEDED, (result.message, launched.output)


def test_recorded_sim_run_holds_what_the_nodes_published(recorded_graph, test_node, tmp_path: Path) -> None:
    """A whole sim run with record:=true: every message decodes, and once DDS has matched the recorder with
    every publisher, the recording holds exactly what a listener heard on the event topics, and all of it on
    the others.

    Discovery between two participants is not ordered across a third, so a subscription made before another's
    does not match a publisher first: a first task proves the recorder matched (it recorded on every event
    topic), and the second task is compared."""
    launched = recorded_graph
    events = [
        "/hgpo/subgoal",
        "/hgpo/subgoal_status",
        "/hgpo/run_task/_action/feedback",
        "/hgpo/run_task/_action/status",
        "/hgpo/execute_subgoal/_action/feedback",
        "/hgpo/execute_subgoal/_action/status",
    ]
    continuous = ["/hgpo/scene_state", "/hgpo/joint_states", "/hgpo/cmd_twist", "/hgpo/gripper_cmd"]
    wait_recorded(test_node, events + continuous)
    run_pick_place(test_node, 4, launched)
    path = recording(tmp_path)
    wait_until(
        lambda: all(bag_info(path).topics.get(t, TopicInfo("")).count > 0 for t in events),
        DISCOVERY_S,
        "the first task's messages on every event topic in the file",
    )
    heard: dict[str, list[bytes]] = defaultdict(list)
    types = dict(test_node.get_topic_names_and_types())
    subscriptions = []
    for topic in events + continuous:
        latched = topic.endswith("/_action/status")  # as the recorder subscribes to it
        qos = QoSProfile(
            depth=1000, durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE
        )
        subscriptions.append(
            test_node.create_subscription(
                message_class(types[topic][0]), topic, heard[topic].append, qos, raw=True
            )
        )
    for topic, subscription in zip(events + continuous, subscriptions, strict=True):
        wait_until(lambda s=subscription: s.get_publisher_count() > 0, DISCOVERY_S, f"a publisher on {topic}")
    statuses_before = len(heard["/hgpo/run_task/_action/status"])  # the latched status of the first task
    run_pick_place(test_node, 5, launched)
    wait_until(
        lambda: len(heard["/hgpo/run_task/_action/status"]) >= statuses_before + 3,
        DISCOVERY_S,
        "the second task's last status",
    )
    for subscription in subscriptions:
        test_node.destroy_subscription(subscription)
    # The recorder hears each message when the test does or later (a busy recorder is behind on its queue);
    # stopping it now could end it before it took the last ones, so wait for them in the file (1 s flushes).
    wait_until(
        lambda: all(tail[-1:] == heard[t][-1:] for t, tail in recorded_in(path, events).items()),
        DISCOVERY_S,
        "the second task's last message on every event topic in the file",
    )
    assert launched.stop(timeout=30) == 0, launched.output
    assert str(path.resolve()) in launched.output, "the launch log names the recording"

    bag, decoder = open_bag(path), Ros2Decoder()
    recorded: dict[str, list[bytes]] = defaultdict(list)
    for record in bag.messages():
        decoder.decode(record)  # every message decodes with the embedded definitions
        recorded[record.topic].append(record.data)
    assert bag.complete
    for topic in events:
        assert heard[topic], f"nothing heard on {topic}"
        assert len(recorded[topic]) > len(heard[topic]), f"{topic}: the first task is recorded too"
        assert recorded[topic][-len(heard[topic]) :] == heard[topic], topic
    for topic in continuous:
        assert heard[topic] and set(heard[topic]) <= set(recorded[topic]), topic
    assert len(recorded["/hgpo/scene_state"]) >= len(heard["/hgpo/scene_state"]) > 100


def test_replay_delivers_the_same_messages_in_order(test_node, tmp_path: Path, ros_env) -> None:
    path = tmp_path / "run.mcap"
    writer = BagWriter(path)
    definition = message_definition("std_msgs/msg/Float64")
    writer.add_topic("/replayed/a", "std_msgs/msg/Float64", definition, [OfferedQos()])
    writer.add_topic(
        "/replayed/b",
        "hgpo_msgs/msg/SceneState",
        message_definition("hgpo_msgs/msg/SceneState"),
        [OfferedQos()],
    )
    for i in range(100):  # 100 Hz for 1 s
        writer.write("/replayed/a", serialize_message(Float64(data=float(i))), i * 10_000_000, 0)
        writer.write("/replayed/b", serialize_message(scene(i)), i * 10_000_000 + 1, 0)
    writer.close()
    received: list[tuple[str, float]] = []
    test_node.create_subscription(Float64, "/replayed/a", lambda m: received.append(("a", m.data)), 1000)
    test_node.create_subscription(
        SceneState, "/replayed/b", lambda m: received.append(("b", m.gripper_width)), 1000
    )
    replay = Captured(
        [*HGPO, "bag", "replay", str(path), "--rate", "2", "--wait-for-subscribers", "30", "--delay", "0.5"],
        REPO,
        ros_env,
    )
    assert replay.wait(timeout=60) == 0, replay.output
    assert "replayed 200 messages on 2 topics" in replay.output
    wall = float(replay.output.split(" in ")[1].split(" s")[0])
    assert 0.4 < wall < 5.0, replay.output  # ~0.5 s: the recorded 1 s at rate 2
    assert becomes_true(lambda: len(received) == 200, DISCOVERY_S), len(received)
    assert [v for name, v in received if name == "a"] == [float(i) for i in range(100)]
    assert [v for name, v in received if name == "b"] == [float(i) for i in range(100)]


@pytest.mark.parametrize("args", [["--topics", "/nope"], ["--rate", "0"]])
def test_replay_refuses_bad_input(tmp_path: Path, ros_env, args: list[str]) -> None:
    path = tmp_path / "run.mcap"
    writer = BagWriter(path)
    writer.add_topic("/a", "std_msgs/msg/Float64", message_definition("std_msgs/msg/Float64"), [])
    writer.write("/a", serialize_message(Float64(data=1.0)), 1, 0)
    writer.close()
    replay = Captured([*HGPO, "bag", "replay", str(path), *args], REPO, ros_env)
    assert replay.wait(timeout=60) == 2
    assert "no messages on /nope" in replay.output or "--rate must be positive" in replay.output
