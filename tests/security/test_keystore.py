"""The keystore's files as DDS-Security reads them: certificates chain to the CA, S/MIME signatures verify
with OpenSSL (the library Fast DDS verifies them with), documents are valid against the schemas."""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from cryptography import x509
from lxml import etree

from hgpo.security import REPO_POLICY
from hgpo.security import main as security_main
from ros_nodes.security.errors import SecurityError
from ros_nodes.security.keystore import create_enclaves, create_keystore, enclave_dir
from ros_nodes.security.policy import read_policy
from ros_nodes.security.schemas import validate

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
ENCLAVE_FILES = (
    "cert.pem",
    "key.pem",
    "identity_ca.cert.pem",
    "permissions_ca.cert.pem",
    "governance.p7s",
    "permissions.xml",
    "permissions.p7s",
)


def openssl(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["openssl", *args], capture_output=True, check=False)


def smime_content(signed: Path, ca: Path) -> bytes:
    """What `openssl smime -verify` accepts as signed by `ca`: the document, lines as LF again."""
    verified = openssl("smime", "-verify", "-text", "-in", str(signed), "-CAfile", str(ca))
    assert verified.returncode == 0, verified.stderr.decode()
    return verified.stdout.replace(b"\r\n", b"\n")


def test_layout_is_sros2s(keystore: Path) -> None:
    for role in ("identity_ca", "permissions_ca"):
        assert (keystore / "public" / f"{role}.cert.pem").resolve() == keystore / "public" / "ca.cert.pem"
        assert (keystore / "private" / f"{role}.key.pem").resolve() == keystore / "private" / "ca.key.pem"
    assert (keystore / "enclaves" / "governance.xml").is_file()
    for enclave in read_policy(REPO_POLICY):
        folder = enclave_dir(keystore, enclave)
        assert sorted(p.name for p in folder.iterdir()) == sorted(ENCLAVE_FILES)
        assert (folder / "governance.p7s").resolve() == keystore / "enclaves" / "governance.p7s"
        assert (folder / "permissions_ca.cert.pem").resolve() == keystore / "public" / "ca.cert.pem"
        assert stat.S_IMODE((folder / "key.pem").stat().st_mode) == 0o600
    assert stat.S_IMODE((keystore / "private" / "ca.key.pem").stat().st_mode) == 0o600


def test_every_enclave_certificate_chains_to_the_identity_ca_with_its_enclave_as_subject(
    keystore: Path, domain: int
) -> None:
    ca = keystore / "public" / "identity_ca.cert.pem"
    for enclave in read_policy(REPO_POLICY):
        cert_path = enclave_dir(keystore, enclave) / "cert.pem"
        verified = openssl("verify", "-CAfile", str(ca), str(cert_path))
        assert verified.returncode == 0, verified.stderr.decode()
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        assert cert.subject.rfc4514_string() == f"CN={enclave}"
    stranger = keystore.parent / "stranger"
    create_keystore(stranger, domain)  # another CA: its certificate must not pass for ours
    assert openssl("verify", "-CAfile", str(stranger / "public" / "ca.cert.pem"), str(cert_path)).returncode


def test_governance_and_permissions_are_signed_by_the_permissions_ca(keystore: Path) -> None:
    ca = keystore / "public" / "permissions_ca.cert.pem"
    governance = keystore / "enclaves" / "governance"
    assert smime_content(governance.with_suffix(".p7s"), ca) == governance.with_suffix(".xml").read_bytes()
    for enclave in read_policy(REPO_POLICY):
        folder = enclave_dir(keystore, enclave)
        assert smime_content(folder / "permissions.p7s", ca) == (folder / "permissions.xml").read_bytes()


def test_a_tampered_permissions_file_fails_verification(keystore: Path) -> None:
    signed = enclave_dir(keystore, "/hgpo/planner") / "permissions.p7s"
    text = signed.read_bytes()
    assert b"rt/hgpo/subgoal</topic>" in text
    signed.write_bytes(text.replace(b"rt/hgpo/subgoal</topic>", b"rt/hgpo/cmd_twist</topic>"))
    tampered = openssl(
        "smime", "-verify", "-in", str(signed), "-CAfile", str(keystore / "public" / "ca.cert.pem")
    )
    assert tampered.returncode != 0 and b"digest failure" in tampered.stderr.lower()


