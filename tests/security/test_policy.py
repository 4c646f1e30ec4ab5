"""The SROS2 policy as grants, and the real graph's policy: who may move the arm, send subgoals, stop it."""

from __future__ import annotations

from pathlib import Path

import pytest

from hgpo.security import REPO_POLICY
from ros_nodes.launcher.cli import resolve_launch_file
from ros_nodes.launcher.errors import LaunchError
from ros_nodes.launcher.parse import parse_launch_file
from ros_nodes.security.dds_names import reply, request, topic
from ros_nodes.security.errors import SecurityError
from ros_nodes.security.policy import read_policy

POLICY = read_policy(REPO_POLICY)
pytestmark = pytest.mark.usefixtures("ament_prefix")
OPERATOR = "/hgpo/operator"
OBSERVERS = {"/hgpo/recorder", "/hgpo/viewer"}  # record:=true and view:=true: they read, never write


def write_policy(tmp_path: Path, profile: str, enclave: str = "/a/talker") -> Path:
    path = tmp_path / "policy.xml"
    path.write_text(
        f'<policy version="0.2.0"><enclaves><enclave path="{enclave}"><profiles>'
        f'<profile ns="/a" node="talker">{profile}</profile></profiles></enclave></enclaves></policy>'
    )
    return path


def test_names_resolve_as_ros_resolves_them_into_dds_topics(tmp_path: Path) -> None:
    grants = read_policy(
        write_policy(
            tmp_path,
            '<topics publish="ALLOW" subscribe="ALLOW"><topic>chatter</topic></topics>'
            '<topics subscribe="ALLOW"><topic>/clock</topic></topics>'
            '<services reply="ALLOW"><service>~/get_parameters</service></services>'
            '<services request="ALLOW"><service>/b/add</service></services>'
            '<actions call="ALLOW"><action>fib</action></actions>',
        )
    )["/a/talker"]
    assert grants.publish == {
        "rt/a/chatter",
        "rr/a/talker/get_parametersReply",
        "rq/b/addRequest",
        "rq/a/fib/_action/send_goalRequest",
        "rq/a/fib/_action/cancel_goalRequest",
        "rq/a/fib/_action/get_resultRequest",
    }
    assert grants.subscribe == {
        "rt/a/chatter",
        "rt/clock",
        "rq/a/talker/get_parametersRequest",
        "rr/b/addReply",
        "rr/a/fib/_action/send_goalReply",
        "rr/a/fib/_action/cancel_goalReply",
        "rr/a/fib/_action/get_resultReply",
        "rt/a/fib/_action/feedback",
        "rt/a/fib/_action/status",
    }


@pytest.mark.parametrize(
    ("profile", "enclave", "expected"),
    [
        ('<topics publish="DENY"><topic>x</topic></topics>', "/a/talker", "list only what is allowed"),
        ('<topics publish="ALLOW"><topic>a b</topic></topics>', "/a/talker", "is not a ROS name"),
        ('<topics publish="ALLOW"><topic>/*</topic></topics>', "/a/talker", "exact names"),
        ("", "talker", "not a valid absolute ROS namespace"),
        ('<topic publish="ALLOW"/>', "/a/talker", "not valid against policy.xsd"),
    ],
)
def test_bad_policies_are_refused_with_the_reason(
    tmp_path: Path, profile: str, enclave: str, expected: str
) -> None:
    with pytest.raises(SecurityError, match=expected):
        read_policy(write_policy(tmp_path, profile, enclave))


def test_wrong_version_and_missing_file(tmp_path: Path) -> None:
    path = write_policy(tmp_path, "")
    path.write_text(path.read_text().replace("0.2.0", "0.1.0"))
    with pytest.raises(SecurityError, match="reads version 0.2.0"):
        read_policy(path)
    with pytest.raises(SecurityError, match="cannot read"):
        read_policy(tmp_path / "none.xml")


def writers(name: str) -> set[str]:
    return {enclave for enclave, grants in POLICY.items() if name in grants.publish}


def readers(name: str) -> set[str]:
    return {enclave for enclave, grants in POLICY.items() if name in grants.subscribe}


def test_only_the_controller_moves_the_arm_through_the_bridge() -> None:
    for name in ("/hgpo/cmd_twist", "/hgpo/gripper_cmd"):
        assert writers(topic(name)) == {"/hgpo/controller"}
        assert readers(topic(name)) - OBSERVERS == {"/hgpo/arm_bridge"}
    hardware = ("/servo_node/delta_twist_cmds", "/forward_velocity_controller/commands", "/gripper/width_cmd")
    for name in hardware:
        assert writers(topic(name)) == {"/hgpo/arm_bridge"}


