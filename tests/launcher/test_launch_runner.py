"""The runner with real processes: demo nodes of a throwaway ament prefix, run in process and via the CLI."""

from __future__ import annotations

import io
import json
import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from launcher_testing import REPO, TIMEOUT_S, Demo, alive, wait_until

from ros_nodes.launcher.parse import parse_launch_file
from ros_nodes.launcher.runner import LOG_FILE, run
from ros_nodes.launcher.spec import NodeSpec
from tests.processes import Captured


def node(name: str, *params: tuple[str, str], attrs: str = 'output="screen"') -> str:
    body = "".join(f'<param name="{key}" value="{value}"/>' for key, value in params)
    return f'<node pkg="demo_pkg" exec="demo_node" name="{name}" {attrs}>{body}</node>'


def task(exit_code: int, wait_for: str) -> str:
    """A node that ends the launch with `exit_code` once the nodes in `wait_for` are up."""
    return node(
        "task",
        ("wait_for", wait_for),
        ("exit_code", str(exit_code)),
        attrs='output="screen" on_exit="shutdown"',
    )


def run_launch(demo: Demo, body: str, grace_s: float = 5.0) -> tuple[int, list[NodeSpec], str]:
    specs = parse_launch_file(demo.launch_file(body))
    out = io.StringIO()
    code = run(specs, log_dir=demo.prefix.parent / "log", grace_s=grace_s, out=out)
    return code, specs, out.getvalue()


def test_output_is_prefixed_per_node_and_the_command_line_carries_args(demo: Demo) -> None:
    config = demo.write("talker.yaml", "/**:\n  ros__parameters:\n    rate: 1.0\n")
    talker = f"""<node pkg="demo_pkg" exec="demo_node" name="talker" namespace="ns" output="screen">
      <param from="{config}"/><param name="rate" value="2.5"/><remap from="chatter" to="/hgpo/chatter"/>
    </node>"""
    code, specs, out = run_launch(demo, talker + task(0, wait_for="talker"))
    assert code == 0, out
    reported = next(
        json.loads(line.removeprefix("[talker] "))
        for line in out.splitlines()
        if line.startswith("[talker] {")
    )
    assert reported == {"name": "talker", "argv": specs[0].command()[1:]}
    assert "--params-file" in reported["argv"] and "rate:=2.5" in reported["argv"]
    assert "[talker] talker says hi on stderr" in out
    assert "[task] task says hi on stderr" in out
    assert "[talker] talker stopping on SIGINT" in out  # stopped cleanly once the task ended


def test_shutdown_node_exit_code_propagates_and_stops_the_others(demo: Demo) -> None:
    code, _, out = run_launch(demo, node("other") + task(3, wait_for="other"))
    assert code == 3, out
    assert "'task' exited with exit code 3 and has on_exit=\"shutdown\"" in out
    assert "[other] other stopping on SIGINT" in out
    assert not alive(demo.pid("other"))


def test_nodes_ignoring_signals_get_sigterm_then_sigkill(demo: Demo) -> None:
    stubborn = node("stubborn", ("ignore_signals", "true"))
    code, _, out = run_launch(demo, stubborn + task(0, "stubborn"), grace_s=0.2)
    assert code == 0, out
    assert "'stubborn' still running after SIGINT: sending SIGTERM" in out
    assert "'stubborn' still running after SIGTERM: sending SIGKILL" in out
    assert "'stubborn' exited with signal SIGKILL" in out
    assert not alive(demo.pid("stubborn"))


def test_no_orphans_even_of_a_nodes_own_children(demo: Demo) -> None:
    code, _, out = run_launch(demo, node("parent", ("spawn_child", "true")) + task(0, "parent"))
    assert code == 0, out
    assert not alive(demo.pid("parent"))
    # Not our child, so not reaped by us: it got SIGKILL and may take a moment to be gone.
    grandchild = int((demo.pids / "parent.child.pid").read_text())
    wait_until(lambda: not alive(grandchild), "the grandchild to die", timeout=2.0)


def test_output_log_goes_to_the_log_file_and_stderr_also_to_the_screen(demo: Demo) -> None:
    code, _, out = run_launch(demo, node("quiet", attrs="") + task(0, "quiet"))
    assert code == 0, out
    log = (demo.prefix.parent / "log" / LOG_FILE).read_text()
    assert '[quiet] {"name": "quiet"' in log and '[quiet] {"name"' not in out
    assert "[quiet] quiet says hi on stderr" in log and "[quiet] quiet says hi on stderr" in out
    assert "[task]" not in log  # output="screen"


