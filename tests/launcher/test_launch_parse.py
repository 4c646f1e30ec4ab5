"""Launch file -> NodeSpec: each construct of the supported subset and each error, on small files."""

from __future__ import annotations

from pathlib import Path

import pytest
from launcher_testing import Demo

from ros_nodes.launcher.errors import LaunchError
from ros_nodes.launcher.parse import parse_cli_args, parse_launch_file
from ros_nodes.launcher.spec import NodeSpec, ParamFile, ParamValue


def nodes(
    demo: Demo, body: str, args: dict[str, str] | None = None, environ: dict[str, str] | None = None
) -> list[NodeSpec]:
    return parse_launch_file(demo.launch_file(body), args, environ or {})


def one(demo: Demo, body: str, args: dict[str, str] | None = None) -> NodeSpec:
    (node,) = nodes(demo, body, args)
    return node


def error(
    demo: Demo, body: str, args: dict[str, str] | None = None, environ: dict[str, str] | None = None
) -> str:
    with pytest.raises(LaunchError) as raised:
        nodes(demo, body, args, environ)
    return str(raised.value)


NODE = '<node pkg="demo_pkg" exec="demo_node" name="{name}"/>'


def names(specs: list[NodeSpec]) -> list[str | None]:
    return [spec.name for spec in specs]


def test_node_command_is_built_as_ros2_builds_it(demo: Demo) -> None:
    config = demo.write("a.yaml", "/**:\n  ros__parameters:\n    rate: 1.0\n")
    node = one(
        demo,
        f"""
      <node pkg="demo_pkg" exec="demo_node" name="talker" namespace="robot" output="screen"
            on_exit="shutdown">
        <param from="{config}"/>
        <param name="rate" value="2.5"/>
        <remap from="chatter" to="/hgpo/chatter"/>
        <param name="label" value="hello world"/>
      </node>""",
    )
    exe = demo.prefix / "lib" / "demo_pkg" / "demo_node"
    assert node == NodeSpec(
        package="demo_pkg",
        executable="demo_node",
        executable_path=exe,
        name="talker",
        namespace="/robot",
        params=(ParamFile(config), ParamValue("rate", "2.5"), ParamValue("label", "hello world")),
        remaps=(("chatter", "/hgpo/chatter"),),
        output="screen",
        on_exit_shutdown=True,
    )
    assert node.command() == [
        str(exe),
        "--ros-args",
        "-r",
        "__node:=talker",
        "-r",
        "__ns:=/robot",
        "--params-file",
        str(config),
        "-p",
        "rate:=2.5",
        "-p",
        "label:=hello world",
        "-r",
        "chatter:=/hgpo/chatter",
    ]


def test_bare_node_keeps_its_own_name_and_ros2_defaults(demo: Demo) -> None:
    node = one(demo, '<node pkg="demo_pkg" exec="demo_node"/>')
    assert (node.name, node.namespace, node.output, node.on_exit_shutdown) == (None, None, "log", False)
    assert node.command() == [str(node.executable_path), "--ros-args"]


def test_empty_inline_value_is_passed_as_an_empty_string(demo: Demo) -> None:
    node = one(demo, '<node pkg="demo_pkg" exec="demo_node"><param name="text" value=""/></node>')
    assert node.command()[-2:] == ["-p", "text:=''"]


def test_args_defaults_command_line_and_substitution_in_every_node_attribute(demo: Demo) -> None:
    body = """
      <arg name="pkg" default="demo_pkg" description="package"/>
      <arg name="who" default="talker"/>
      <arg name="ns" default="$(var who)_ns"/>
      <node pkg="$(var pkg)" exec="demo_node" name="$(var who)" namespace="$(var ns)" output="$(var out)">
        <param name="$(var who)_rate" value="$(var who)"/>
        <remap from="$(var who)/in" to="$(var ns)/out"/>
      </node>
      <arg name="out" default="screen"/>"""
    with pytest.raises(LaunchError, match="out"):  # used before its <arg> ran, as in ROS 2
        nodes(demo, body)
    node = one(demo, body, {"who": "listener", "out": "both"})
    assert (node.name, node.namespace, node.output) == ("listener", "/listener_ns", "both")
    assert node.params == (ParamValue("listener_rate", "listener"),)
    assert node.remaps == (("listener/in", "listener_ns/out"),)