def test_only_the_planner_sends_subgoals_and_resets_the_scene() -> None:
    for service in ("send_goal", "cancel_goal", "get_result"):
        assert writers(request(f"/hgpo/execute_subgoal/_action/{service}")) == {"/hgpo/planner"}
        assert writers(reply(f"/hgpo/execute_subgoal/_action/{service}")) == {"/hgpo/controller"}
    assert writers(request("/hgpo/reset_scene")) == {"/hgpo/planner"}
    assert writers(request("/hgpo/run_task/_action/send_goal")) == {"/hgpo/run_task"}


def test_only_the_operator_presses_or_releases_the_estop_and_only_the_bridge_reads_it() -> None:
    assert writers(topic("/hgpo/estop")) == {OPERATOR}
    assert readers(topic("/hgpo/estop")) - OBSERVERS == {"/hgpo/arm_bridge"}
    assert writers(request("/hgpo/reset_estop")) == {OPERATOR}
    assert writers(reply("/hgpo/reset_estop")) == {"/hgpo/arm_bridge"}
    assert writers(topic("/hgpo/estop_state")) == {"/hgpo/arm_bridge"}
    operator = POLICY[OPERATOR]
    own = {name for name in operator.publish | operator.subscribe if f"{OPERATOR}/" in name}
    assert operator.publish - own == {
        topic("/hgpo/estop"),
        request("/hgpo/reset_estop"),
        "rt/rosout",
        "rt/parameter_events",
    }


def own_basics(enclave: str) -> set[str]:
    """What every node of the enclave writes on its own: its log, parameter events and parameter replies."""
    name = f"{enclave}/"
    return {"rt/rosout", "rt/parameter_events"} | {
        t for t in POLICY[enclave].publish if t.startswith(f"rr{name}")
    }


def test_the_recorder_reads_every_hgpo_topic_of_the_graph_and_the_viewer_what_it_draws() -> None:
    published = {
        name
        for enclave, grants in POLICY.items()
        if enclave not in OBSERVERS
        for name in grants.publish
        if name.startswith("rt/hgpo/")
    }
    recorder, viewer = POLICY["/hgpo/recorder"], POLICY["/hgpo/viewer"]
    assert {t for t in recorder.subscribe if t.startswith("rt/")} == published
    drawn = {
        "scene_state",
        "subgoal",
        "subgoal_status",
        "instruction",
        "cmd_twist",
        "run_task/_action/feedback",
    }
    assert {t for t in viewer.subscribe if t.startswith("rt/")} == {
        *(topic(f"/hgpo/{name}") for name in drawn),
        topic("/joint_states"),  # the arm driver's (fake_arm's), remapped in real.launch.xml
    }
    for observer in OBSERVERS:  # no subgoal, command, e-stop, request or reply of anyone else's
        assert POLICY[observer].publish == own_basics(observer), observer


def real_graph(**args: str) -> list:
    """The nodes `hgpo launch real --print` shows with these arguments."""
    return parse_launch_file(resolve_launch_file("real"), {"use_fake_hardware": "true", **args})


def test_there_is_an_enclave_per_node_of_the_real_graph_and_one_for_the_operator() -> None:
    nodes = real_graph(record="true", view="true")
    enclaves = {}
    for node in nodes:
        flag = node.ros_args.index("--enclave")
        enclaves[node.name] = node.ros_args[flag + 1]
    assert set(POLICY) == {*enclaves.values(), OPERATOR}
    for node in nodes:  # each enclave's profile is made out to the node that uses it
        namespace = node.namespace or "/"
        expected = f"{namespace.rstrip('/')}/{node.name}/get_parameters"
        assert request(expected) in POLICY[enclaves[node.name]].subscribe, node.name


def test_security_true_sets_sros2s_environment_and_needs_a_keystore(tmp_path: Path) -> None:
    plain = real_graph()
    assert all(dict(node.env) == {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"} for node in plain)
    secured = real_graph(security="true", keystore=str(tmp_path), record="true", view="true")
    assert {"recorder", "viewer"} <= {node.name for node in secured}
    for node in secured:
        assert dict(node.env) == {
            "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
            "ROS_SECURITY_ENABLE": "true",
            "ROS_SECURITY_STRATEGY": "Enforce",
            "ROS_SECURITY_KEYSTORE": str(tmp_path),
        }
        assert node.command()[1:4] == ["--ros-args", "--enclave", f"/hgpo/{node.name}"]
    with pytest.raises(LaunchError, match="launch argument 'keystore'.*pass keystore:=VALUE"):
        real_graph(security="true")
