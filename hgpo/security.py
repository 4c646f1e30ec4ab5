"""`hgpo security create-keystore|create-enclaves`: an SROS2 keystore for `hgpo launch real security:=true`.

The same files as `ros2 security create_keystore` and `ros2 security generate_artifacts -p POLICY` make
(docs/security.md), made here without the sros2 package, which PyPI does not carry.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

from hgpo.cli import Commands, dispatch

REPO_POLICY = Path(__file__).resolve().parents[1] / "launch" / "security" / "policy.xml"

COMMANDS: Commands = {
    "create-keystore": (
        "hgpo.security:create_keystore_main",
        "a new keystore: CA, and governance that encrypts discovery and every topic",
    ),
    "create-enclaves": (
        "hgpo.security:create_enclaves_main",
        "an enclave per node of the real graph (and the operator's), with signed permissions from the policy",
    ),
}


def main(argv: list[str]) -> int:
    return dispatch("hgpo security", COMMANDS, argv)


def default_policy() -> Path:
    """The policy the hgpo package installs ($(find-pkg-share hgpo)/security), else the checkout's."""
    from ros_nodes.launcher.errors import LaunchError
    from ros_nodes.launcher.packages import package_share

    with contextlib.suppress(LaunchError):
        installed = package_share("hgpo") / "security" / "policy.xml"
        if installed.is_file():
            return installed
    return REPO_POLICY


def _make(prog: str, make: Callable[[], list[Path]], root: Path, title: str, then: str) -> int:
    """Run `make`, list the files it wrote under `root` and say what comes next; exit 2 on a SecurityError."""
    from ros_nodes.security.errors import SecurityError

    try:
        written = make()
    except SecurityError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    print(title)
    for path in written:
        print(f"  {path.relative_to(root)}" + (f" -> {os.readlink(path)}" if path.is_symlink() else ""))
    print(then)
    return 0


def create_keystore_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="hgpo security create-keystore",
        description="Make an SROS2 keystore in DIR: one CA (identity and permissions CA, as SROS2), and "
        "governance.xml signed by it that admits only authenticated participants and encrypts discovery, "
        "liveliness and every topic, with access control on each. Then run create-enclaves.",
    )
    parser.add_argument("keystore", type=Path, metavar="DIR", help="the keystore folder (made if missing)")
    parser.add_argument(
        "--domain-id",
        type=int,
        default=int(os.environ.get("ROS_DOMAIN_ID") or 0),
        help="the ROS_DOMAIN_ID the graph runs in (default: $ROS_DOMAIN_ID, else 0): governance and "
        "permissions name it, and a node on another domain cannot join",
    )
    args = parser.parse_args(argv)
    from ros_nodes.security.keystore import create_keystore

    return _make(
        parser.prog,
        lambda: create_keystore(args.keystore, args.domain_id),
        args.keystore,
        f"keystore {args.keystore} for domain {args.domain_id}:",
        f"next: hgpo security create-enclaves {args.keystore}",
    )


def create_enclaves_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="hgpo security create-enclaves",
        description="Make an enclave for each enclave of an SROS2 policy in the keystore DIR: a key and a "
        "certificate (CN=ENCLAVE) signed by the CA, and permissions.xml (exactly the topics, services and "
        "actions the policy allows, everything else denied) signed as S/MIME by the CA. Existing keys are "
        "kept; permissions are rewritten, so run it again after changing the policy.",
    )
    parser.add_argument("keystore", type=Path, metavar="DIR", help="a keystore made by create-keystore")
    parser.add_argument(
        "--policy",
        type=Path,
        default=None,
        help="SROS2 policy file, format 0.2.0 (default: the real graph's, $(find-pkg-share hgpo)/security/"
        "policy.xml, which is launch/security/policy.xml of the repository)",
    )
    args = parser.parse_args(argv)
    from ros_nodes.security.keystore import create_enclaves

    policy = args.policy or default_policy()
    return _make(
        parser.prog,
        lambda: create_enclaves(args.keystore, policy),
        args.keystore,
        f"enclaves of {policy} in {args.keystore}:",
        f"launch: hgpo launch real security:=true keystore:={args.keystore}",
    )
