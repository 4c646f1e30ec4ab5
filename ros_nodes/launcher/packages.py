"""Package lookups through the ament index, in colcon's install layout (see tools/build_ros_workspace.py)."""

from __future__ import annotations

import os
from pathlib import Path

from ament_index_python.packages import PackageNotFoundError, get_package_prefix

from ros_nodes.launcher.errors import LaunchError

_SETUP_HINT = "run `make setup` to build and register the workspace"


def package_prefix(package: str) -> Path:
    """Install prefix of `package`, or an error that says where the index was searched."""
    searched = os.environ.get("AMENT_PREFIX_PATH")
    if not searched:
        raise LaunchError(f"cannot look up package '{package}': AMENT_PREFIX_PATH is not set; {_SETUP_HINT}")
    try:
        return Path(get_package_prefix(package))
    except PackageNotFoundError:
        raise LaunchError(
            f"package '{package}' not found in the ament index of AMENT_PREFIX_PATH={searched}; {_SETUP_HINT}"
        ) from None
    except ValueError as error:
        raise LaunchError(str(error)) from None


def package_share(package: str) -> Path:
    """`$(find-pkg-share PKG)`: the package's share folder."""
    return package_prefix(package) / "share" / package


def package_executable(package: str, executable: str) -> Path:
    """`<prefix>/lib/<pkg>/<exec>`, where colcon installs a package's node executables."""
    libexec = package_prefix(package) / "lib" / package
    path = libexec / executable
    if path.is_file():
        if os.access(path, os.X_OK):
            return path
        raise LaunchError(
            f"{path} (executable '{executable}' of package '{package}') is not executable; {_SETUP_HINT}"
        )
    found = sorted(p.name for p in libexec.iterdir()) if libexec.is_dir() else []
    listing = f"executables there: {', '.join(found)}" if found else "that folder has no executables"
    raise LaunchError(
        f"executable '{executable}' of package '{package}' not found at {path} ({listing}); {_SETUP_HINT}"
    )
