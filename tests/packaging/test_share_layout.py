"""The `hgpo` share folder that `make setup` lays out in the venv, looked up as `ros2 launch hgpo
sim.launch.xml` looks it up: ros2launch walks the package's share folder with `os.walk`, which does not
follow links to folders (they hid every launch file before)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _install_nodes_package(prefix: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "build_ros_workspace", REPO / "tools" / "build_ros_workspace.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.install_nodes_package(prefix)


def _walked(share: Path) -> set[str]:
    return {
        str((Path(folder) / name).relative_to(share))
        for folder, _dirs, files in os.walk(share)
        for name in files
    }


def test_os_walk_of_the_share_folder_finds_every_launch_and_config_file(tmp_path: Path) -> None:
    _install_nodes_package(tmp_path)
    share = tmp_path / "share" / "hgpo"
    found = _walked(share)
    launch_files = {f"launch/{p.name}" for p in (REPO / "launch").glob("*.launch.xml")}
    assert {"launch/sim.launch.xml", "launch/real.launch.xml"} <= launch_files <= found
    assert {f"config/{p.name}" for p in (REPO / "launch" / "config").glob("*.yaml")} <= found
    assert "package.xml" in found and "policies/skills/reach/policy.onnx" in found
    assert (share / "launch" / "sim.launch.xml").resolve() == REPO / "launch" / "sim.launch.xml"
    assert not any(path.is_symlink() and path.is_dir() for path in share.rglob("*"))

    _install_nodes_package(tmp_path)  # `make setup` again: the same layout, the old links replaced
    assert _walked(share) == found
