"""The real graph's policy against the real graph: each enclave allows exactly the topics, services and
actions its node makes when launched (over every command_interface), and the operator's e-stop reaches the
bridge while the planner and controller are frozen. Permissions that missed an endpoint would stop that node
at start under Enforce; grants it never uses would widen what a stolen key could do."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest
import rclpy
from rclpy.context import Context
from rclpy.node import Node

from hgpo.security import REPO_POLICY
from ros_nodes.arm.interfaces import INTERFACES
from ros_nodes.estop import EstopSwitch
from ros_nodes.launcher.cli import resolve_launch_file
from ros_nodes.launcher.parse import parse_launch_file
from ros_nodes.security.dds_names import Grants
from ros_nodes.security.keystore import create_enclaves, create_keystore
from ros_nodes.security.policy import read_policy
from tests.processes import Captured
from tests.ros.conftest import HGPO, REPO
from tests.ros.helpers import DISCOVERY_S, free_port, wait_until

OPERATOR = ("/hgpo", "operator")
RECORDER = ("/hgpo", "recorder")
OBSERVERS = {"record": "true", "view": "true"}  # the recorder and the viewer too
READY = "planner 'expert' ready"  # what the planner logs once it is up
pytestmark = pytest.mark.usefixtures("ament_prefix")  # `hgpo estop`'s node, in the policy's operator enclave


@pytest.fixture
def graph_domain(ros_env: dict[str, str]) -> dict[str, str]:
    """The environment of the `launch` fixture's graphs (the session's domain + 50)."""
    return dict(ros_env, ROS_DOMAIN_ID=str(int(ros_env["ROS_DOMAIN_ID"]) + 50))


@pytest.fixture
def probe(graph_domain: dict[str, str]) -> Iterator[Node]:
    """A node in the launched graphs' domain; graph queries read rmw's cache, so it needs no spinning."""
    context = Context()
    rclpy.init(context=context, domain_id=int(graph_domain["ROS_DOMAIN_ID"]))
    node = rclpy.create_node("hgpo_permissions_probe", context=context)
    yield node
    node.destroy_node()
    rclpy.shutdown(context=context)


def real_nodes(**args: str) -> list:
    """The nodes `hgpo launch real --print` shows, with fake hardware."""
    return parse_launch_file(resolve_launch_file("real"), {"use_fake_hardware": "true", **args})


def enclaves_of_the_launch() -> dict[tuple[str, str], str]:
    """(namespace, name) -> the enclave its --enclave names, for every node the launch file can start."""
    return {
        (node.namespace or "/", node.name): node.ros_args[node.ros_args.index("--enclave") + 1]
        for node in real_nodes(run_task="true", **OBSERVERS)
    }


def made_by(probe: Node, namespace: str, name: str) -> Grants:
    """What a running node made, as the DDS topics it writes and reads."""
    grants = Grants()
    for topic, _ in probe.get_publisher_names_and_types_by_node(name, namespace):
        grants.publishes(topic)
    for topic, _ in probe.get_subscriber_names_and_types_by_node(name, namespace):
        grants.subscribes(topic)
    for service, _ in probe.get_service_names_and_types_by_node(name, namespace):
        grants.serves(service)
    for service, _ in probe.get_client_names_and_types_by_node(name, namespace):
        grants.calls(service)
    return grants


def settled(probe: Node, nodes: set[tuple[str, str]]) -> dict[tuple[str, str], Grants]:
    """Each node's endpoints once all of `nodes` are up and nothing new has appeared for a second."""
    last: dict | None = None
    stable_since = time.monotonic()
    deadline = time.monotonic() + DISCOVERY_S
    while time.monotonic() < deadline:
        present = {(ns, n) for n, ns in probe.get_node_names_and_namespaces()}
        now = {key: made_by(probe, *key) for key in nodes & present}
        if now != last:
            last, stable_since = now, time.monotonic()
        elif len(now) == len(nodes) and time.monotonic() - stable_since >= 1.0:
            return now
        time.sleep(0.1)
    raise AssertionError(f"the graph did not settle: {sorted(nodes)} expected, saw {sorted(last or {})}")


def recorder_reads(probe: Node, found: dict[tuple[str, str], Grants]) -> set[str]:
    """The topics the recorder subscribes to now (it subscribes to each as its first publisher appears)."""
    found[RECORDER] = made_by(probe, *RECORDER)
    return {t for t in found[RECORDER].subscribe if t.startswith("rt/")}


def gone(probe: Node, nodes: set[tuple[str, str]]) -> None:
    def left() -> set[tuple[str, str]]:
        return nodes & {(ns, n) for n, ns in probe.get_node_names_and_namespaces()}

    wait_until(lambda: not left(), DISCOVERY_S, "the last graph's nodes to leave")


