"""planner: the `RunTask` action server that plans one subgoal at a time, closed-loop.

For each task it (optionally) resets the scene through the bridge, then runs `run_closed_loop`
(shared with in-process evaluation): plan a subgoal from the instruction, the scene and the history,
send it to the controller's `ExecuteSubgoal`, observe the result, replan. Each planned subgoal is
published on `subgoal` for monitoring and reported as `RunTask` feedback.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from hgpo_msgs.action import ExecuteSubgoal, RunTask
from hgpo_msgs.msg import SceneState as SceneStateMsg
from hgpo_msgs.msg import Subgoal as SubgoalMsg
from hgpo_msgs.srv import ResetScene
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.client import Client
from rclpy.node import Node

from policies.planning import DecisionLog, LLMConfig, LoopConfig, StepRecord, make_planner, run_closed_loop
from policies.planning.backends import ModelError
from ros_nodes.conversions import scene_from_msg, subgoal_to_msg
from ros_nodes.node_main import Parameters, log_outcome, run_node
from ros_nodes.waiting import PeerTimeoutError, send_goal, wait_for
from sim.tabletop import SceneState, Subgoal, SubgoalError, Task, ground, make_task


class TaskCanceledError(Exception):
    """The RunTask client canceled the task."""


class Planner(Node):
    def __init__(self) -> None:
        super().__init__("planner")
        self.decision_log: DecisionLog | None = None  # rclpy destroys a node that failed to start, too
        p = Parameters(self)
        planner = p("planner", "expert", "planner backend")
        self.loop_config = LoopConfig(
            max_subgoals=p("max_subgoals", 20, "fail the task after this many subgoals"),
            max_repeated_failures=p(
                "max_repeated_failures", 2, "abort when one subgoal fails this often in a row"
            ),
            max_repeats=p("max_repeats", 3, "abort when one subgoal is executed this often in a row"),
        )
        self.subgoal_timeout_s = p.positive(
            "subgoal_timeout_s", 30.0, "controller timeout for each subgoal (s)"
        )
        self.peer_timeout_s = p.positive(
            "peer_timeout_s", 10.0, "wait this long for the bridge and controller (s)"
        )
        decisions_dir = p("decisions_dir", "", "folder for decisions.jsonl; empty: under the ROS log folder")
        defaults = asdict(LLMConfig())
        llm = LLMConfig.from_mapping(
            {name: p(f"llm.{name}", value, LLMConfig.help(name)) for name, value in defaults.items()}
        )
        model = f" ({llm.backend}: {llm.model})" if planner == "llm" else ""
        self.get_logger().info(f"loading planner {planner!r}{model}")
        try:
            self.planner = make_planner(planner, llm)  # loads the model once, here, never mid-task
        except ModelError as err:
            raise ValueError(f"planner {planner!r} cannot start: {err}") from err
        self.decision_log = DecisionLog(self._decisions_path(decisions_dir))

        group = ReentrantCallbackGroup()
        self._scene: SceneStateMsg | None = None
        self._scene_count = 0
        self._last_task: Task | None = None  # set up by the last reset; its instruction needs no reset again
        self._scene_cond = threading.Condition()
        self._not_before_ns = 0  # scenes stamped before the last reset describe the old world
        self._busy = threading.Lock()  # one task at a time
        self.create_subscription(
            SceneStateMsg, "scene_state", self._on_scene, 10, callback_group=MutuallyExclusiveCallbackGroup()
        )
        self.subgoal_pub = self.create_publisher(SubgoalMsg, "subgoal", 10)
        self.reset_client: Client[ResetScene.Request, ResetScene.Response] = self.create_client(
            ResetScene, "reset_scene", callback_group=group
        )
        self.execute_client: ActionClient[
            ExecuteSubgoal.Goal, ExecuteSubgoal.Result, ExecuteSubgoal.Feedback
        ] = ActionClient(self, ExecuteSubgoal, "execute_subgoal", callback_group=group)
        self._server = ActionServer(
            self,
            RunTask,
            "run_task",
            execute_callback=self._execute,
            goal_callback=self._on_goal,
            callback_group=group,
            cancel_callback=lambda _goal: CancelResponse.ACCEPT,
        )
        self.get_logger().info(f"planner {planner!r} ready; decisions to {self.decision_log.path}")

    @staticmethod
    def _decisions_path(folder: str) -> Path:
        """`<folder>/decisions.jsonl`; by default a fresh folder per start under the ROS log folder."""
        if folder:
            return Path(folder).expanduser() / "decisions.jsonl"
        log_root = Path(os.environ.get("ROS_LOG_DIR") or Path.home() / ".ros" / "log")
        return log_root / f"hgpo_planner_{time.strftime('%Y%m%d-%H%M%S')}_{os.getpid()}" / "decisions.jsonl"

    def destroy_node(self) -> None:
        if self.decision_log is not None:
            self.decision_log.close()
        super().destroy_node()

    def _on_scene(self, msg: SceneStateMsg) -> None:
        with self._scene_cond:
            self._scene = msg  # converted only when the planner reads it
            self._scene_count += 1
            self._scene_cond.notify_all()

    def _next_scene(self) -> SceneState:
        """The first scene that arrives after this call and was stamped after the last reset: the world
        now, not before the last step (topics and the reset service are not ordered with each other)."""

        def current() -> bool:
            if self._scene is None or self._scene_count <= seen:
                return False
            stamp = self._scene.header.stamp
            return stamp.sec * 10**9 + stamp.nanosec >= self._not_before_ns

        with self._scene_cond:
            seen = self._scene_count
            if not self._scene_cond.wait_for(current, timeout=self.peer_timeout_s):
                raise PeerTimeoutError(
                    f"no SceneState on {self.resolve_topic_name('scene_state')} "
                    f"for {self.peer_timeout_s} s: is the sim or arm bridge running?"
                )
            assert self._scene is not None
            return scene_from_msg(self._scene)

    def _reset(self, task: str, seed: int) -> ResetScene.Response:
        if not self.reset_client.wait_for_service(timeout_sec=self.peer_timeout_s):
            raise PeerTimeoutError(
                f"service {self.reset_client.srv_name} not available: is the sim bridge running?"
            )
        future = self.reset_client.call_async(ResetScene.Request(task=task, seed=seed))
        response = wait_for(future, self.peer_timeout_s, f"service {self.reset_client.srv_name}")
        stamp = response.scene.header.stamp
        self._not_before_ns = stamp.sec * 10**9 + stamp.nanosec
        return response

    def _on_goal(self, _request: RunTask.Goal) -> GoalResponse:
        """One task at a time: two would preempt each other's subgoals on the one controller."""
        if self._busy.locked():
            self.get_logger().warning("task rejected: another task is running")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _execute_subgoal(self, subgoal: Subgoal, subgoal_id: int, canceled: Callable[[], bool]) -> StepRecord:
        try:
            goal = ground(subgoal, self._next_scene())
        except SubgoalError as err:
            return StepRecord(subgoal, False, f"cannot ground {subgoal}: {err}")
        msg = subgoal_to_msg(subgoal, subgoal_id, goal, self.subgoal_timeout_s)
        msg.header.stamp = self.get_clock().now().to_msg()
        self.subgoal_pub.publish(msg)
        handle = send_goal(
            self.execute_client, ExecuteSubgoal.Goal(subgoal=msg), self.peer_timeout_s, "controller"
        )
        if not handle.accepted:
            return StepRecord(subgoal, False, f"controller rejected {subgoal}")
        result_future = handle.get_result_async()
        done = threading.Event()
        result_future.add_done_callback(lambda _f: done.set())
        deadline = time.monotonic() + self.subgoal_timeout_s + self.peer_timeout_s
        while not done.wait(0.05):
            if canceled() or time.monotonic() > deadline:
                handle.cancel_goal_async()  # never leave the arm running a subgoal nobody waits for
                if canceled():
                    raise TaskCanceledError
                raise PeerTimeoutError(f"controller result for {subgoal}: none by the subgoal's deadline")
        response = result_future.result()
        assert response is not None
        return StepRecord(subgoal, bool(response.result.success), response.result.message)

    def _task_for(self, request: RunTask.Goal) -> tuple[str, Task | None]:
        instruction = request.instruction.strip()
        if request.reset:
            response = self._reset(request.task, request.seed)
            if not response.success:
                raise ValueError(f"reset refused: {response.message}")
            self._last_task = make_task(response.task, seed=request.seed)
            if instruction and instruction != response.instruction:
                return instruction, None  # the user's own words, not the reset task's: no known goal
            return response.instruction, self._last_task
        if not instruction:
            raise ValueError("empty instruction: say what the robot should do, or reset to a task")
        known = self._last_task is not None and self._last_task.instruction == instruction
        return instruction, self._last_task if known else None

    def _execute(self, goal_handle: ServerGoalHandle) -> RunTask.Result:
        if not self._busy.acquire(blocking=False):
            goal_handle.abort()
            return RunTask.Result(success=False, message="another task is running: wait for it or cancel it")
        try:
            return self._run_task(goal_handle)
        finally:
            self._busy.release()

    def _run_task(self, goal_handle: ServerGoalHandle) -> RunTask.Result:
        started = time.monotonic()
        try:
            instruction, task = self._task_for(goal_handle.request)
            if not self.execute_client.wait_for_server(timeout_sec=self.peer_timeout_s):
                raise PeerTimeoutError(
                    f"action {self.resolve_topic_name('execute_subgoal')} not available: "
                    "is the controller running?"
                )
        except (PeerTimeoutError, ValueError) as err:
            goal_handle.abort()
            self.get_logger().error(str(err))
            return RunTask.Result(success=False, subgoals_executed=0, message=str(err))
        self.get_logger().info(f"task: {instruction!r}")

        executed = 0

        def on_event(index: int, subgoal: Subgoal, record: StepRecord | None) -> None:
            nonlocal executed
            status = "planned" if record is None else ("succeeded" if record.success else "failed")
            goal_handle.publish_feedback(RunTask.Feedback(index=index, subgoal=str(subgoal), status=status))
            if record is not None:
                executed += 1
                text = f"[{index}] {subgoal}: {status}: {record.message}"
                log_outcome(self.get_logger(), record.success, text)

        def canceled() -> bool:
            return goal_handle.is_cancel_requested

        def observe() -> SceneState:
            if canceled():
                raise TaskCanceledError
            return self._next_scene()

        def execute(subgoal: Subgoal) -> StepRecord:
            try:
                return self._execute_subgoal(subgoal, executed, canceled)
            except PeerTimeoutError as err:
                return StepRecord(subgoal, False, str(err))

        try:
            outcome = run_closed_loop(
                self.planner,
                instruction,
                observe,
                execute,
                task=task,
                config=self.loop_config,
                on_event=on_event,
                log=self.decision_log,
                meta={"task": goal_handle.request.task, "seed": goal_handle.request.seed},
            )
        except (PeerTimeoutError, TaskCanceledError) as err:
            was_canceled = isinstance(err, TaskCanceledError)
            goal_handle.canceled() if was_canceled else goal_handle.abort()
            message = "task canceled" if was_canceled else str(err)
            self.get_logger().error(message)
            return RunTask.Result(success=False, subgoals_executed=executed, message=message)
        goal_handle.succeed() if outcome.success else goal_handle.abort()
        message = f"{outcome.message} ({time.monotonic() - started:.1f} s)"
        log_outcome(self.get_logger(), outcome.success, message)
        return RunTask.Result(
            success=outcome.success, subgoals_executed=outcome.subgoals_executed, message=message
        )


def main() -> int:
    return run_node(Planner, multi_threaded=True)
