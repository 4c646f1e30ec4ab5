"""The `hgpo` ROS package as colcon builds it (ros_nodes/CMakeLists.txt, ament_cmake): configured, built
and installed with CMake against the venv's ament_cmake, the steps colcon runs for an ament_cmake package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("cmake") is None:
        pytest.skip("no cmake on this machine")
    venv = Path(sys.prefix)
    if not (venv / "share" / "ament_cmake_python").is_dir():
        pytest.fail("ament_cmake_python not in this venv: run `make setup`")
    build, prefix = tmp_path_factory.mktemp("build"), tmp_path_factory.mktemp("install")
    env = dict(os.environ, CMAKE_PREFIX_PATH=str(venv), AMENT_PREFIX_PATH=str(venv))
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    for command in (
        [
            "cmake",
            "-S",
            str(REPO / "ros_nodes"),
            "-B",
            str(build),
            f"-DCMAKE_INSTALL_PREFIX={prefix}",
            f"-DPython3_EXECUTABLE={sys.executable}",
        ],
        ["cmake", "--build", str(build)],
        ["cmake", "--install", str(build)],
    ):
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return prefix


def test_a_node_executable_per_entry_point(install: Path) -> None:
    nodes = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]["hgpo.nodes"]
    lib = install / "lib" / "hgpo"
    assert sorted(p.name for p in lib.iterdir()) == sorted(nodes)
    assert all(os.access(lib / name, os.X_OK) for name in nodes)
    assert "from ros_nodes.arm_bridge import main" in (lib / "arm_bridge").read_text()


def test_launch_and_config_files_where_ros2_launch_looks(install: Path) -> None:
    share = install / "share" / "hgpo"
    assert {p.name for p in (share / "launch").iterdir()} == {
        p.name for p in (REPO / "launch").glob("*.launch.xml")
    }
    assert {p.name for p in (share / "config").iterdir()} == {
        p.name for p in (REPO / "launch" / "config").iterdir()
    }
    security = REPO / "launch" / "security"
    assert {p.relative_to(share / "security") for p in (share / "security").rglob("*.xml")} == {
        p.relative_to(security) for p in security.rglob("*.xml")
    }
    assert (share / "package.xml").is_file()
    assert (install / "share" / "ament_index" / "resource_index" / "packages" / "hgpo").is_file()


def test_installed_python_packages_import_without_the_checkout(install: Path, tmp_path: Path) -> None:
    site = next(install.glob("lib/python3*/site-packages"))
    code = (
        "import ros_nodes.arm_bridge, ros_nodes.launcher.cli, sim.tabletop, policies, hgpo.cli, ros_nodes; "
        "from ros_nodes.security import documents; documents.governance(0); "  # the schemas came along
        "print(ros_nodes.__file__)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(site)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(str(site))
