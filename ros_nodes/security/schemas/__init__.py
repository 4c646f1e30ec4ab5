"""XML schemas of the files a keystore holds, checked with lxml before anything is signed or trusted.

`governance.xsd` and `permissions.xsd` follow the OMG DDS-Security 1.1 schemas (omg_shared_ca_governance.xsd,
omg_shared_ca_permissions.xsd) for the elements those documents define; `policy.xsd` follows SROS2's policy
format 0.2.0, with XInclude's xml:base allowed where included profiles land.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from lxml import etree

from ros_nodes.security.errors import SecurityError

_HERE = Path(__file__).parent


@cache
def _schema(name: str) -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(_HERE / name)))


def validate(document: etree._ElementTree, schema: str, source: Path | str) -> None:
    """Raise SecurityError naming `source` and the first violation if `document` is not valid."""
    checker = _schema(schema)
    if not checker.validate(document):
        error = checker.error_log.last_error
        raise SecurityError(f"{source}: not valid against {schema}: line {error.line}: {error.message}")
