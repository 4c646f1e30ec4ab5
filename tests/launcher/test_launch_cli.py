"""`hgpo launch`: target resolution, --print, --help, error reporting and exit codes."""

from __future__ import annotations

import os
import shlex
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from launcher_testing import REPO, Demo

from ros_nodes.launcher import cli

SIM = REPO / "launch" / "sim.launch.xml"
ONE_NODE = """<arg name="who" default="talker"/>
<node pkg="demo_pkg" exec="demo_node" name="$(var who)" output="screen"/>"""


def test_print_shows_each_resolved_command_and_starts_nothing(
    demo: Demo, capsys: pytest.CaptureFixture[str]
) -> None:
    path = demo.launch_file(ONE_NODE)
    assert cli.main([str(path), "--print", "who:=listener"]) == 0
    out = capsys.readouterr().out
    exe = demo.prefix / "lib" / "demo_pkg" / "demo_node"
    assert shlex.join([str(exe), "--ros-args", "-r", "__node:=listener"]) in out.splitlines()
    assert "# listener (output=screen)" in out
    assert not any(demo.pids.iterdir())


def test_show_args_lists_arguments_with_defaults_and_descriptions(
    demo: Demo, capsys: pytest.CaptureFixture[str]
) -> None:
    path = demo.launch_file('<arg name="who" default="talker" description="node name"/><arg name="rate"/>')
    assert cli.main([str(path), "-s"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["who:=talker", "node", "name"]
    assert lines[2].split() == ["rate:=<required>"]
    assert not any(demo.pids.iterdir())


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "name:=value" in out and "--print" in out and "NAME, e.g. sim" in out


def test_short_name_resolves_in_the_package_share(demo: Demo, capsys: pytest.CaptureFixture[str]) -> None:
    launch = demo.add_package("hgpo") / "launch"
    launch.mkdir()
    (launch / "real.launch.xml").write_text(f"<launch>{ONE_NODE}</launch>")
    assert cli.main(["real", "--print"]) == 0
    assert f"# {launch / 'real.launch.xml'}: 1 node(s)" in capsys.readouterr().out


def test_short_name_falls_back_to_the_checkout(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "launch").mkdir()
    (tmp_path / "launch" / "alfworld.launch.xml").write_text(f"<launch>{ONE_NODE}</launch>")
    monkeypatch.setattr(cli, "REPO_ROOT", tmp_path)
    assert cli.main(["alfworld", "--print"]) == 0
    assert f"# {tmp_path / 'launch' / 'alfworld.launch.xml'}" in capsys.readouterr().out


def test_errors_exit_2_with_a_message_and_no_traceback(
    demo: Demo, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["nosuch"]) == 2
    assert "no launch file named 'nosuch': tried" in capsys.readouterr().err
    assert cli.main([str(demo.prefix / "missing.launch.xml")]) == 2
    assert "does not exist" in capsys.readouterr().err
    path = demo.launch_file('<arg name="robot_ip"/>')
    assert cli.main([str(path)]) == 2
    assert "hgpo launch: error:" in (err := capsys.readouterr().err) and "robot_ip:=VALUE" in err
    assert cli.main([str(path), "robot_ip"]) == 2
    assert "name:=value" in capsys.readouterr().err
    assert cli.main([]) == 2  # argparse's usage error


def test_runs_the_launch_and_returns_its_exit_code(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROS_LOG_DIR", str(tmp_path / "ros_log"))
    path = demo.launch_file("""<node pkg="demo_pkg" exec="demo_node" name="task" on_exit="shutdown">
      <param name="exit_code" value="4"/></node>""")
    assert cli.main([str(path)]) == 4
    assert "[task] task says hi on stderr" in capsys.readouterr().out
    (log,) = (tmp_path / "ros_log").glob("*-hgpo-launch-*/launch.log")  # output="log" by default
    assert '[task] {"name": "task"' in log.read_text()


def test_the_venv_is_the_ament_prefix_unless_one_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AMENT_PREFIX_PATH", "")  # so that the teardown restores the variable's state
    monkeypatch.delenv("AMENT_PREFIX_PATH")
    cli.main(["--help"])
    assert os.environ["AMENT_PREFIX_PATH"] == sys.prefix


@pytest.mark.skipif(not SIM.is_file(), reason="no launch/sim.launch.xml in this checkout")
@pytest.mark.parametrize("name", ["sim", "real", "alfworld"])
def test_the_repositorys_launch_files_stay_inside_the_subset_and_keep_discovery_local(
    demo: Demo, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    share = demo.add_package("hgpo")
    # The layout the launch files expect: launch files and, next to them, the nodes' YAML in config/.
    (share / "launch").symlink_to(REPO / "launch")
    (share / "config").symlink_to(REPO / "launch" / "config")
    launch_file = ET.parse(REPO / "launch" / f"{name}.launch.xml")
    for exe in {node.attrib["exec"] for node in launch_file.iter("node")}:
        demo.add_executable("hgpo", exe, "#!/bin/sh\n")
    exe = str(demo.prefix / "lib" / "hgpo")
    for args, discovery in (([], "LOCALHOST"), (["discovery_range:=SUBNET"], "SUBNET")):
        assert cli.main([name, "--print", *args]) == 0, capsys.readouterr().err
        commands = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("#")]
        assert commands and all(
            line.startswith(f"ROS_AUTOMATIC_DISCOVERY_RANGE={discovery} {exe}") for line in commands
        )
