"""Only allowed, non-credential attributes are published into containers."""

from __future__ import annotations

import pytest

from draledger.devicemetadata import AttributePolicy, DeviceAttribute
from draledger.devicemetadata.policy import name_looks_secret, value_looks_secret


@pytest.mark.parametrize(
    "name",
    [
        "token",
        "apiToken",
        "example.com/secret",
        "adminPassword",
        "db_passwd",
        "bearer",
        "APIKey",
        "privateKey",
        "ssh-key",
        "example.com/credentials",
        "authorization",
    ],
)
def test_credential_like_names_are_detected(name: str) -> None:
    """Names containing a credential word are treated as secrets."""
    assert name_looks_secret(name)


@pytest.mark.parametrize(
    "name",
    [
        "index",
        "uuid",
        "resource.kubernetes.io/pciBusID",
        "keyboardLayout",
        "monkeyPatched",
        "driverVersion",
        "tokenizerModel",
    ],
)
def test_ordinary_names_pass(name: str) -> None:
    """Device attributes that merely contain the letters of a credential word are kept."""
    assert not name_looks_secret(name)


@pytest.mark.parametrize(
    "value",
    [
        "-----BEGIN RSA PRIVATE KEY-----",
        "Bearer abc.def",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_0123456789abcdefghijABCDEFGHIJ",
        "password=hunter2",
        "sk-0123456789abcdefghijklmnop",
    ],
)
def test_credential_like_values_are_detected(value: str) -> None:
    """String values that look like keys, tokens or passwords are treated as secrets."""
    assert value_looks_secret(DeviceAttribute.of_string(value))


def test_plain_values_pass() -> None:
    """UUIDs, PCI addresses, numbers and bools are not secrets."""
    for attribute in (
        DeviceAttribute.of_string("gpu-18db0e85-99e9-c746-8531-ffeb86328b39"),
        DeviceAttribute.of_string("0000:3b:00.0"),
        DeviceAttribute.of_int(7),
        DeviceAttribute.of_bool(True),
        DeviceAttribute.of_version("1.2.3"),
    ):
        assert not value_looks_secret(attribute)


def test_default_policy_keeps_published_attributes_minus_credentials() -> None:
    """The default allows every published attribute except credential-like names and values."""
    kept, dropped = AttributePolicy().filter(
        {
            "index": DeviceAttribute.of_int(0),
            "apiToken": DeviceAttribute.of_string("x"),
            "note": DeviceAttribute.of_string("Bearer abcdef"),
        }
    )
    assert list(kept) == ["index"]
    assert dropped == ["apiToken", "note"]


def test_explicit_allowlist_replaces_the_name_rule_but_not_the_value_rule() -> None:
    """An explicit allowlist admits exactly its names; credential-looking values still stay out."""
    policy = AttributePolicy.only(["keyId", "pem"])
    kept, dropped = policy.filter(
        {
            "keyId": DeviceAttribute.of_string("k-1"),
            "pem": DeviceAttribute.of_string("-----BEGIN PRIVATE KEY-----"),
            "index": DeviceAttribute.of_int(0),
        }
    )
    assert list(kept) == ["keyId"]
    assert dropped == ["index", "pem"]