def test_missing_required_arg_is_named_with_its_description(demo: Demo) -> None:
    message = error(demo, '<arg name="robot_ip" description="address of the arm"/>')
    assert "robot_ip" in message and "address of the arm" in message and "robot_ip:=VALUE" in message
    assert "test.launch.xml:3" in message
    assert nodes(demo, '<arg name="robot_ip"/>', {"robot_ip": "10.0.0.2"}) == []


def test_unknown_command_line_arg_lists_the_declared_ones(demo: Demo) -> None:
    body = """<arg name="seed" default="0" description="scene seed"/>
      <group if="false"><arg name="mode"/></group>"""
    message = error(demo, body, {"sede": "1"})
    assert "sede" in message and "seed:=0" in message and "scene seed" in message
    assert "mode:=<required>" in message  # a conditional <arg> is declared too, as ros2 launch lists it


def test_let_sets_and_overrides_and_arg_keeps_a_given_value(demo: Demo) -> None:
    body = """<arg name="who" default="a"/>
      <let name="who" value="$(var who)_b"/>
      <arg name="who" default="ignored"/>
      <arg name="prefix" default="p"/>
      <let name="$(var prefix)_x" value="c"/>
    """ + NODE.format(name="$(var who)_$(var p_x)")
    assert names(nodes(demo, body)) == ["a_b_c"]
    assert names(nodes(demo, body, {"who": "x"})) == ["x_b_c"]


def test_group_scopes_args_lets_and_namespace(demo: Demo) -> None:
    body = (
        """<let name="who" value="outer"/>
      <group>
        <push-ros-namespace namespace="hgpo"/>
        <let name="who" value="inner"/>
        <arg name="only_inside" default="x"/>
        """
        + NODE.format(name="$(var who)")
        + """
        <group>
          <push-ros-namespace namespace="arm/"/>
          <node pkg="demo_pkg" exec="demo_node" name="deep" namespace="left"/>
          <node pkg="demo_pkg" exec="demo_node" name="absolute" namespace="/top"/>
        </group>
      </group>
      """
        + NODE.format(name="$(var who)")
    )
    specs = nodes(demo, body)
    assert [(spec.name, spec.namespace) for spec in specs] == [
        ("inner", "/hgpo"),
        ("deep", "/hgpo/arm/left"),
        ("absolute", "/top"),
        ("outer", None),
    ]
    assert "only_inside" in error(demo, body + NODE.format(name="$(var only_inside)"))


def test_push_namespace_outside_a_group_applies_to_the_rest_of_the_file(demo: Demo) -> None:
    body = (
        NODE.format(name="before")
        + '<push-ros-namespace namespace="/"/>'
        + NODE.format(name="root")
        + '<push-ros-namespace namespace="hgpo"/>'
        + NODE.format(name="after")
    )
    assert [spec.namespace for spec in nodes(demo, body)] == [None, "/", "/hgpo"]


