"""Build and register the project's ROS 2 packages inside the virtual environment.

There is no colcon or ROS install here (see PLATFORM.md): rclpy and the message packages come as
PyPI wheels in the venv. This script does what `colcon build` would do for our two packages:

* `hgpo_msgs` (ament_cmake): rosidl-generated interfaces built with plain CMake into the venv.
* `hgpo` (the nodes): each entry point of the `hgpo.nodes` group becomes an executable under
  `<venv>/lib/hgpo/`, launch and config files are linked under `<venv>/share/hgpo/`, and the package
  is registered in the ament index, so `pkg="hgpo" exec="controller"` and `$(find-pkg-share hgpo)`
  resolve exactly as after a colcon install (with --symlink-install).

Each step is skipped when its inputs have not changed since the last run.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from importlib.metadata import entry_points
from pathlib import Path

import numpy

REPO = Path(__file__).resolve().parent.parent
MSGS_SRC = REPO / "hgpo_ws" / "src" / "hgpo_msgs"
NODES_PACKAGE = "hgpo"
NODE_ENTRY_POINT_GROUP = "hgpo.nodes"
# share/hgpo/<name> -> repository path, a link per file as a symlink install lays them out.
SHARED_PATHS = {
    "launch": "launch",
    "config": "launch/config",
    "security": "launch/security",  # the real graph's SROS2 policy
    "package.xml": "ros_nodes/package.xml",
    "policies": "policies/pretrained",  # the shipped skill policies, share/hgpo/policies/skills/<skill>/
}

# The wheels' generated CMake exports name the include dirs of the machine that built them.
_WHEEL_PY_INCLUDE = re.compile(r"/opt/python/cp3\d+-cp3\d+/include/python3\.\d+")
_WHEEL_NUMPY_INCLUDE = re.compile(
    r"/opt/python/cp3\d+-cp3\d+/lib/python3\.\d+/site-packages/numpy/[\w/]*include"
)


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(str(path.relative_to(REPO)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _up_to_date(stamp: Path, digest: str) -> bool:
    return stamp.exists() and stamp.read_text() == digest


def fix_wheel_cmake_exports(prefix: Path) -> int:
    """Point the wheels' rosidl Python exports at this interpreter's and numpy's include dirs."""
    py_include = sysconfig.get_paths()["include"]
    np_include = numpy.get_include()
    fixed = 0
    for path in prefix.glob("share/*/cmake/export_*__rosidl_generator_pyExport.cmake"):
        text = path.read_text()
        new = _WHEEL_NUMPY_INCLUDE.sub(np_include, _WHEEL_PY_INCLUDE.sub(py_include, text))
        if new != text:
            path.write_text(new)
            fixed += 1
    return fixed


def build_msgs(prefix: Path, build_dir: Path) -> None:
    sources = [p for p in MSGS_SRC.rglob("*") if p.is_file()]
    stamp = prefix / "share" / "hgpo_msgs" / ".hgpo_build_stamp"
    digest = _digest(sources)
    if _up_to_date(stamp, digest):
        print("hgpo_msgs: up to date")
        return
    fixed = fix_wheel_cmake_exports(prefix)
    print(f"hgpo_msgs: building (rewrote {fixed} wheel CMake exports)")
    env = dict(os.environ, CMAKE_PREFIX_PATH=str(prefix), AMENT_PREFIX_PATH=str(prefix))
    env["PATH"] = f"{prefix / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    build_dir.mkdir(parents=True, exist_ok=True)
    configure = [
        "cmake",
        "-S",
        str(MSGS_SRC),
        "-B",
        str(build_dir),
        f"-DCMAKE_INSTALL_PREFIX={prefix}",
        "-DBUILD_TESTING=OFF",
        f"-DPython3_EXECUTABLE={sys.executable}",
        "-DCMAKE_BUILD_TYPE=Release",
    ]
    for cmd in (
        configure,
        ["cmake", "--build", str(build_dir), "-j2"],
        ["cmake", "--install", str(build_dir)],
    ):
        result = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            sys.stderr.write(result.stdout[-6000:] + result.stderr[-6000:])
            raise SystemExit(
                f"hgpo_msgs: `{' '.join(cmd[:3])} ...` failed (exit {result.returncode}); see above"
            )
    stamp.write_text(digest)
    print("hgpo_msgs: installed into", prefix)


def _node_entry_points() -> list:
    eps = sorted(entry_points(group=NODE_ENTRY_POINT_GROUP), key=lambda ep: ep.name)
    if not eps:
        raise SystemExit(
            f"no `{NODE_ENTRY_POINT_GROUP}` entry points: is the project installed (pip install -e .)?"
        )
    return eps


def _link_files(target: Path, link: Path) -> None:
    """A link per file in real folders, as colcon's --symlink-install lays them out: ros2launch finds
    launch files by `os.walk` of the share folder, which does not follow a link to a folder."""
    if target.is_file():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)
        return
    for path in sorted(target.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            _link_files(path, link / path.relative_to(target))


def install_nodes_package(prefix: Path) -> None:
    """Lay out the `hgpo` ROS package the way colcon's --symlink-install does."""
    lib = prefix / "lib" / NODES_PACKAGE
    share = prefix / "share" / NODES_PACKAGE
    if lib.exists():
        shutil.rmtree(lib)
    lib.mkdir(parents=True)
    for ep in _node_entry_points():
        module, func = ep.value.split(":")
        exe = lib / ep.name
        exe.write_text(
            f"#!{sys.executable}\n"
            f'"""ROS 2 node `{NODES_PACKAGE}/{ep.name}`, made by tools/build_ros_workspace.py."""\n'
            f"import sys\n\nfrom {module} import {func}\n\nsys.exit({func}())\n"
        )
        exe.chmod(0o755)
    if share.exists():
        shutil.rmtree(share)
    for name, relative in SHARED_PATHS.items():
        _link_files(REPO / relative, share / name)
    marker = prefix / "share" / "ament_index" / "resource_index" / "packages" / NODES_PACKAGE
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    print(f"{NODES_PACKAGE}: {len(list(lib.iterdir()))} node executables in {lib}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--prefix", type=Path, default=Path(sys.prefix), help="install prefix (default: this venv)"
    )
    parser.add_argument("--build-dir", type=Path, default=REPO / "build" / "hgpo_msgs")
    args = parser.parse_args()
    build_msgs(args.prefix, args.build_dir)
    install_nodes_package(args.prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
