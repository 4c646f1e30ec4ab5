"""`make setup` (tools/setup.sh) stops at a failed pip install with a line saying what to do, and does not
stamp the requirements as installed, so the next `make setup` installs them again. (It used to swallow
pip's error, stamp the venv and fail later in the ROS build with a missing CMake package: a disk-full CI
run.)"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_failed_pip_install_stops_setup_without_stamping_the_venv(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"  # the world outside: pip on a full disk
    python.write_text(
        "#!/bin/sh\necho 'ERROR: Could not install packages due to an OSError: "
        "[Errno 28] No space left on device' >&2\nexit 1\n"
    )
    python.chmod(0o755)
    result = subprocess.run(
        ["bash", str(REPO / "tools" / "setup.sh")],
        env=dict(os.environ, VENV=str(venv)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "No space left on device" in result.stdout + result.stderr
    assert "`pip install -q -r requirements.txt` failed" in result.stderr
    assert "make setup" in result.stderr
    assert not (venv / ".hgpo-requirements").exists()
    assert "hgpo_msgs" not in result.stdout + result.stderr  # the ROS build never started
