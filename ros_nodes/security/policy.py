"""An SROS2 policy file (format 0.2.0, the one `ros2 security generate_artifacts -p` reads) as DDS grants.

Each `<enclave path>` holds `<profile ns node>`s listing ROS names: `<topics publish|subscribe>`,
`<services reply|request>` (server | client) and `<actions execute|call>` (server | client). Names resolve as
ROS resolves them: absolute as written, `~/x` under the node, others under `ns`. XInclude is expanded first,
so common profiles (a node's parameter services, /rosout) live in one file, as in SROS2's examples.
Permissions are default-deny, so only ALLOW is taken: a DENY rule is an error rather than a silent no-op.
"""

from __future__ import annotations

import re
from pathlib import Path

from lxml import etree

from ros_nodes.security.dds_names import Grants
from ros_nodes.security.errors import SecurityError
from ros_nodes.security.schemas import validate

VERSION = "0.2.0"
_NAMESPACE = re.compile(r"(/[A-Za-z_][A-Za-z0-9_]*)+")
_RELATIVE = re.compile(r"~?[A-Za-z_/][A-Za-z0-9_/]*")

# (element, attribute) -> what a qualifier there grants, in rmw terms.
_RULES = {
    ("topics", "publish"): Grants.publishes,
    ("topics", "subscribe"): Grants.subscribes,
    ("services", "reply"): Grants.serves,
    ("services", "request"): Grants.calls,
    ("actions", "execute"): Grants.executes,
    ("actions", "call"): Grants.sends,
}


def read_policy(path: Path) -> dict[str, Grants]:
    """Enclave path -> its grants in DDS topic names; SecurityError names the file and what is wrong."""
    try:
        tree = etree.parse(str(path))
        tree.xinclude()
    except (OSError, etree.XMLSyntaxError, etree.XIncludeError) as error:
        raise SecurityError(f"{path}: cannot read the policy: {error}") from None
    validate(tree, "policy.xsd", path)
    root = tree.getroot()
    if root.get("version") != VERSION:
        raise SecurityError(f"{path}: policy version {root.get('version')!r}; this reads version {VERSION}")
    enclaves: dict[str, Grants] = {}
    for enclave in root.iterfind("enclaves/enclave"):
        where = f"{path}:{enclave.sourceline}"
        name = enclave.get("path", "")
        if not _NAMESPACE.fullmatch(name):
            raise SecurityError(f"{where}: enclave path {name!r} is not a valid absolute ROS namespace")
        if name in enclaves:
            raise SecurityError(f"{where}: enclave {name} appears twice")
        grants = enclaves[name] = Grants()
        for profile in enclave.iterfind("profiles/profile"):
            _add_profile(grants, profile, path)
    return enclaves


def _add_profile(grants: Grants, profile: etree._Element, path: Path) -> None:
    namespace, node = profile.get("ns", ""), profile.get("node", "")
    if namespace != "/" and not _NAMESPACE.fullmatch(namespace):
        raise SecurityError(f"{path}:{profile.sourceline}: ns {namespace!r} is not an absolute ROS namespace")
    for rules in profile:
        if not isinstance(rules.tag, str):
            continue  # a comment
        for attribute, qualifier in rules.attrib.items():
            if attribute.startswith("{"):
                continue  # xml:base, where XInclude brought the rules in
            if qualifier != "ALLOW":
                raise SecurityError(
                    f"{path}:{rules.sourceline}: {attribute}={qualifier!r}: permissions deny whatever is not "
                    "allowed, so list only what is allowed"
                )
            grant = _RULES[rules.tag, attribute]
            for item in rules:
                if isinstance(item.tag, str):
                    grant(grants, _resolve(item.text or "", namespace, node, f"{path}:{item.sourceline}"))


def _resolve(name: str, namespace: str, node: str, where: str) -> str:
    """A name of the policy as the node would resolve it (no remapping)."""
    name = name.strip()
    if name.startswith("/"):
        resolved = name
    elif _RELATIVE.fullmatch(name):
        base = namespace.rstrip("/")
        resolved = f"{base}/{node}{name[1:]}" if name.startswith("~") else f"{base}/{name}"
    else:
        resolved = ""
    if not _NAMESPACE.fullmatch(resolved):
        raise SecurityError(f"{where}: {name!r} is not a ROS name (the policy lists exact names)")
    return resolved
