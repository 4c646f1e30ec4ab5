"""planner: the `RunTask` action server that plans one subgoal at a time, closed-loop.

For each task it (optionally) resets the world through the bridge, then runs `run_closed_loop`
(shared with in-process evaluation): plan a subgoal from the instruction, the observation and the history,
send it to `ExecuteSubgoal` (the controller; for text worlds, their bridge), observe the result, replan.
Each planned subgoal is published on `subgoal` for monitoring and reported as `RunTask` feedback; between
those, a "running" feedback at least every 0.2 s tells the caller the planner is alive.
While a subgoal runs the planner sends the controller a heartbeat and expects feedback back
(ros_nodes/liveness.py): a controller that goes silent ends the task as such, and is not sent the task's
next subgoal. A RunTask caller that sends heartbeats (run_task does) and stops is taken as gone: its task
ends and the running subgoal is canceled, so that the arm does not move for a caller that is no more.
Instructions, decisions and tasks are bounded in length and time by parameters.
While no task runs, a planner that can (the LLM planner, `llm.anticipate`) prefills the next task's prompt up
to its instruction for the scene it observes, once per changed scene (`_warm_while_idle`).
The `domain` parameter picks the world adapter (ros_nodes/planner_worlds.py): `tabletop` observes
SceneState and grounds subgoals to goals, `alfworld` observes the bridge's latched TextObservation.
"""

from __future__ import annotations

import math
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from hgpo_msgs.action import ExecuteSubgoal, RunTask
from hgpo_msgs.msg import Subgoal as SubgoalMsg
from hgpo_msgs.srv import ResetScene
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.client import Client
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from std_msgs.msg import String
from unique_identifier_msgs.msg import UUID

from policies.planning import DecisionLog, LLMConfig, LoopConfig, StepRecord, TaskGoal, run_closed_loop
from policies.planning.backends import ModelError
from policies.planning.planner import Anticipating
from policies.worlds import make_planner
from ros_nodes.conversions import clip
from ros_nodes.estop import EmergencyStopError, EstopMonitor
from ros_nodes.liveness import (
    KEEPALIVE_S,
    ClientHeartbeat,
    ClientWatch,
    ServerLostError,
    ServerWatch,
    wait_for_live_result,
)
from ros_nodes.node_main import Parameters, log_outcome, run_node
from ros_nodes.planner_worlds import make_world
from ros_nodes.waiting import RESULT_KEPT_S, SEND_ATTEMPTS, PeerTimeoutError, call_service, send_goal
from sim.tabletop import Subgoal

RESEND_MIN_S = 1.0


class TaskCanceledError(Exception):
    """The RunTask client canceled the task."""


class ExecutorLostError(ServerLostError):
    """The executor (controller) stopped answering mid-subgoal: the task ends, nothing is resent to it."""


class BudgetError(RuntimeError):
    """A decision or the whole task took longer than the planner's budget for it."""