def test_each_enclave_allows_exactly_what_its_node_makes(launch, probe: Node, graph_domain, tmp_path) -> None:
    enclaves = enclaves_of_the_launch()
    observed: dict[str, Grants] = {}

    def record(found: dict[tuple[str, str], Grants]) -> None:
        for key, grants in found.items():
            seen = observed.setdefault(enclaves.get(key, "/hgpo/operator"), Grants())
            seen.publish |= grants.publish
            seen.subscribe |= grants.subscribe

    observers = {RECORDER, ("/hgpo", "viewer")}
    recorded: set[str] = set()
    for interface in INTERFACES:  # the recorder and viewer with the first: they make the same with each
        watched = interface == next(iter(INTERFACES))
        launched = {key for key in enclaves if key[1] != "run_task" and (watched or key not in observers)}
        extra = [f"record_dir:={tmp_path}", f"view_port:={free_port()}"] if watched else []
        extra += [f"{name}:={value if watched else 'false'}" for name, value in OBSERVERS.items()]
        graph = launch(
            "real", "use_fake_hardware:=true", "run_task:=false", f"command_interface:={interface}", *extra
        )
        found = settled(probe, launched)
        if watched:  # the recorder comes to read exactly the /hgpo topics the others write (it writes none)
            recorded = {
                t for k, g in found.items() if k != RECORDER for t in g.publish if t.startswith("rt/hgpo/")
            }
            wait_until(
                lambda found=found, recorded=recorded: recorder_reads(probe, found) == recorded,
                DISCOVERY_S,
                f"the recorder to read {sorted(recorded)}",
            )
        record(found)
        assert graph.stop(timeout=20) == 0, graph.output
        gone(probe, launched)

    # run_task, as the launch file starts it, waits for a planner that is not there: time to look at it.
    (run_task,) = [node for node in real_nodes(run_task="true") if node.name == "run_task"]
    client = Captured(run_task.command(), cwd=REPO, env=run_task.environment(graph_domain))
    try:
        record(settled(probe, {("/hgpo", "run_task")}))
    finally:
        client.stop(timeout=20)

    # The operator: what `hgpo estop` makes, the switch on a node named as it names its own.
    operator = rclpy.create_node(OPERATOR[1], namespace=OPERATOR[0], context=probe.context)
    try:
        EstopSwitch(operator)
        record(settled(probe, {OPERATOR}))
    finally:
        operator.destroy_node()

    policy = read_policy(REPO_POLICY)
    assert set(policy) == set(observed)
    # The recorder subscribes to each topic once someone publishes it: with run_task's heartbeat and the
    # operator's e-stop, which were not running beside it, it makes what its enclave allows.
    others = {t for enclave, g in observed.items() if enclave != "/hgpo/recorder" for t in g.publish}
    assert {t for t in others if t.startswith("rt/hgpo/")} - recorded == {
        "rt/hgpo/run_task/client_heartbeat",
        "rt/hgpo/estop",
    }
    observed["/hgpo/recorder"].subscribe |= {t for t in others if t.startswith("rt/hgpo/")}
    for enclave, grants in policy.items():
        for way, allowed, made in (
            ("publish", grants.publish, observed[enclave].publish),
            ("subscribe", grants.subscribe, observed[enclave].subscribe),
        ):
            lacks, unused = sorted(made - allowed), sorted(allowed - made)
            assert not lacks and not unused, (
                f"{enclave} {way}: policy.xml lacks {lacks}, allows unused {unused}"
            )


def started_pids(graph: Captured) -> dict[str, int]:
    wait_until(lambda: sum("started '" in line for line in graph.lines) >= 4, DISCOVERY_S, "the nodes")
    return {
        m[1]: int(m[2]) for line in graph.lines if (m := re.search(r"started '(\w+)' with pid (\d+)", line))
    }


def estop(action: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HGPO, "estop", action], cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_the_estop_reaches_the_bridge_with_the_planner_and_controller_frozen(launch, graph_domain) -> None:
    graph = launch("real", "use_fake_hardware:=true", "run_task:=false")
    pids = started_pids(graph)
    frozen = [pids["planner"], pids["controller"]]
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    try:
        pressed = estop("press", graph_domain)
        assert pressed.returncode == 0, pressed.stdout + pressed.stderr
        assert "latched by /hgpo/arm_bridge" in pressed.stdout
        released = estop("release", graph_domain)
        assert released.returncode == 0, released.stdout + released.stderr
        assert "emergency stop reset" in released.stdout
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
    assert any("EMERGENCY STOP latched" in line for line in graph.lines)


def test_estop_without_a_bridge_says_so(graph_domain) -> None:
    result = subprocess.run(
        [*HGPO, "estop", "press", "--timeout", "1"],
        cwd=REPO,
        env=graph_domain,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1 and "no arm_bridge on /hgpo/estop within 1 s" in result.stderr


def test_security_true_starts_each_node_in_its_enclave_and_never_without_one(
    launch, graph_domain, tmp_path
) -> None:
    keystore = tmp_path / "keystore"
    create_keystore(keystore, int(graph_domain["ROS_DOMAIN_ID"]))
    create_enclaves(keystore, REPO_POLICY)
    args = {
        "security": "true",
        "keystore": str(keystore),
        **OBSERVERS,
        "record_dir": str(tmp_path / "runs"),
        "view_port": str(free_port()),
    }
    nodes = real_nodes(run_task="false", **args)
    assert {"recorder", "viewer"} <= {node.name for node in nodes}
    # Each node alone, as the launch file starts it: without a DDS-Security plugin the first node that fails
    # stops the launch, maybe before a slower one got to rcl, so the launch cannot show them all.
    started = {
        node.name: Captured(node.command(), cwd=REPO, env=node.environment(graph_domain)) for node in nodes
    }
    try:
        for name, process in started.items():  # rcl resolved --enclave in the keystore: the layout it reads
            found = f"Found security directory: {keystore}/enclaves/hgpo/{name}"
            wait_until(lambda p=process, f=found: any(f in line for line in p.lines), DISCOVERY_S, found)
    finally:
        for process in started.values():
            process.stop(timeout=20)
    graph = launch(
        "real", "use_fake_hardware:=true", "run_task:=false", *(f"{k}:={v}" for k, v in args.items())
    )
    if any("-DSECURITY=ON" in line for process in started.values() for line in process.lines):
        # The PyPI wheels' Fast DDS has no DDS-Security plugins: with Enforce, no node starts without them.
        assert graph.wait(timeout=60) != 0
        assert not any(READY in line for line in graph.lines), graph.output
    else:  # a security-enabled DDS (the Docker image's): the graph comes up, every node in its enclave
        wait_until(lambda: any(READY in line for line in graph.lines), DISCOVERY_S, "planner")
