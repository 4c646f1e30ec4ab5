"""An SROS2 keystore on disk, laid out as `ros2 security create_keystore` / `create_enclave` lay it out:

    KEYSTORE/public/ca.cert.pem           the CA's certificate (links: identity_ca, permissions_ca.cert.pem)
    KEYSTORE/private/ca.key.pem           the CA's key (identity_ca.key.pem, permissions_ca.key.pem: links)
    KEYSTORE/enclaves/governance.xml      and governance.p7s, signed by the permissions CA
    KEYSTORE/enclaves/ENCLAVE/            cert.pem, key.pem (CN=ENCLAVE, signed by the identity CA),
                                          permissions.xml and permissions.p7s, links to the CA certificates
                                          and to governance.p7s

One CA serves as identity and permissions CA, as in SROS2. rcl finds a node's enclave as
ROS_SECURITY_KEYSTORE/enclaves/ENCLAVE (the node's `--enclave`). private/ stays with whoever makes enclaves;
a robot needs public/ and enclaves/ only.
"""

from __future__ import annotations

import os
from pathlib import Path

from lxml import etree

from ros_nodes.security import documents
from ros_nodes.security.errors import SecurityError
from ros_nodes.security.pki import Identity, new_ca, new_identity, sign_smime
from ros_nodes.security.policy import read_policy

CA_NAME = "hgpo keystore CA"
ROLES = ("identity_ca", "permissions_ca")  # both the one CA, as links
PUBLIC, PRIVATE, ENCLAVES = "public", "private", "enclaves"


def is_keystore(root: Path) -> bool:
    """Everything rcl and the enclaves rely on is there (SROS2's is_valid_keystore)."""
    return (
        all(
            (root / PUBLIC / f"{role}.cert.pem").is_file() and (root / PRIVATE / f"{role}.key.pem").is_file()
            for role in ROLES
        )
        and (root / ENCLAVES / "governance.p7s").is_file()
    )


def create_keystore(root: Path, domain_id: int) -> list[Path]:
    """A new CA and the signed governance for `domain_id`; the files written. Refuses an existing keystore."""
    if is_keystore(root):
        raise SecurityError(f"{root} is a keystore already; make enclaves in it with create-enclaves")
    if domain_id < 0 or domain_id > 232:
        raise SecurityError(f"domain id {domain_id} is out of range: ROS 2 uses 0..232")
    for folder in (PUBLIC, PRIVATE, ENCLAVES):
        (root / folder).mkdir(parents=True, exist_ok=True)
    ca = new_ca(CA_NAME)
    ca.save(root / PRIVATE / "ca.key.pem", root / PUBLIC / "ca.cert.pem")
    written = [root / PRIVATE / "ca.key.pem", root / PUBLIC / "ca.cert.pem"]
    for role in ROLES:
        written.append(_link(root / PUBLIC / f"{role}.cert.pem", root / PUBLIC / "ca.cert.pem"))
        written.append(_link(root / PRIVATE / f"{role}.key.pem", root / PRIVATE / "ca.key.pem"))
    governance = documents.governance(domain_id)
    written += _signed(root / ENCLAVES / "governance", governance, ca)
    return written


def keystore_domain(root: Path) -> int:
    """The domain the keystore's governance was made for; its permissions must name the same one."""
    try:
        ids = etree.parse(str(root / ENCLAVES / "governance.xml")).findall(".//domains/id")
    except (OSError, etree.XMLSyntaxError) as error:
        raise SecurityError(f"{root}: cannot read enclaves/governance.xml: {error}") from None
    if len(ids) != 1:
        raise SecurityError(f"{root}: enclaves/governance.xml should name one domain id, it names {len(ids)}")
    return int(ids[0].text or "")


def create_enclaves(root: Path, policy: Path) -> list[Path]:
    """An enclave per enclave of `policy`, with its signed permissions; the files written.

    An enclave's key and certificate are kept if they exist (so a robot's copies stay valid); its
    permissions are always written anew from the policy.
    """
    if not is_keystore(root):
        raise SecurityError(f"{root} is not a keystore: make one with `hgpo security create-keystore {root}`")
    enclaves = read_policy(policy)
    domain_id = keystore_domain(root)
    ca = Identity.load(root / PRIVATE / "permissions_ca.key.pem", root / PUBLIC / "permissions_ca.cert.pem")
    written: list[Path] = []
    for name, grants in enclaves.items():
        folder = enclave_dir(root, name)
        folder.mkdir(parents=True, exist_ok=True)
        key_path, cert_path = folder / "key.pem", folder / "cert.pem"
        if key_path.is_file() and cert_path.is_file():
            identity = Identity.load(key_path, cert_path)
        else:
            identity = new_identity(name, ca)
            identity.save(key_path, cert_path)
            written += [key_path, cert_path]
        for role in ROLES:
            written.append(_link(folder / f"{role}.cert.pem", root / PUBLIC / f"{role}.cert.pem"))
        written.append(_link(folder / "governance.p7s", root / ENCLAVES / "governance.p7s"))
        cert = identity.cert
        text = documents.permissions(
            name, grants, domain_id, cert.not_valid_before_utc, cert.not_valid_after_utc
        )
        written += _signed(folder / "permissions", text, ca)
    return written


def enclave_dir(root: Path, enclave: str) -> Path:
    return root / ENCLAVES / enclave.lstrip("/")


def _link(path: Path, target: Path) -> Path:
    """`path` as a relative link to `target` (the keystore moves as a whole), replacing what was there."""
    if path.is_symlink() or path.exists():
        path.unlink()
    path.symlink_to(os.path.relpath(target, path.parent))
    return path


def _signed(stem: Path, document: bytes, signer: Identity) -> list[Path]:
    xml, p7s = stem.with_suffix(".xml"), stem.with_suffix(".p7s")
    xml.write_bytes(document)
    p7s.write_bytes(sign_smime(document, signer))
    return [xml, p7s]