class Planner(Node):
    def __init__(self) -> None:
        super().__init__("planner")
        self.decision_log: DecisionLog | None = None  # rclpy destroys a node that failed to start, too
        p = Parameters(self)
        planner = p("planner", "expert", "planner backend")
        domain = p("domain", "tabletop", "the world planned in: tabletop (SceneState) or alfworld (text)")
        self.world = make_world(domain)
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
        self.executor_silence_s = p.non_negative(
            "executor_silence_s", 1.0, "a running subgoal's executor silent this long is gone (s; 0: off)"
        )
        self.caller_timeout_s = p.positive(
            "caller_timeout_s",
            1.0,
            "end a task whose caller's heartbeat stopped this long (s; callers sending none: not watched)",
        )
        self.stream_timeout_s = p.positive(
            "stream_timeout_s", 2.0, "a stream heard in this task, then silent this long, is lost (s)"
        )
        self.max_instruction_chars = int(
            p.positive("max_instruction_chars", 500, "longer instructions are refused (characters)")
        )
        self.max_decision_s = p.positive(
            "max_decision_s", 120.0, "fail the task when one decision takes longer (s)"
        )
        self.max_task_s = p.positive("max_task_s", 900.0, "a task fails when it runs longer than this (s)")
        self.idle_prefill_after_s = p.non_negative(
            "idle_prefill_after_s",
            1.0,
            "with no task for this long, prefill the next task's prompt up to its instruction for the scene "
            "observed (llm.anticipate; s)",
        )
        decisions_dir = p("decisions_dir", "", "folder for decisions.jsonl; empty: under the ROS log folder")
        defaults = asdict(LLMConfig())
        llm = LLMConfig.from_mapping(
            {name: p(f"llm.{name}", value, LLMConfig.help(name)) for name, value in defaults.items()}
        )
        adapter = f" + LoRA {llm.adapter}" if llm.adapter and llm.backend == "transformers" else ""
        model = f" ({llm.backend}: {llm.model}{adapter})" if planner == "llm" else ""
        self.get_logger().info(f"loading {domain} planner {planner!r}{model}")
        try:
            self.planner = make_planner(planner, llm, domain)  # loads the model once, here, never mid-task
        except ModelError as err:
            raise ValueError(f"planner {planner!r} cannot start: {err}") from err
        self.decision_log = DecisionLog(self._decisions_path(decisions_dir))
        self.estop = EstopMonitor(self)  # arm_bridge's latched e-stop: no subgoal starts under it

        group = ReentrantCallbackGroup()
        self._latest: Any = None  # the last observation message, converted only when the planner reads it
        self._latest_at = -math.inf  # when it came
        self._slowest_reset_s: float | None = None  # the slowest first-try answer of reset_scene so far
        self._count = 0
        self._requested = 0  # observations received when the last reset or subgoal was sent
        self._cond = threading.Condition()
        self._busy = threading.Lock()  # one task at a time: taken when a goal is accepted, freed when it ends
        self._idle_since = time.monotonic()  # when the last task ended
        self._warming = threading.Lock()  # a goal is not accepted while an idle prefill is being started
        self._stopping = threading.Event()  # Ctrl-C: a running task ends at its next check
        self.create_subscription(
            self.world.msg_type,
            self.world.topic,
            self._on_observation,
            self.world.qos,
            callback_group=MutuallyExclusiveCallbackGroup(),
        )
        self.subgoal_pub = self.create_publisher(SubgoalMsg, "subgoal", 10)
        # The task's instruction, latched: a viewer or recorder that comes later still learns it.
        self.instruction_pub = self.create_publisher(
            String, "instruction", QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        )
        self.reset_client: Client[ResetScene.Request, ResetScene.Response] = self.create_client(
            ResetScene, "reset_scene", callback_group=group
        )
        self.execute_client: ActionClient[
            ExecuteSubgoal.Goal, ExecuteSubgoal.Result, ExecuteSubgoal.Feedback
        ] = ActionClient(self, ExecuteSubgoal, "execute_subgoal", callback_group=group)
        self.heartbeat = ClientHeartbeat(self, "execute_subgoal")
        self.caller_watch = ClientWatch(self, "run_task", MutuallyExclusiveCallbackGroup())
        # The running task and its latest feedback, repeated as "running" at least every KEEPALIVE_S so
        # that a RunTask caller can tell a long subgoal or decision from a dead planner (liveness.py).
        self._task: tuple[ServerGoalHandle, RunTask.Feedback] | None = None
        self.create_timer(KEEPALIVE_S / 2, self._keep_alive, callback_group=MutuallyExclusiveCallbackGroup())
        if isinstance(self.planner, Anticipating):
            self.create_timer(0.2, self._warm_while_idle, callback_group=MutuallyExclusiveCallbackGroup())
        self._server = ActionServer(
            self,
            RunTask,
            "run_task",
            execute_callback=self._execute,
            goal_callback=self._on_goal,
            callback_group=group,
            cancel_callback=lambda _goal: CancelResponse.ACCEPT,
            result_timeout=RESULT_KEPT_S,
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

    def _on_observation(self, msg: Any) -> None:
        with self._cond:
            self._latest, self._latest_at = msg, time.monotonic()
            self._count += 1
            self._cond.notify_all()

    def _warm_while_idle(self) -> None:
        """Hand the latest observation to the planner's `warm` once no task has run for idle_prefill_after_s
        (not while tasks follow each other, which reset to scenes of their own); the planner prefills once
        per changed scene text, in the background. Started under `_warming`, which `_on_goal` takes too:
        a task's first decision then always finds it started, and waits for it (`settle`)."""
        with self._warming:
            with self._cond:
                latest = self._latest
            idle = time.monotonic() - self._idle_since >= self.idle_prefill_after_s
            if self._busy.locked() or not idle or latest is None or not self.world.accept(latest):
                return
            assert isinstance(self.planner, Anticipating)
            try:
                if self.planner.warm(self.world.observation(latest)):
                    self.get_logger().info("idle: prefilling the next task's prompt up to its instruction")
            except (ValueError, KeyError) as err:  # a scene it cannot read: a task would say so
                self.get_logger().warning(f"idle prefill skipped: {err}", throttle_duration_sec=10.0)

    def _mark_request(self) -> None:
        with self._cond:
            self._requested = self._count

    def _next_observation(self, task_started: float) -> Any:
        """The world now, as the domain's observation: for a streamed world the first message that arrives
        after this call, otherwise the first after the last reset or subgoal; in both cases one the world
        accepts as after the last reset (topics and the reset service are not ordered with each other).

        A stream already heard during this task that stays silent for stream_timeout_s has lost its source
        (a killed bridge); before that (discovery of a bridge just started), the wait is peer_timeout_s.
        """
        with self._cond:
            seen = self._count if self.world.streamed else self._requested
            live = self.world.streamed and self._latest_at > task_started
            timeout = min(self.stream_timeout_s, self.peer_timeout_s) if live else self.peer_timeout_s

            def current() -> bool:
                return self._count > seen and self.world.accept(self._latest)

            if not self._cond.wait_for(lambda: current() or self._stopping.is_set(), timeout):
                raise PeerTimeoutError(
                    f"no {self.world.msg_type.__name__} on {self.resolve_topic_name(self.world.topic)} "
                    f"for {timeout} s: is {self.world.source} running?"
                )
            if self._stopping.is_set():
                raise TaskCanceledError
            return self.world.observation(self._latest)

    def _resend(self, slowest_s: float | None) -> tuple[float, int]:
        """(wait before a resend, tries): a request a restarted peer dropped (it had not yet matched our
        reader) is resent after RESEND_MIN_S, or 3x the slowest answer seen, so that a slow answer (an arm
        moving home) is not taken for a lost one; unknown, peer_timeout_s. Tries keep the total patience."""
        wait_s = self.peer_timeout_s if slowest_s is None else max(RESEND_MIN_S, 3 * slowest_s)
        wait_s = min(wait_s, self.peer_timeout_s)
        return wait_s, max(SEND_ATTEMPTS, math.ceil(SEND_ATTEMPTS * self.peer_timeout_s / wait_s))

    def _reset(self, request: ResetScene.Request) -> ResetScene.Response:
        if not self.reset_client.wait_for_service(timeout_sec=self.peer_timeout_s):
            raise PeerTimeoutError(
                f"service {self.reset_client.srv_name} not available: is {self.world.source} running?"
            )
        self._mark_request()
        wait_s, tries = self._resend(self._slowest_reset_s)
        started = time.monotonic()
        response = call_service(
            self.reset_client, request, wait_s, f"service {self.reset_client.srv_name}", tries
        )
        took = time.monotonic() - started
        self._slowest_reset_s = max(self._slowest_reset_s or 0.0, took if took < wait_s else 0.0)
        return response

    def stop_work(self) -> None:
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()  # a task waiting for an observation sees it too

    def _on_goal(self, _request: RunTask.Goal) -> GoalResponse:
        """One task at a time: two would preempt each other's subgoals on the one controller.

        The task's claim is taken here, where the goal is accepted, and freed when it ends: of goals that
        arrive together exactly one is accepted and the others are rejected, none accepted and then aborted.
        """
        with self._warming:
            if not self._busy.acquire(blocking=False):
                self.get_logger().warning("task rejected: another task is running")
                return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _execute_subgoal(
        self, subgoal: Subgoal, observation: Any, subgoal_id: int, canceled: Callable[[], bool]
    ) -> StepRecord:
        try:
            msg = self.world.subgoal_msg(subgoal, observation, subgoal_id, self.subgoal_timeout_s)
        except ValueError as err:
            return StepRecord(subgoal, False, f"cannot ground {subgoal}: {err}")
        msg.header.stamp = self.get_clock().now().to_msg()
        self.subgoal_pub.publish(msg)
        self._mark_request()
        goal_id = UUID(uuid=list(uuid.uuid4().bytes))
        # Its feedback shows the executor alive; before the first (a restarted controller's topic may not
        # be matched yet), the bound is the discovery one, peer_timeout_s.
        watch = ServerWatch(self.executor_silence_s, self.peer_timeout_s)

        def give_up() -> bool:
            self.heartbeat.beat(goal_id)  # the controller stops a subgoal whose client went quiet
            return canceled()

        def poll() -> None:
            if canceled():
                raise TaskCanceledError
            self.heartbeat.beat(goal_id)

        wait_s, tries = self._resend(0.0)  # a repeat of a goal is refused, never run twice: resend soon
        handle = send_goal(
            self.execute_client,
            ExecuteSubgoal.Goal(subgoal=msg),
            wait_s,
            self.world.executor,
            feedback_callback=watch.heard,
            give_up=give_up,
            goal_id=goal_id,
            attempts=tries,
        )
        if not handle.accepted:
            return StepRecord(subgoal, False, f"{self.world.executor} rejected {subgoal}")
        try:
            response = wait_for_live_result(
                handle.get_result_async(),
                watch,
                self.subgoal_timeout_s + self.peer_timeout_s,
                self.world.executor,
                poll,
            )
        except (PeerTimeoutError, TaskCanceledError) as err:
            handle.cancel_goal_async()  # never leave the arm running a subgoal nobody waits for
            if isinstance(err, ServerLostError):
                raise ExecutorLostError(f"{err}, during {subgoal}; task ended, nothing resent to it") from err
            raise
        return StepRecord(subgoal, bool(response.result.success), response.result.message)

    def _wait_for_feedback_topic(self) -> None:
        """Feedback is how a running subgoal's executor shows it is alive: wait until its topic is matched,
        lest the first subgoal after a start-up be taken for a dead executor's (wait_for_server does not
        cover the action's topics)."""
        if not self.executor_silence_s:
            return
        topic = f"{self.resolve_topic_name('execute_subgoal')}/_action/feedback"
        deadline = time.monotonic() + self.peer_timeout_s
        while self.count_publishers(topic) == 0:
            if time.monotonic() > deadline:
                raise PeerTimeoutError(f"no publisher on {topic}: is {self.world.executor} running?")
            self._stopping.wait(0.02)

    def _task_for(self, request: RunTask.Goal) -> tuple[str, TaskGoal[Any] | None]:
        instruction = request.instruction.strip()
        if len(instruction) > self.max_instruction_chars:
            raise ValueError(
                f"instruction of {len(instruction)} characters refused: at most {self.max_instruction_chars} "
                "(max_instruction_chars)"
            )
        if len(request.task) > self.max_instruction_chars:
            raise ValueError(f"task name of {len(request.task)} characters refused: {clip(request.task)}")
        if request.reset:
            reset = ResetScene.Request(task=request.task, seed=request.seed)
            response = self._reset(reset)
            if not response.success:
                raise ValueError(f"reset refused: {response.message}")
            goal = self.world.after_reset(reset, response)
            if instruction and instruction != response.instruction:
                return instruction, self.world.goal_for(instruction)  # the user's own words
            return response.instruction, goal
        if not instruction:
            with self._cond:
                latest = self._latest
            instruction = getattr(latest, "task", "") if not self.world.streamed else ""
        if not instruction:
            raise ValueError("empty instruction: say what the robot should do, or reset to a task")
        return instruction, self.world.goal_for(instruction)

    def _execute(self, goal_handle: ServerGoalHandle) -> RunTask.Result:
        self._task = (goal_handle, RunTask.Feedback(status="running"))
        try:  # the claim was taken by _on_goal when it accepted this goal
            return self._run_task(goal_handle)
        finally:
            self._task = None
            self._idle_since = time.monotonic()
            self._busy.release()

    def _keep_alive(self) -> None:
        task = self._task
        if task is not None and task[0].is_active:
            task[0].publish_feedback(task[1])

    def _run_task(self, goal_handle: ServerGoalHandle) -> RunTask.Result:
        started = time.monotonic()
        try:
            instruction, task = self._task_for(goal_handle.request)
            if not self.execute_client.wait_for_server(timeout_sec=self.peer_timeout_s):
                raise PeerTimeoutError(
                    f"action {self.resolve_topic_name('execute_subgoal')} not available: "
                    f"is {self.world.executor} running?"
                )
            self._wait_for_feedback_topic()
        except (PeerTimeoutError, ValueError) as err:
            goal_handle.abort()
            self.get_logger().error(str(err))
            return RunTask.Result(success=False, subgoals_executed=0, message=str(err))
        self.get_logger().info(f"task: {instruction!r}")
        self.instruction_pub.publish(String(data=instruction))

        executed = 0

        def on_event(index: int, subgoal: Subgoal, record: StepRecord | None) -> None:
            nonlocal executed
            status = "planned" if record is None else ("succeeded" if record.success else "failed")
            goal_handle.publish_feedback(RunTask.Feedback(index=index, subgoal=str(subgoal), status=status))
            self._task = (goal_handle, RunTask.Feedback(index=index, subgoal=str(subgoal), status="running"))
            if record is not None:
                executed += 1
                text = f"[{index}] {subgoal}: {status}: {record.message}"
                log_outcome(self.get_logger(), record.success, text)

        caller_lost: list[str] = []  # why the task stops for a caller that went quiet

        def canceled() -> bool:
            silent = self.caller_watch.silent_for(goal_handle.goal_id, time.monotonic())
            if silent is not None and silent > self.caller_timeout_s and not caller_lost:
                caller_lost.append(f"task stopped: its caller sent no heartbeat for {silent:.2f} s (gone?)")
            return goal_handle.is_cancel_requested or self._stopping.is_set() or bool(caller_lost)

        seen: list[Any] = [None]  # the observation the planner planned from
        observed = [started]  # when it came: the decision runs from there to execute()

        def observe() -> Any:
            if canceled():
                raise TaskCanceledError
            if time.monotonic() - started > self.max_task_s:
                raise BudgetError(f"task over its budget: {self.max_task_s} s (max_task_s)")
            self.estop.check("starting a subgoal")
            seen[0] = self._next_observation(started)
            observed[0] = time.monotonic()
            return seen[0]

        def execute(subgoal: Subgoal) -> StepRecord:
            decided_in = time.monotonic() - observed[0]
            if decided_in > self.max_decision_s:
                raise BudgetError(
                    f"decision over its budget: {clip(str(subgoal))} took {decided_in:.1f} s, "
                    f"max_decision_s {self.max_decision_s} s"
                )
            try:
                return self._execute_subgoal(subgoal, seen[0], executed, canceled)
            except ExecutorLostError:
                raise  # the task ends: replanning would send the next subgoal to a dead server
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
                ended=self.world.ended,
            )
        except (PeerTimeoutError, TaskCanceledError, EmergencyStopError, BudgetError) as err:
            if isinstance(err, TaskCanceledError) and goal_handle.is_cancel_requested:
                goal_handle.canceled()
                message = "task canceled"
            else:  # a goal nobody canceled cannot end as canceled: a shutdown or a lost caller aborts it
                goal_handle.abort()
                stopped = caller_lost[0] if caller_lost else "task stopped: the planner is shutting down"
                message = stopped if isinstance(err, TaskCanceledError) else str(err)
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