@pytest.mark.parametrize(
    ("value", "enabled"),
    [("true", True), ("1", True), ("True", True), ("false", False), ("0", False), ("FALSE", False)],
)
def test_if_and_unless_on_every_action(demo: Demo, value: str, enabled: bool) -> None:
    body = (
        f"""<arg name="c" default="{value}"/>
      <arg name="a" default="arg-off" if="$(var c)"/><arg name="a" default="arg-on"/>
      <let name="l" value="let-on" unless="$(var c)"/><let name="l" value="let-off" if="$(var c)"/>
      <push-ros-namespace namespace="ns" if="$(var c)"/>
      <node pkg="demo_pkg" exec="demo_node" name="n_if" if="$(var c)"/>
      <node pkg="demo_pkg" exec="demo_node" name="n_unless" unless="$(var c)"/>
      <group if="$(var c)">"""
        + NODE.format(name="g_if")
        + """</group>
      <group unless="$(var c)">"""
        + NODE.format(name="g_unless")
        + """</group>
      <node pkg="demo_pkg" exec="demo_node" name="report">
        <param name="a" value="$(var a)"/><param name="l" value="$(var l)"/>
      </node>"""
    )
    specs = nodes(demo, body)
    expected = ["n_if", "g_if"] if enabled else ["n_unless", "g_unless"]
    assert names(specs) == [*expected, "report"]
    assert specs[-1].params == (
        ParamValue("a", "arg-off" if enabled else "arg-on"),
        ParamValue("l", "let-off" if enabled else "let-on"),
    )
    assert specs[-1].namespace == ("/ns" if enabled else None)


def test_a_disabled_node_is_not_resolved(demo: Demo) -> None:
    assert nodes(demo, '<node pkg="no_such_pkg" exec="x" if="false"/>') == []


def test_condition_must_be_true_false_1_or_0(demo: Demo) -> None:
    message = error(demo, '<arg name="c" default="yes"/><group if="$(var c)"/>')
    assert "<group>" in message and "'yes'" in message and "true, false, 1 or 0" in message


def test_if_and_unless_together_are_rejected(demo: Demo) -> None:
    assert "either if or unless" in error(demo, '<group if="true" unless="false"/>')


def test_env_substitution_with_and_without_default(demo: Demo) -> None:
    body = """<node pkg="demo_pkg" exec="demo_node">
      <param name="who" value="$(env WHO)_$(env MISSING 'fall back')"/></node>"""
    assert nodes(demo, body, environ={"WHO": "me"})[0].params == (ParamValue("who", "me_fall back"),)
    message = error(demo, body, environ={})
    assert "WHO" in message and "$(env WHO VALUE)" in message


def test_set_env_reaches_the_nodes_after_it_and_is_scoped_by_group_as_in_ros2(demo: Demo) -> None:
    body = (
        NODE.format(name="before")
        + """<arg name="range" default="LOCALHOST"/>
      <set_env name="ROS_AUTOMATIC_DISCOVERY_RANGE" value="$(var range)"/>
      <group>
        <set_env name="ONLY_INSIDE" value="1"/>
        <set_env name="ROS_AUTOMATIC_DISCOVERY_RANGE" value="SUBNET"/>
        <set_env name="SEEN" value="$(env ONLY_INSIDE)"/>
        """
        + NODE.format(name="inside")
        + """
      </group>
      <set_env name="SKIPPED" value="1" if="false"/>
      """
        + NODE.format(name="after")
    )
    before, inside, after = nodes(demo, body)
    assert before.env == ()
    assert inside.env == (("ROS_AUTOMATIC_DISCOVERY_RANGE", "SUBNET"), ("ONLY_INSIDE", "1"), ("SEEN", "1"))
    assert after.env == (("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST"),)
    (after,) = nodes(demo, body, {"range": "SUBNET"})[2:]
    assert after.environment({"PATH": "/bin", "ROS_AUTOMATIC_DISCOVERY_RANGE": "OFF"}) == {
        "PATH": "/bin",
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET",
    }
    assert "not an environment variable name" in error(demo, '<set_env name="A=B" value="1"/>')
    assert "missing required attribute 'value'" in error(demo, '<set_env name="A"/>')