def test_nodes_with_the_same_label_stay_apart(demo: Demo) -> None:
    unnamed = '<node pkg="demo_pkg" exec="demo_node" output="screen"><param name="exit_code" value="0"/>'
    code, _, out = run_launch(demo, f"{unnamed}</node>" * 2)
    assert code == 0, out
    assert "[demo_node] demo_node says hi" in out and "[demo_node-2] demo_node says hi" in out


def test_a_node_that_cannot_start_stops_the_launch(demo: Demo) -> None:
    demo.add_executable("demo_pkg", "broken", "#!/no/such/interpreter\n")
    broken = '<node pkg="demo_pkg" exec="broken" name="broken"/>'
    code, _, out = run_launch(demo, node("first") + broken)
    assert code == 1, out
    assert "cannot start 'broken'" in out
    first = re.search(r"started 'first' with pid (\d+)", out)
    assert first is not None and not alive(int(first.group(1)))


class Launcher(Captured):
    """`python -m ros_nodes.launcher FILE` in the background."""

    def __init__(self, path: Path, *options: str) -> None:
        super().__init__([sys.executable, "-m", "ros_nodes.launcher", str(path), *options], cwd=REPO)

    def expect(self, text: str) -> None:
        wait_until(lambda: any(text in line for line in self.lines), f"{text!r} in the launcher's output")


@pytest.fixture
def launchers() -> Iterator[list[Launcher]]:
    """Launchers a test starts; any still running at the end are stopped the way a user would."""
    started: list[Launcher] = []
    yield started
    for launcher in started:
        if launcher.proc.poll() is None:
            launcher.proc.send_signal(signal.SIGINT)
            launcher.proc.wait(timeout=TIMEOUT_S)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_the_launcher_stops_every_node_cleanly(
    demo: Demo, launchers: list[Launcher], sig: signal.Signals
) -> None:
    launcher = Launcher(demo.launch_file(node("alpha") + node("beta")))
    launchers.append(launcher)
    pids = [demo.pid("alpha"), demo.pid("beta")]
    launcher.proc.send_signal(sig)
    assert launcher.wait(TIMEOUT_S) == 0, launcher.lines  # as ros2 launch after Ctrl-C
    assert f"[alpha] alpha stopping on {sig.name}" in launcher.lines
    assert f"[beta] beta stopping on {sig.name}" in launcher.lines
    assert not any(alive(pid) for pid in pids)


def test_a_crashing_node_is_reported_by_name_and_the_others_keep_running(
    demo: Demo, launchers: list[Launcher]
) -> None:
    launcher = Launcher(demo.launch_file(node("crasher", ("exit_code", "3")) + node("steady")))
    launchers.append(launcher)
    launcher.expect("'crasher' died unexpectedly with exit code 3")
    steady = demo.pid("steady")
    assert alive(steady) and launcher.proc.poll() is None
    launcher.proc.send_signal(signal.SIGINT)
    assert launcher.wait(TIMEOUT_S) == 1  # a node failed
    assert not alive(steady)


def test_a_node_that_has_to_be_killed_fails_the_launch(demo: Demo, launchers: list[Launcher]) -> None:
    launcher = Launcher(demo.launch_file(node("stubborn", ("ignore_signals", "true"))), "--grace", "0.2")
    launchers.append(launcher)
    stubborn = demo.pid("stubborn")
    launcher.proc.send_signal(signal.SIGINT)
    assert launcher.wait(TIMEOUT_S) == 1
    assert "[launch] 'stubborn' still running after SIGTERM: sending SIGKILL" in launcher.lines
    assert not alive(stubborn)


def environ_of(pid: int) -> dict[str, str]:
    """A running process's environment as the kernel holds it."""
    entries = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(entry.decode().partition("=")[::2] for entry in entries if entry)


def test_set_env_is_in_the_started_nodes_environment(demo: Demo, launchers: list[Launcher]) -> None:
    body = (
        '<arg name="range" default="LOCALHOST"/>'
        '<set_env name="ROS_AUTOMATIC_DISCOVERY_RANGE" value="$(var range)"/>'
        + node("local")
        + '<group><set_env name="ROS_AUTOMATIC_DISCOVERY_RANGE" value="SUBNET"/>'
        + node("subnet")
        + "</group>"
    )
    launcher = Launcher(demo.launch_file(body))
    launchers.append(launcher)
    local, subnet = environ_of(demo.pid("local")), environ_of(demo.pid("subnet"))
    assert local["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    assert subnet["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "SUBNET"
    assert local["DEMO_DIR"] == str(demo.pids)  # the launcher's own environment is kept beneath it