def test_documents_are_valid_against_the_dds_security_schemas_and_name_the_domain(
    keystore: Path, domain: int
) -> None:
    governance = etree.parse(str(keystore / "enclaves" / "governance.xml"))
    validate(governance, "governance.xsd", "governance.xml")
    rule = governance.find("domain_access_rules/domain_rule")
    assert rule.findtext("domains/id") == str(domain)
    assert rule.findtext("allow_unauthenticated_participants") == "false"
    assert rule.findtext("enable_join_access_control") == "true"
    assert {rule.findtext(f"{k}_protection_kind") for k in ("discovery", "liveliness", "rtps")} == {"ENCRYPT"}
    topic = rule.find("topic_access_rules/topic_rule")
    assert topic.findtext("topic_expression") == "*"
    assert topic.findtext("metadata_protection_kind") == topic.findtext("data_protection_kind") == "ENCRYPT"
    for enclave in read_policy(REPO_POLICY):
        folder = enclave_dir(keystore, enclave)
        permissions = etree.parse(str(folder / "permissions.xml"))
        validate(permissions, "permissions.xsd", enclave)
        (grant,) = permissions.findall("permissions/grant")
        assert grant.get("name") == enclave and grant.findtext("subject_name") == f"CN={enclave}"
        assert grant.findtext("default") == "DENY"
        assert {d.text for d in grant.iterfind("*/domains/id")} == {str(domain)}
        cert = x509.load_pem_x509_certificate((folder / "cert.pem").read_bytes())
        assert grant.findtext("validity/not_before") == cert.not_valid_before_utc.isoformat()
        assert grant.findtext("validity/not_after") == cert.not_valid_after_utc.isoformat()


@pytest.mark.parametrize(
    ("path", "old", "new", "expected"),
    [
        (
            "governance",
            b"<data_protection_kind>ENCRYPT",
            b"<data_protection_kind>ENCRYPT_WITH_ORIGIN_AUTHENTICATION",
            "data_protection_kind",
        ),
        (
            "governance",
            b"<enable_join_access_control>true",
            b"<enable_join_access_control>yes",
            "enable_join_access_control",
        ),
        ("permissions", b"<default>DENY</default>", b"", "grant.: Missing child element"),
        ("permissions", b"<not_after>", b"<not_after>soon", "not_after"),
    ],
)
def test_the_schemas_reject_what_dds_security_would(
    keystore: Path, path: str, old: bytes, new: bytes, expected: str
) -> None:
    file = (
        keystore / "enclaves" / ("governance.xml" if path == "governance" else "hgpo/planner/permissions.xml")
    )
    text = file.read_bytes()
    assert old in text
    with pytest.raises(SecurityError, match=expected):
        validate(etree.ElementTree(etree.fromstring(text.replace(old, new, 1))), f"{path}.xsd", file)


def test_enclaves_are_made_again_keeping_keys_and_rewriting_permissions(
    keystore: Path, tmp_path: Path
) -> None:
    folder = enclave_dir(keystore, "/hgpo/controller")
    key, cert = (folder / "key.pem").read_bytes(), (folder / "cert.pem").read_bytes()
    (folder / "permissions.xml").write_text("stale")
    written = create_enclaves(keystore, REPO_POLICY)
    assert (folder / "key.pem").read_bytes() == key and (folder / "cert.pem").read_bytes() == cert
    assert folder / "key.pem" not in written and folder / "permissions.xml" in written
    assert b"rt/hgpo/cmd_twist" in (folder / "permissions.xml").read_bytes()


def test_errors_say_what_to_do(keystore: Path, tmp_path: Path, domain: int) -> None:
    with pytest.raises(SecurityError, match="is a keystore already"):
        create_keystore(keystore, domain)
    with pytest.raises(SecurityError, match="hgpo security create-keystore"):
        create_enclaves(tmp_path / "empty", REPO_POLICY)
    with pytest.raises(SecurityError, match="out of range"):
        create_keystore(tmp_path / "other", 233)


def test_the_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROS_DOMAIN_ID", "23")
    root = tmp_path / "ks"
    assert security_main(["create-keystore", str(root)]) == 0
    assert "for domain 23" in capsys.readouterr().out
    assert security_main(["create-enclaves", str(root)]) == 0
    out = capsys.readouterr().out
    assert "enclaves/hgpo/operator/permissions.p7s" in out and f"keystore:={root}" in out
    assert security_main(["create-keystore", str(root)]) == 2
    assert "is a keystore already" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        security_main(["create-enclaves", "--help"])
    assert "S/MIME" in capsys.readouterr().out