def test_ros_args_are_split_into_words_as_ros2_splits_a_command_line(demo: Demo) -> None:
    body = """<arg name="enclave" default="/hgpo/two words"/>
      <node pkg="demo_pkg" exec="demo_node" name="talker"
            ros_args="--enclave $(var enclave) --log-level 'talker:=debug'  -p x:=$(var enclave)/a"/>"""
    node = one(demo, body)
    assert node.ros_args == (
        "--enclave",
        "/hgpo/two words",
        "--log-level",
        "talker:=debug",
        "-p",
        "x:=/hgpo/two words/a",
    )
    exe = str(node.executable_path)
    assert node.command() == [exe, "--ros-args", *node.ros_args, "--ros-args", "-r", "__node:=talker"]
    assert "No closing quotation" in error(demo, '<node pkg="demo_pkg" exec="demo_node" ros_args="-e \'/a"/>')


def test_find_pkg_share_and_nested_substitutions(demo: Demo) -> None:
    demo.add_package("other_pkg")
    params = demo.add_package("demo_pkg") / "params.yaml"
    params.write_text("{}\n")
    body = """<arg name="pkg" default="demo_pkg"/>
      <node pkg="demo_pkg" exec="demo_node">
        <param from="$(find-pkg-share $(var pkg))/params.yaml"/>
        <param name="share" value="$(find-pkg-share other_pkg)"/>
        <param name="text" value="a \\$ sign, $(env NOPE '$(var pkg) ok')"/>
      </node>"""
    assert one(demo, body).params == (
        ParamFile(params),
        ParamValue("share", str(demo.prefix / "share" / "other_pkg")),
        ParamValue("text", "a $ sign, demo_pkg ok"),
    )


def test_undefined_var_lists_what_is_defined(demo: Demo) -> None:
    message = error(demo, '<arg name="seed" default="1"/>' + NODE.format(name="$(var sede)"))
    assert "sede" in message and "seed" in message and "<node>" in message


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("$(foo bar)", "unsupported substitution $(foo"),
        ("$(find-pkg-prefix demo_pkg)", "unsupported substitution"),
        ("$(var)", "$(var) expects $(var NAME), got 0"),
        ("$(var a b)", "got 2"),
        ("$(env A B C)", "got 3"),
        ("$(var a", "expected ')'"),
        ("cost $5", "must be escaped"),
        ("$(var  a)", "exactly one space"),
    ],
)
def test_bad_substitutions_are_reported_even_when_disabled(demo: Demo, value: str, expected: str) -> None:
    message = error(demo, f'<group if="false"><let name="x" value="{value}"/></group>')
    assert expected in message and "<let>" in message and "test.launch.xml:3" in message
    assert "supported: $(var NAME)" in message


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('<include file="other.launch.xml"/>', "<include>: element not supported"),
        ('<executable cmd="ls"/>', "<executable>: element not supported"),
        (
            '<group><set_parameter name="a" value="1"/></group>',
            "supported inside <group>: arg, let, set_env, group",
        ),
        (
            '<node pkg="demo_pkg" exec="demo_node"><env name="A" value="1"/></node>',
            "inside <node>: param, remap",
        ),
        ('<arg name="a" default="1"><param name="x" value="1"/></arg>', "<arg> takes no child elements"),
        (
            '<node pkg="demo_pkg" exec="demo_node">'
            '<param name="a"><param name="b" value="1"/></param></node>',
            "<param> takes no child elements",
        ),
    ],
)
def test_unsupported_elements_say_where_and_what_is_supported(demo: Demo, body: str, expected: str) -> None:
    message = error(demo, body)
    assert expected in message and "test.launch.xml:3" in message


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('<node pkg="demo_pkg" exec="demo_node" required="true"/>', "attribute 'required' is not supported"),
        ('<node pkg="demo_pkg" exec="demo_node" respawn="true"/>', "supported: pkg, exec, name, namespace"),
        ('<arg name="a" default="1" choices="1,2"/>', "attribute 'choices'"),
        ('<group scoped="false"/>', "attribute 'scoped'"),
        (
            '<node pkg="demo_pkg" exec="demo_node"><remap from="a" to="b" if="1"/></node>',
            "ros2 launch rejects",
        ),
        (
            '<node pkg="demo_pkg" exec="demo_node"><param from="a.yaml" unless="0"/></node>',
            "ros2 launch rejects",
        ),
        ('<node pkg="demo_pkg" exec="demo_node"><param name="a" value="1" type="str"/></node>', "'type'"),
    ],
)
def test_unsupported_attributes_are_rejected(demo: Demo, body: str, expected: str) -> None:
    assert expected in error(demo, body)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('<node pkg="demo_pkg"/>', "missing required attribute 'exec'"),
        ("<arg/>", "missing required attribute 'name'"),
        ('<let name="a"/>', "missing required attribute 'value'"),
        ("<push-ros-namespace/>", "missing required attribute 'namespace'"),
        ('<node pkg="demo_pkg" exec="demo_node"><remap from="a"/></node>', "missing required attribute 'to'"),
        ('<node pkg="demo_pkg" exec="demo_node"><param name="a"/></node>', "either from="),
        ('<node pkg="demo_pkg" exec="demo_node"><param from="a.yaml" name="a"/></node>', "either from="),
        (
            '<node pkg="demo_pkg" exec="demo_node" on_exit="restart"/>',
            'the only supported value is "shutdown"',
        ),
        ('<node pkg="demo_pkg" exec="demo_node" output="own_log"/>', "supported: screen, log, both"),
        ('<node pkg="demo_pkg" exec="demo_node" name="my-node"/>', "not a valid node name"),
        ('<node pkg="demo_pkg" exec="demo_node" namespace="1st"/>', "not a valid ROS namespace"),
        ('<push-ros-namespace namespace="a b"/>', "not a valid ROS namespace"),
    ],
)
def test_malformed_elements(demo: Demo, body: str, expected: str) -> None:
    assert expected in error(demo, body)


