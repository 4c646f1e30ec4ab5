"""run_task: send one instruction to the planner's `RunTask`, print each subgoal, exit 0 on success.

Exit codes: 0 the task succeeded, 1 it failed, 2 no planner or the task was refused, 3 the planner stopped
answering (no feedback, "running" keep-alives included, for planner_silence_s: killed) or gave no result in
task_timeout_s. `make sim` launches it beside the graph with on_exit="shutdown", so the launcher's exit code
is the task's.
"""

from __future__ import annotations

import sys
import time
import uuid

import rclpy
from hgpo_msgs.action import RunTask
from rclpy.action import ActionClient
from rclpy.action.client import ClientGoalHandle
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from unique_identifier_msgs.msg import UUID

from policies.planning import format_step
from ros_nodes.background_spin import BackgroundSpin
from ros_nodes.liveness import ClientHeartbeat, ServerWatch, wait_for_live_result
from ros_nodes.node_main import Parameters
from ros_nodes.waiting import PeerTimeoutError, send_goal, wait_for

RESEND_S, ACCEPTANCE_TRIES = 1.0, 30  # a planner that just started drops goals sent before it matched us
FEEDBACK_DISCOVERY_S = 10.0  # before its first feedback, the planner's feedback topic may not be matched yet


class RunTaskClient(Node):
    def __init__(self) -> None:
        super().__init__("run_task")
        p = Parameters(self)
        self.goal = RunTask.Goal(
            instruction=p(
                "instruction", "", "what to do; empty = the instruction of the task set up by reset"
            ),
            task=p("task", "stack", "task to set up before planning"),
            reset=p("reset", True, "reset the scene to task/seed first"),
            seed=p.seed("seed", "scene seed"),
        )
        self.server_timeout_s = p.positive("server_timeout_s", 60.0, "wait this long for the planner (s)")
        self.task_timeout_s = p.positive("task_timeout_s", 600.0, "give up on the task after this long (s)")
        self.planner_silence_s = p.non_negative(
            "planner_silence_s",
            1.0,
            "a planner without feedback this long mid-task is gone: exit 3 (s; 0: off)",
        )
        self.watch = ServerWatch(self.planner_silence_s, FEEDBACK_DISCOVERY_S)
        self.heartbeat = ClientHeartbeat(self, "run_task")  # the planner ends the task of a dead caller
        self.goal_id = UUID(uuid=list(uuid.uuid4().bytes))
        self.client: ActionClient[RunTask.Goal, RunTask.Result, RunTask.Feedback] = ActionClient(
            self, RunTask, "run_task"
        )
        self._steps: dict[int, float] = {}
        self._handle: ClientGoalHandle | None = None

    def cancel(self) -> None:
        """Cancel the running task (Ctrl-C), waiting briefly for the planner to confirm."""
        if self._handle is None:
            return
        print("run_task: canceling the task", file=sys.stderr, flush=True)
        try:
            wait_for(self._handle.cancel_goal_async(), 2.0, "planner")
        except PeerTimeoutError as err:
            print(f"run_task: {err}", file=sys.stderr, flush=True)

    def _beat(self) -> bool:
        self.heartbeat.beat(self.goal_id)
        return False  # never gives up: wait_for_live_result and send_goal have their deadlines

    def _on_feedback(self, msg: RunTask.Impl.FeedbackMessage) -> None:
        self.watch.heard()
        fb = msg.feedback
        now = time.monotonic()
        if fb.status == "running":  # a keep-alive
            return
        if fb.status == "planned":
            self._steps[fb.index] = now
            print(format_step(fb.index, fb.subgoal, fb.status), flush=True)
        else:
            print(
                format_step(fb.index, fb.subgoal, fb.status, now - self._steps.get(fb.index, now)), flush=True
            )

    def run(self) -> int:
        """Send the task and report it; called from the main thread while an executor spins elsewhere."""
        if not self.client.wait_for_server(timeout_sec=self.server_timeout_s):
            print(
                f"run_task: no RunTask server on {self.resolve_topic_name('run_task')} after "
                f"{self.server_timeout_s} s: is the planner running?",
                file=sys.stderr,
                flush=True,
            )
            return 2
        started = time.monotonic()
        what = self.goal.instruction or f"task {self.goal.task!r} (seed {self.goal.seed})"
        print(f"Running {what}", flush=True)
        try:
            handle = send_goal(
                self.client,
                self.goal,
                RESEND_S,
                "planner",
                self._on_feedback,
                give_up=self._beat,
                goal_id=self.goal_id,
                attempts=ACCEPTANCE_TRIES,
            )
            self._handle = handle
            if not handle.accepted:
                print("run_task: the planner rejected the task", file=sys.stderr, flush=True)
                return 2
            result = wait_for_live_result(
                handle.get_result_async(), self.watch, self.task_timeout_s, "the planner", self._beat
            ).result
        except PeerTimeoutError as err:
            print(f"run_task: {err}", file=sys.stderr, flush=True)
            return 3
        print("-" * 60, flush=True)
        verdict = "SUCCESS" if result.success else "FAILURE"
        took = time.monotonic() - started
        print(
            f"{verdict}: {result.subgoals_executed} subgoals in {took:.1f} s — {result.message}", flush=True
        )
        return 0 if result.success else 1


def main() -> int:
    # Ctrl-C raises KeyboardInterrupt here instead of shutting the context down at once, so that the
    # running task can still be canceled: on a real arm, stopping the client must stop the task.
    rclpy.init(args=sys.argv, signal_handler_options=SignalHandlerOptions.NO)
    node: RunTaskClient | None = None
    spin: BackgroundSpin | None = None
    code = 130
    try:
        node = RunTaskClient()
        spin = BackgroundSpin(node)
        code = node.run()
    except (ValueError, ParameterException) as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        code = 2
    except KeyboardInterrupt:
        if node is not None:
            node.cancel()
    finally:
        if spin is not None:
            spin.close()
        rclpy.try_shutdown()
    return code


if __name__ == "__main__":
    sys.exit(main())
