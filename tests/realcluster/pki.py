"""Certificates, keys and kubeconfigs for a loopback control plane, generated fresh for every start.

Rules:
1. One CA signs everything: the apiserver's serving certificate (SANs 127.0.0.1, localhost and the in-cluster
   names), and one client certificate per identity. The CA is the apiserver's ``--client-ca-file``, so a
   certificate's CN is the user and its O the groups, exactly as in a kubeadm cluster. It is also the
   front-proxy (request-header) CA, limited to the CN ``front-proxy-client``; kubeadm uses a second CA there,
   which buys a test nothing.
2. Identities are the ones the RBAC bootstrap policy knows: ``system:kube-scheduler``,
   ``system:kube-controller-manager``, and an admin in ``system:masters``. Nothing here grants permissions.
3. The service-account key pair is separate from the CA (the apiserver verifies and signs tokens with it, the
   controller-manager signs the legacy token secrets with it).
4. Files only, in the directory given; private keys are written 0600. Nothing here starts a process.
5. A real node (tests/realnode) gets its certificates from the same CA, after the start: ``issue_client`` for
   the kubelet (``system:node:<name>``) and for kube-apiserver towards kubelets, ``issue_serving`` for the
   kubelet's port.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SERVICE_IP = "10.0.0.1"  # the first address of --service-cluster-ip-range, the `kubernetes` Service
VALID_FOR = datetime.timedelta(days=2)

ADMIN = ("dra-ledger-admin", ("system:masters",))
SCHEDULER = ("system:kube-scheduler", ())
CONTROLLER_MANAGER = ("system:kube-controller-manager", ())
FRONT_PROXY = ("front-proxy-client", ())  # the aggregator's identity towards extension API servers


@dataclass(frozen=True, slots=True)
class ClientCert:
    """A client certificate and its key, as files."""

    cert: Path
    key: Path


@dataclass(frozen=True, slots=True)
class Pki:
    """Every file the components need."""

    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    service_account_key: Path
    service_account_pub: Path
    admin: ClientCert
    scheduler: ClientCert
    controller_manager: ClientCert
    front_proxy: ClientCert


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    data = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    return x509.Name([*parts, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALID_FOR))


def _leaf(directory: Path, stem: str, ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey,
          subject: x509.Name, usage: x509.ObjectIdentifier, sans: list[x509.GeneralName] | None = None) -> ClientCert:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (_builder(subject, ca.subject, key.public_key())
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False, content_commitment=False,
                                            data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                            crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
               .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    paths = ClientCert(directory / f"{stem}.crt", directory / f"{stem}.key")
    _write_cert(paths.cert, cert)
    _write_key(paths.key, key)
    return paths


def generate(directory: Path) -> Pki:
    """Write a fresh CA, the serving certificate, the client certificates and the service-account keys."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("dra-ledger-test-ca")
    ca = (_builder(ca_name, ca_name, ca_key.public_key())
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False, content_commitment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    _write_cert(directory / "ca.crt", ca)
    _write_key(directory / "ca.key", ca_key)

    sans: list[x509.GeneralName] = [
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.IPAddress(ipaddress.ip_address(SERVICE_IP)),
        x509.DNSName("localhost"), x509.DNSName("kubernetes"), x509.DNSName("kubernetes.default"),
        x509.DNSName("kubernetes.default.svc"), x509.DNSName("kubernetes.default.svc.cluster.local"),
    ]
    serving = _leaf(directory, "apiserver", ca, ca_key, _name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, sans)
    clients = {stem: _leaf(directory, stem, ca, ca_key, _name(cn, orgs), ExtendedKeyUsageOID.CLIENT_AUTH)
               for stem, (cn, orgs) in (("admin", ADMIN), ("scheduler", SCHEDULER),
                                        ("controller-manager", CONTROLLER_MANAGER), ("front-proxy", FRONT_PROXY))}

    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(directory / "sa.key", sa_key)
    (directory / "sa.pub").write_bytes(sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return Pki(ca_cert=directory / "ca.crt", ca_key=directory / "ca.key", serving_cert=serving.cert,
               serving_key=serving.key, service_account_key=directory / "sa.key",
               service_account_pub=directory / "sa.pub", admin=clients["admin"], scheduler=clients["scheduler"],
               controller_manager=clients["controller-manager"], front_proxy=clients["front-proxy"])


def write_kubeconfig(path: Path, server: str, ca_cert: Path, client: ClientCert, user: str) -> Path:
    """A kubeconfig with one cluster, one user (the client certificate, by absolute path) and one context."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "realcluster", "cluster": {"server": server, "certificate-authority": str(ca_cert)}}],
        "users": [{"name": user, "user": {"client-certificate": str(client.cert), "client-key": str(client.key)}}],
        "contexts": [{"name": "realcluster", "context": {"cluster": "realcluster", "user": user}}],
        "current-context": "realcluster",
        "preferences": {},
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


@dataclass(frozen=True, slots=True)
class ServingPair:
    """A serving certificate, its key and the CA that signed it (the CA is what a caBundle carries)."""

    ca_cert: Path
    cert: Path
    key: Path


def serving_certificate(directory: Path, ip: str = "127.0.0.1") -> ServingPair:
    """A fresh CA of its own and a serving certificate for ``ip`` (and localhost) signed by it.

    Written as ``ca.crt``, ``tls.crt`` and ``tls.key``: the layout of a cert-manager Secret, which is what
    ``draledger run --webhook-cert-dir`` reads. Separate from the control plane's CA (rule 1): a webhook's CA is
    only ever trusted through its configuration's ``caBundle``.
    """
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("dra-ledger-test-webhook-ca")
    ca = (_builder(ca_name, ca_name, ca_key.public_key())
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False, content_commitment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    _write_cert(directory / "ca.crt", ca)
    sans: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(ip)), x509.DNSName("localhost")]
    leaf = _leaf(directory, "tls", ca, ca_key, _name("draledger-webhook"), ExtendedKeyUsageOID.SERVER_AUTH, sans)
    return ServingPair(directory / "ca.crt", leaf.cert, leaf.key)


# ------------------------------------------------------------------ a real node's identities (tests/realnode)

KUBELET_CLIENT = ("kube-apiserver-kubelet-client", ("system:masters",))  # kubeadm's apiserver -> kubelet identity


def _load_ca(keys: Pki) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    ca = x509.load_pem_x509_certificate(keys.ca_cert.read_bytes())
    ca_key = serialization.load_pem_private_key(keys.ca_key.read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    return ca, ca_key


def issue_client(keys: Pki, directory: Path, stem: str, common_name: str,
                 organizations: tuple[str, ...] = ()) -> ClientCert:
    """A client certificate signed by the control plane's CA: user ``common_name`` in groups ``organizations``.

    A kubelet's is ``system:node:<name>`` in ``system:nodes``, the identity the Node authorizer and the
    NodeRestriction admission plugin know; kube-apiserver's towards kubelets is ``KUBELET_CLIENT``.
    """
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = _load_ca(keys)
    return _leaf(directory, stem, ca, ca_key, _name(common_name, organizations), ExtendedKeyUsageOID.CLIENT_AUTH)


def issue_serving(keys: Pki, directory: Path, stem: str, common_name: str, ip: str = "127.0.0.1") -> ClientCert:
    """A serving certificate for ``ip`` and localhost signed by the control plane's CA (a kubelet's, so that
    kube-apiserver verifies it with ``--kubelet-certificate-authority``)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = _load_ca(keys)
    sans: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(ip)), x509.DNSName("localhost")]
    return _leaf(directory, stem, ca, ca_key, _name(common_name), ExtendedKeyUsageOID.SERVER_AUTH, sans)