def test_missing_parameter_file_is_an_error(demo: Demo) -> None:
    message = error(demo, '<node pkg="demo_pkg" exec="demo_node"><param from="/nope/a.yaml"/></node>')
    assert "/nope/a.yaml does not exist" in message


def test_unknown_package_says_what_to_do(demo: Demo) -> None:
    message = error(demo, '<node pkg="no_such_pkg" exec="talker" name="t"/>')
    assert "package 'no_such_pkg' not found" in message and "make setup" in message
    message = error(demo, '<let name="a" value="$(find-pkg-share no_such_pkg)"/>')
    assert "<let>: value: package 'no_such_pkg' not found" in message


def test_unknown_or_unusable_executable_says_what_exists(demo: Demo) -> None:
    message = error(demo, '<node pkg="demo_pkg" exec="talker"/>')
    assert "executable 'talker' of package 'demo_pkg' not found" in message
    assert "executables there: demo_node" in message and "make setup" in message
    demo.add_executable("demo_pkg", "plain", "data", mode=0o644)
    assert "is not executable" in error(demo, '<node pkg="demo_pkg" exec="plain"/>')


def test_not_a_launch_file(demo: Demo) -> None:
    with pytest.raises(LaunchError, match="not well-formed XML"):
        parse_launch_file(demo.write("bad.launch.xml", "<launch><node></launch>"))
    with pytest.raises(LaunchError, match="root element must be <launch>"):
        parse_launch_file(demo.write("bad.launch.xml", "<launchfile/>"))
    with pytest.raises(LaunchError, match="cannot read launch file"):
        parse_launch_file(Path("/nope.launch.xml"))


def test_cli_args() -> None:
    assert parse_cli_args(["a:=1", "b:=x:=y", "c:=", "a:=2"]) == {"a": "2", "b": "x:=y", "c": ""}
    for bad in ("a=1", ":=1"):
        with pytest.raises(LaunchError, match="name:=value"):
            parse_cli_args([bad])
