"""A keystore made by the real commands' code in a temp folder, with the real graph's policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from hgpo.security import REPO_POLICY
from ros_nodes.security.keystore import create_enclaves, create_keystore


@pytest.fixture
def domain() -> int:
    """The ROS_DOMAIN_ID the test keystore is made for."""
    return 17


@pytest.fixture
def keystore(tmp_path: Path, domain: int) -> Path:
    root = tmp_path / "keystore"
    create_keystore(root, domain)
    create_enclaves(root, REPO_POLICY)
    return root
