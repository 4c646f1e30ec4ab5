"""run_task: send one instruction to the planner's `RunTask`, print each subgoal, exit 0 on success.

`make sim` launches it beside the graph with on_exit="shutdown", so the launcher's exit code is the task's.
"""

from __future__ import annotations

import sys
import time

import rclpy
from hgpo_msgs.action import RunTask
from rclpy.action import ActionClient
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node

from policies.planning import format_step
from ros_nodes.node_main import Parameters


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
            seed=p("seed", 0, "scene seed"),
        )
        self.server_timeout_s = p("server_timeout_s", 60.0, "wait this long for the planner (s)")
        self.task_timeout_s = p("task_timeout_s", 600.0, "give up on the task after this long (s)")
        self.client: ActionClient[RunTask.Goal, RunTask.Result, RunTask.Feedback] = ActionClient(
            self, RunTask, "run_task"
        )
        self._steps: dict[int, float] = {}

    def _on_feedback(self, msg: RunTask.Impl.FeedbackMessage) -> None:
        fb = msg.feedback
        now = time.monotonic()
        if fb.status == "planned":
            self._steps[fb.index] = now
            print(format_step(fb.index, fb.subgoal, fb.status), flush=True)
        else:
            print(
                format_step(fb.index, fb.subgoal, fb.status, now - self._steps.get(fb.index, now)), flush=True
            )

    def run(self, executor: SingleThreadedExecutor) -> int:
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
        handle_future = self.client.send_goal_async(self.goal, feedback_callback=self._on_feedback)
        executor.spin_until_future_complete(handle_future, timeout_sec=self.server_timeout_s)
        handle = handle_future.result()
        if handle is None or not handle.accepted:
            print("run_task: the planner did not accept the task", file=sys.stderr, flush=True)
            return 2
        result_future = handle.get_result_async()
        executor.spin_until_future_complete(result_future, timeout_sec=self.task_timeout_s)
        response = result_future.result()
        if response is None:
            print(
                f"run_task: no result after {self.task_timeout_s} s; canceling", file=sys.stderr, flush=True
            )
            handle.cancel_goal_async()
            return 3
        result = response.result
        verdict = "SUCCESS" if result.success else "FAILURE"
        print("-" * 60, flush=True)
        print(
            f"{verdict}: {result.subgoals_executed} subgoals in {time.monotonic() - started:.1f} s — "
            f"{result.message}",
            flush=True,
        )
        return 0 if result.success else 1


def main() -> int:
    rclpy.init(args=sys.argv)
    executor = SingleThreadedExecutor()
    code = 130
    try:
        node = RunTaskClient()
        executor.add_node(node)
        code = node.run(executor)
        node.destroy_node()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        executor.shutdown()
        rclpy.try_shutdown()
    return code


if __name__ == "__main__":
    sys.exit(main())
