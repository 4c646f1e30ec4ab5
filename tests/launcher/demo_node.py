"""A stand-in ROS node for the launcher tests: reads its --ros-args as rcl would and behaves as they say.

Parameters (-p NAME:=VALUE): wait_for=a,b (wait until those nodes are running), exit_code=N (then exit
with N), ignore_signals=true (ignore SIGINT and SIGTERM), spawn_child=true (start a grandchild that ignores
them). It prints its argv as JSON on stdout and a line on stderr, then writes DEMO_DIR/<name>.pid.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

STUBBORN = "import signal, time; [signal.signal(s, signal.SIG_IGN) for s in (2, 15)]; time.sleep(600)"


def ros_args(argv: list[str]) -> tuple[str, dict[str, str]]:
    name, params = Path(argv[0]).name, {}
    rest = [word for word in argv[argv.index("--ros-args") + 1 :] if word != "--ros-args"]
    for flag, value in zip(rest[::2], rest[1::2], strict=True):
        key, _, val = value.partition(":=")
        if flag == "-r" and key == "__node":
            name = val
        elif flag == "-p":
            params[key] = val
    return name, params


def write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.rename(path)


def main() -> int:
    name, params = ros_args(sys.argv)
    demo = Path(os.environ["DEMO_DIR"])

    def stop(signum: int, frame: object) -> None:
        print(f"{name} stopping on {signal.Signals(signum).name}", flush=True)
        sys.exit(0)

    handler = signal.SIG_IGN if params.get("ignore_signals") == "true" else stop
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, handler)
    if params.get("spawn_child") == "true":
        child = subprocess.Popen([sys.executable, "-c", STUBBORN])
        write_atomically(demo / f"{name}.child.pid", str(child.pid))
    print(json.dumps({"name": name, "argv": sys.argv[1:]}))
    print(f"{name} says hi on stderr", file=sys.stderr)
    write_atomically(demo / f"{name}.pid", str(os.getpid()))
    deadline = time.monotonic() + 30
    for other in filter(None, params.get("wait_for", "").split(",")):
        while not (demo / f"{other}.pid").exists():
            if time.monotonic() > deadline:
                return 99
            time.sleep(0.01)
    if "exit_code" in params:
        return int(params["exit_code"])
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
