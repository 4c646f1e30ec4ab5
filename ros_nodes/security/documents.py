"""The two DDS-Security XML documents of a keystore, built element by element, checked against their schemas.

Governance: the domain admits only authenticated participants that its permissions CA lets join, and protects
discovery, liveliness, every RTPS message and every topic by encryption (AES-GCM: signed and encrypted), with
read and write access control on every topic. Permissions: per enclave, the DDS topics it may write and read,
everything else denied, valid while its certificate is.
"""

from __future__ import annotations

import datetime

from lxml import etree

from ros_nodes.security.dds_names import ROS_DISCOVERY_TOPIC, Grants
from ros_nodes.security.schemas import validate

_XSI = "http://www.w3.org/2001/XMLSchema-instance"
_OMG = "http://www.omg.org/spec/DDS-SECURITY/20170901/"
PROTECTION = "ENCRYPT"


def _root(schema_file: str) -> etree._Element:
    root = etree.Element("dds", nsmap={"xsi": _XSI})
    root.set(f"{{{_XSI}}}noNamespaceSchemaLocation", _OMG + schema_file)
    return root


def _add(parent: etree._Element, tag: str, text: str | None = None) -> etree._Element:
    element = etree.SubElement(parent, tag)
    element.text = text
    return element


def _domains(parent: etree._Element, domain_id: int) -> None:
    _add(_add(parent, "domains"), "id", str(domain_id))


def _serialize(root: etree._Element, schema: str, what: str) -> bytes:
    tree = etree.ElementTree(root)
    validate(tree, schema, what)
    return etree.tostring(tree, xml_declaration=True, encoding="UTF-8", pretty_print=True)


def governance(domain_id: int) -> bytes:
    root = _root("omg_shared_ca_governance.xsd")
    rule = _add(_add(root, "domain_access_rules"), "domain_rule")
    _domains(rule, domain_id)
    _add(rule, "allow_unauthenticated_participants", "false")
    _add(rule, "enable_join_access_control", "true")
    for kind in ("discovery", "liveliness", "rtps"):
        _add(rule, f"{kind}_protection_kind", PROTECTION)
    topic = _add(_add(rule, "topic_access_rules"), "topic_rule")
    _add(topic, "topic_expression", "*")
    for flag in ("discovery", "liveliness"):
        _add(topic, f"enable_{flag}_protection", "true")
    for flag in ("read", "write"):
        _add(topic, f"enable_{flag}_access_control", "true")
    _add(topic, "metadata_protection_kind", PROTECTION)
    _add(topic, "data_protection_kind", PROTECTION)
    return _serialize(root, "governance.xsd", "governance.xml")


def permissions(
    enclave: str, grants: Grants, domain_id: int, not_before: datetime.datetime, not_after: datetime.datetime
) -> bytes:
    """One grant for CN=`enclave`: its topics allowed (sorted, as SROS2 sorts them), everything else denied.

    rmw_fastrtps's own graph topic (ros_discovery_info) is allowed both ways in a rule of its own, as SROS2
    adds it for that rmw: without it no node could learn the graph.
    """
    root = _root("omg_shared_ca_permissions.xsd")
    grant = _add(_add(root, "permissions"), "grant")
    grant.set("name", enclave)
    _add(grant, "subject_name", f"CN={enclave}")
    validity = _add(grant, "validity")
    _add(validity, "not_before", not_before.isoformat())
    _add(validity, "not_after", not_after.isoformat())
    for publish, subscribe in (
        (grants.publish, grants.subscribe),
        ({ROS_DISCOVERY_TOPIC}, {ROS_DISCOVERY_TOPIC}),
    ):
        rule = _add(grant, "allow_rule")
        _domains(rule, domain_id)
        for tag, topics in (("publish", publish), ("subscribe", subscribe)):
            if topics:
                listed = _add(_add(rule, tag), "topics")
                for name in sorted(topics):
                    _add(listed, "topic", name)
    _add(grant, "default", "DENY")
    return _serialize(root, "permissions.xsd", f"permissions.xml of {enclave}")
