"""The Kubernetes release whose rules the ledger follows, and how it is known.

The JSON of v1.38 is byte-for-byte v1.37's while its rules differ, so a release can never be guessed from object
shapes alone. Rules:
1. A release is a minor the ledger has rules for: ``RELEASES``, oldest first. A newer minor follows the newest
   rules known (said so); an older one the oldest (the feature exists from v1.36 on).
2. The operator takes it from the API server: ``/version``'s ``major`` and ``minor`` (a provider's ``"38+"``
   counts as 38), ``gitVersion`` only for the message. ``--release`` overrides it.
3. A dump (``draledger audit``) holds no ``/version``: the highest ``status.nodeInfo.kubeletVersion`` among its
   Nodes is a lower bound (kubelets never run ahead of their control plane), raised to v1.37 when an object has
   the v1.37 shape (v1.36 servers do not know those fields); ``--release`` overrides it. Both say why.
4. Nothing here reads the world: callers hand in what they read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, Literal, get_args

Release = Literal["v1.36", "v1.37", "v1.38"]
RELEASES: Final[tuple[Release, ...]] = get_args(Release)
OLDEST: Final[Release] = RELEASES[0]
NEWEST: Final[Release] = RELEASES[-1]
_ORDER: Final = {release: index for index, release in enumerate(RELEASES)}
_VERSION = re.compile(r"v?(\d+)\.(\d+)")


def at_least(release: Release, other: Release) -> bool:
    """Whether ``release`` is ``other`` or newer."""
    return _ORDER[release] >= _ORDER[other]


def parse_release(text: str) -> Release:
    """``v1.37`` (or ``1.37``) as a Release; ValueError naming the known ones otherwise."""
    cleaned = text.strip()
    if not cleaned.startswith("v"):
        cleaned = "v" + cleaned
    for release in RELEASES:
        if cleaned == release:
            return release
    raise ValueError(f"{text!r} is not a release with rules here (known: {', '.join(RELEASES)})")


def _of_minor(major: int, minor: int) -> tuple[Release, str]:
    """The release for a server or kubelet version, and what was made of it (rule 1)."""
    name = f"v{major}.{minor}"
    for release in RELEASES:
        if name == release:
            return release, ""
    if (major, minor) > (1, int(NEWEST.split(".")[1])):
        return NEWEST, f"{name} is newer than every release with rules here; {NEWEST}'s rules apply"
    return OLDEST, f"{name} is older than {OLDEST}, where node-allocatable DRA begins; {OLDEST}'s rules apply"


def from_server(major: str, minor: str, git_version: str = "") -> tuple[Release, str]:
    """Rule 2: the release of an API server's ``/version`` answer, and why (one sentence)."""
    digits = re.match(r"\d+", minor or "")
    if not (major or "").isdigit() or digits is None:
        match = _VERSION.match(git_version or "")
        if match is None:
            raise ValueError(f"/version says major {major!r}, minor {minor!r}, gitVersion {git_version!r}: "
                             "no release can be read from it")
        major, minor = match[1], match[2]
    else:
        minor = digits[0]
    release, note = _of_minor(int(major), int(minor))
    why = f"the API server reports {git_version or f'v{major}.{minor}'}"
    return release, f"{why}; {note}" if note else why


def from_dump(kubelet_versions: Iterable[str], v137_shapes: bool) -> tuple[Release, str]:
    """Rule 3: the release a dump is audited with, and why."""
    best: tuple[int, int] | None = None
    shown = ""
    for version in kubelet_versions:
        match = _VERSION.match(version or "")
        if match is not None and (best is None or (int(match[1]), int(match[2])) > best):
            best, shown = (int(match[1]), int(match[2])), version
    if best is None:
        release: Release = OLDEST
        why = f"no Node reports a kubeletVersion; {OLDEST} assumed"
    else:
        release, note = _of_minor(*best)
        why = f"the newest kubelet in the dump is {shown}" + (f" ({note})" if note else "")
    if v137_shapes and not at_least(release, "v1.37"):
        release = "v1.37"
        why += "; raised to v1.37 because objects use the v1.37 shape (nodeAllocatableResources, or a pod " \
               "status with mapping/overhead)"
    return release, why + "; pass --release to choose"


def status_shape(release: Release) -> Literal["v1.36", "v1.37"]:
    """The JSON shape of the release's node-allocatable fields: v1.38 writes v1.37's."""
    return "v1.36" if release == "v1.36" else "v1.37"
