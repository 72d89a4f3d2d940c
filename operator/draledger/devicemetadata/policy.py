"""Which device attributes a driver may publish into containers.

Rules: by default every attribute the driver publishes is allowed except those whose name or value
looks like a credential (token, secret, password, bearer, private/API keys, PEM blocks, JWTs, cloud
key prefixes); an explicit allowlist replaces the name rule, but a credential-looking VALUE is
dropped in every mode. Dropped names are reported so that the driver can log them.
This module must never log or return a dropped value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from draledger.devicemetadata.model import DeviceAttribute

# Whole words of an attribute name (split at '/', '.', '-', '_' and camelCase humps), so that
# "sshKey" or "api_key" match through the word "key" while "keyboard" or "monkey" do not.
_SECRET_WORDS = frozenset(
    {
        "token", "tokens", "secret", "secrets", "password", "passwords", "passwd", "pwd", "passphrase",
        "credential", "credentials", "creds", "bearer", "apikey", "privatekey", "secretkey", "accesskey",
        "key", "keys", "keyfile", "keymaterial", "psk", "otp", "cookie", "session", "sessionid", "auth",
        "authorization", "signature",
    }
)  # fmt: skip
_WORD_SPLIT = re.compile(r"[/._\-\s:]+|(?<=[a-z0-9])(?=[A-Z])")
_SECRET_VALUES = (
    re.compile(r"-----BEGIN [A-Z ]*(PRIVATE KEY|CERTIFICATE|KEY)-----"),
    re.compile(r"^\s*bearer\s+\S+", re.IGNORECASE),
    re.compile(r"^eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$"),  # JWT
    re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key id
    re.compile(r"\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|github_pat_\w{20,}"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack
    re.compile(r"\bsk-[A-Za-z0-9_-]{20,}"),
    re.compile(r"(password|passwd|secret|token|api[_-]?key)\s*[=:]\s*\S+", re.IGNORECASE),
)


def name_looks_secret(name: str) -> bool:
    return any(w.lower() in _SECRET_WORDS for w in _WORD_SPLIT.split(name) if w)


def value_looks_secret(attribute: DeviceAttribute) -> bool:
    """A string value, or any string of a list value, that looks like a credential."""
    values = attribute.value if isinstance(attribute.value, tuple) else (attribute.value,)
    return any(isinstance(v, str) and p.search(v) for v in values for p in _SECRET_VALUES)


@dataclass(frozen=True, slots=True)
class AttributePolicy:
    """`allow=None`: all published attributes minus credential-like names; else exactly `allow`."""

    allow: frozenset[str] | None = None

    @classmethod
    def only(cls, names: Iterable[str]) -> AttributePolicy:
        return cls(frozenset(names))

    def permits_name(self, name: str) -> bool:
        return name in self.allow if self.allow is not None else not name_looks_secret(name)

    def filter(
        self, attributes: Mapping[str, DeviceAttribute]
    ) -> tuple[dict[str, DeviceAttribute], list[str]]:
        """(kept attributes, sorted names of the dropped ones)."""
        kept: dict[str, DeviceAttribute] = {}
        dropped: list[str] = []
        for name, attribute in attributes.items():
            if self.permits_name(name) and not value_looks_secret(attribute):
                kept[name] = attribute
            else:
                dropped.append(name)
        return kept, sorted(dropped)
