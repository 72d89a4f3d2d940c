"""The Helm chart charts/dra-ledger, rendered with the pinned helm, and what may differ from the kustomize overlays.

Rules:
1. ``helm template`` renders with ``--include-crds`` (crds/ is part of what an install creates) for the
   Kubernetes version given, as a release named ``RELEASE``; nothing talks to a cluster.
2. ``OVERLAY_VALUES`` pairs each kustomize overlay with the values file of ci/ that describes it; rendered into
   draledger-system, the chart must produce the overlay's objects once ``normalised``.
3. ``normalised`` removes only what legitimately differs between the two tools, each item with its reason
   (``DIFFERENCES``); everything else, comments aside, is compared.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.manifests.kustomized import ROOT, Objects

CHART = ROOT / "charts" / "dra-ledger"
CI_VALUES = tuple(sorted(path.name for path in (CHART / "ci").glob("*-values.yaml")))
RELEASE = "dra-ledger"
KUBERNETES = "1.36.0"  # the oldest release the chart supports (Chart.yaml kubeVersion)
OVERLAY_VALUES = {"minimal": "minimal-values.yaml", "canary": "canary-values.yaml",
                  "production": "production-values.yaml", "observe": "observe-values.yaml"}

HELM_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance",
               "app.kubernetes.io/version")
ARGO_CRD_ANNOTATIONS = ("argocd.argoproj.io/sync-wave", "argocd.argoproj.io/sync-options")
CONFIG_NAME = re.compile(r"\bdraledger-config-[a-z0-9]{10}\b")
DIFFERENCES = {
    "Helm's labels": "helm.sh/chart, app.kubernetes.io/managed-by, instance and version, on every object's "
                     "metadata (never on selectors or pod templates): Helm's conventions, which kustomize has no "
                     "reason to set",
    "the ConfigMap's hash": "both name the ConfigMap draledger-config-<hash of its data>, so that a changed value "
                            "rolls the Deployment, but kustomize's hash is its own: the suffix is not compared",
    "the CRD's Argo CD annotations": "the base adds sync-wave -1 and ServerSideApply=true to the CRD with a patch; "
                                     "Helm never templates crds/, so the chart ships the generated file as it is",
}


def template(helm: Path, *args: str, namespace: str = "draledger-system", kubernetes: str = KUBERNETES,
             check: bool = True) -> subprocess.CompletedProcess[str]:
    """``helm template RELEASE charts/dra-ledger -n NAMESPACE --include-crds ARGS...``."""
    done = subprocess.run([str(helm), "template", RELEASE, str(CHART), "--namespace", namespace, "--include-crds",
                           "--kube-version", kubernetes, *args], capture_output=True, text=True, timeout=60,
                          check=False)
    if check:
        assert 0 == done.returncode, f"helm template {' '.join(args)} failed:\n{done.stderr}"
    return done


_RENDERED: dict[tuple[str, ...], str] = {}  # the same chart and arguments render the same text: once a session


def rendered(helm: Path, *args: str, namespace: str = "draledger-system", kubernetes: str = KUBERNETES) -> Objects:
    """The objects ``template`` renders (fresh objects each time; the text is rendered once)."""
    key = (str(helm), namespace, kubernetes, *args)
    if key not in _RENDERED:
        _RENDERED[key] = template(helm, *args, namespace=namespace, kubernetes=kubernetes).stdout
    return [obj for obj in yaml.safe_load_all(_RENDERED[key]) if obj]


def values(name: str) -> list[str]:
    """The arguments that render with ci/NAME."""
    return ["--values", str(CHART / "ci" / name)]


def normalised(objects: Objects) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The objects by (kind, namespace, name), without the ``DIFFERENCES``."""
    out = {}
    for obj in json.loads(CONFIG_NAME.sub("draledger-config-HASH", json.dumps(objects))):
        metadata = obj["metadata"]
        labels = {key: value for key, value in metadata.get("labels", {}).items() if key not in HELM_LABELS}
        metadata.pop("labels", None)
        if labels:
            metadata["labels"] = labels
        if obj["kind"] == "CustomResourceDefinition":
            annotations = {key: value for key, value in metadata.pop("annotations", {}).items()
                           if key not in ARGO_CRD_ANNOTATIONS}
            if annotations:
                metadata["annotations"] = annotations
        out[(obj["kind"], metadata.get("namespace", ""), metadata["name"])] = obj
    return out
