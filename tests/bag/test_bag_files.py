"""Recordings as files: definitions as rosbag2 embeds them, writing, and reading back closed and cut files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ros_nodes.bag.definitions import SEPARATOR, DefinitionError, field_types, message_definition
from ros_nodes.bag.info import bag_info
from ros_nodes.bag.reader import BagError, Ros2Decoder, open_bag
from ros_nodes.bag.writer import BagWriter, OfferedQos

rclpy_serialization = pytest.importorskip(
    "rclpy.serialization", reason="needs the venv built by `make setup`"
)
from hgpo_msgs.action import ExecuteSubgoal  # noqa: E402
from hgpo_msgs.msg import ObjectState, SceneState  # noqa: E402
from std_msgs.msg import Float64  # noqa: E402

from ros_nodes.message_types import message_class  # noqa: E402

SCENE = "hgpo_msgs/msg/SceneState"
FEEDBACK = "hgpo_msgs/action/ExecuteSubgoal_FeedbackMessage"


def test_field_types_reads_what_msg_files_say() -> None:
    text = """# a comment
std_msgs/Header header   # trailing comment
ObjectState[] objects
geometry_msgs/Pose[<=3] poses
float64[3] size
string<=10 name
uint8 ACTIVE=1
string GREETING="a # not a comment"
"""
    assert field_types(text) == ["std_msgs/Header", "ObjectState", "geometry_msgs/Pose"]


def test_definition_concatenates_dependencies_as_rosbag2_does() -> None:
    text = message_definition(SCENE)
    sections = text.split(SEPARATOR + "\n")
    names = [s.splitlines()[0] for s in sections[1:]]
    assert set(names) == {
        "MSG: std_msgs/msg/Header",
        "MSG: builtin_interfaces/msg/Time",
        "MSG: geometry_msgs/msg/Pose",
        "MSG: geometry_msgs/msg/Point",
        "MSG: geometry_msgs/msg/Quaternion",
        "MSG: hgpo_msgs/msg/ObjectState",
    }
    assert len(names) == len(set(names)), "each dependency once"


def test_unknown_type_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError, match="no definition of nope_msgs/msg/Thing under"):
        message_definition("nope_msgs/msg/Thing", [tmp_path])
    with pytest.raises(DefinitionError, match="not of the form"):
        message_definition("Thing")


def _scene(i: int) -> SceneState:
    msg = SceneState(gripper_width=0.01 * i)
    msg.header.stamp.sec, msg.header.frame_id = i, "world"
    msg.objects = [ObjectState(name=f"block_{i}", category="block", size=[0.1, 0.2, 0.3])]
    return msg


def _feedback(i: int) -> object:
    msg = ExecuteSubgoal.Impl.FeedbackMessage()
    msg.goal_id.uuid = list(range(16))
    msg.feedback.distance, msg.feedback.steps = 0.5 * i, i
    return msg


def _write(path: Path, n: int, flush_after: int | None = None) -> BagWriter:
    writer = BagWriter(path, chunk_size=10_000_000)
    for topic, type_name in (("/hgpo/scene_state", SCENE), ("/hgpo/x/_action/feedback", FEEDBACK)):
        writer.add_topic(topic, type_name, message_definition(type_name), [OfferedQos()])
    for i in range(n):
        writer.write("/hgpo/scene_state", rclpy_serialization.serialize_message(_scene(i)), 1000 + i, 900 + i)
        writer.write(
            "/hgpo/x/_action/feedback", rclpy_serialization.serialize_message(_feedback(i)), 1000 + i, i
        )
        if flush_after is not None and i + 1 == flush_after:
            writer.flush()
    return writer


def test_closed_file_decodes_with_mcap_ros2(tmp_path: Path) -> None:
    path = tmp_path / "run.mcap"
    _write(path, 20).close()
    bag, decoder = open_bag(path), Ros2Decoder()
    scenes, feedback = [], []
    for record in bag.messages():
        (scenes if record.topic == "/hgpo/scene_state" else feedback).append(decoder.decode(record))
    assert bag.complete and not bag.stopped_at
    assert [s.header.stamp.sec for s in scenes] == list(range(20))
    assert scenes[3].objects[0].name == "block_3" and list(scenes[3].objects[0].size) == [0.1, 0.2, 0.3]
    assert [f.feedback.steps for f in feedback] == list(range(20)) and list(feedback[0].goal_id.uuid) == list(
        range(16)
    )
    # The mcap package's own reader agrees (summary, indexes) and rclpy deserializes the same bytes. Its
    # decoder alone refuses rosidl's names of action parts (A_FeedbackMessage): Ros2Decoder renames them.
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    with path.open("rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        assert reader.get_header().profile == "ros2"
        summary = reader.get_summary()
        assert summary is not None and summary.statistics is not None
        assert summary.statistics.message_count == 40
        decoded = list(reader.iter_decoded_messages(topics=["/hgpo/scene_state"]))
    assert [m.decoded_message.header.stamp.sec for m in decoded] == list(range(20))
    raw = next(r for r in open_bag(path).messages() if r.topic == "/hgpo/scene_state")
    assert rclpy_serialization.deserialize_message(raw.data, message_class(raw.type_name)) == _scene(0)


def test_cut_file_keeps_every_flushed_chunk(tmp_path: Path) -> None:
    """What a SIGKILL leaves: the flushed chunks, then nothing or a partial record."""
    path, cut = tmp_path / "run.mcap", tmp_path / "cut.mcap"
    writer = _write(path, 30, flush_after=12)  # 18 more pairs wait in the unflushed chunk
    shutil.copy(path, cut)
    writer.close()
    bag = open_bag(cut)
    assert len(list(bag.messages())) == 24 and not bag.complete
    with cut.open("ab") as stream:  # a partly written record after the last chunk
        stream.write(path.read_bytes()[cut.stat().st_size : cut.stat().st_size + 100])
    info = bag_info(cut)
    assert info.messages == 24 and not info.complete and "ends inside a record" in info.stopped_at
    assert info.topics["/hgpo/scene_state"].count == 12


def test_info_counts_rates_and_duration(tmp_path: Path) -> None:
    path = tmp_path / "run.mcap"
    writer = BagWriter(path)
    writer.add_topic("/hgpo/f", "std_msgs/msg/Float64", message_definition("std_msgs/msg/Float64"), [])
    for i in range(101):  # 100 Hz for 1 s
        writer.write("/hgpo/f", rclpy_serialization.serialize_message(Float64(data=i)), i * 10_000_000, 0)
    writer.close()
    info = bag_info(path)
    assert info.complete and info.messages == 101 and info.duration_s == pytest.approx(1.0)
    assert info.topics["/hgpo/f"].rate_hz == pytest.approx(100.0)
    assert "/hgpo/f" in info.table() and info.as_json()["topics"]["/hgpo/f"]["count"] == 101


def test_not_a_recording_is_a_clear_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.mcap"
    junk.write_bytes(b"not an mcap file at all")
    with pytest.raises(BagError, match="not a readable MCAP file"):
        list(open_bag(junk).messages())
    with pytest.raises(BagError, match="no such file"):
        open_bag(tmp_path / "missing.mcap")


def test_writer_never_overwrites(tmp_path: Path) -> None:
    path = tmp_path / "run.mcap"
    BagWriter(path).close()
    with pytest.raises(FileExistsError):
        BagWriter(path)


def test_message_class_finds_action_parts() -> None:
    assert message_class(FEEDBACK) is ExecuteSubgoal.Impl.FeedbackMessage
    assert message_class("std_msgs/msg/Float64") is Float64
    with pytest.raises(ValueError, match="not installed"):
        message_class("nope_msgs/msg/Thing")
