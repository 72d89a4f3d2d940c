"""The schemas every release of the matrix is validated with (tests/manifests/schemas.py): v1.38's are converted
from what its real kube-apiserver serves, by a conversion that reproduces kubernetes-validate's own files."""

from __future__ import annotations

import json
import os
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from tests.manifests import schemas
from tests.realcluster import building
from tests.realcluster.releases import RELEASES

REPRODUCED = "v1.37"  # kubernetes-validate 1.37.0 holds its files, converted from the upstream document of v1.37


def upstream_document(release: str) -> Path:
    """The release's ``api/openapi-spec/swagger.json``, in the Go module cache where building it put it."""
    try:
        go = building.find_go()
    except building.GoMissing as missing:
        return _unavailable(str(missing))
    done = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "GOTOOLCHAIN": "local"})
    path = (Path(done.stdout.strip()) / "k8s.io" / f"kubernetes@{RELEASES[release].kubernetes}" / "api"
            / "openapi-spec" / "swagger.json")
    return path if path.is_file() else _unavailable(f"{path} is not there: build {release} first")


def _unavailable(why: str) -> Path:
    if os.environ.get(schemas.REQUIRE_ENV, "") == "1":
        pytest.fail(f"{why} ({schemas.REQUIRE_ENV}=1)", pytrace=False)
    pytest.skip(f"{why} (set {schemas.REQUIRE_ENV}=1 to fail instead)")


def shipped(release: str) -> Path:
    """kubernetes-validate's strict files of ``release``."""
    return Path(str(resources.files("kubernetes_validate") / "kubernetes-json-schema"
                    / f"v{schemas.version_of(release)}-local-strict"))


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    """v1.37's upstream OpenAPI v2 document."""
    loaded: dict[str, Any] = json.loads(upstream_document(REPRODUCED).read_text(encoding="utf-8"))
    return loaded


class TestConversion:
    def test_definitions_are_kubernetes_validates(self, document: dict[str, Any]) -> None:
        """Converting v1.37's upstream document gives kubernetes-validate 1.37.0's _definitions.json, every one
        of its 862 definitions equal."""
        theirs = json.loads((shipped(REPRODUCED) / "_definitions.json").read_text(encoding="utf-8"))

        assert 862 == len(theirs["$defs"])
        assert theirs["$defs"] == schemas.definitions(document)

    def test_kind_files_are_kubernetes_validates(self, document: dict[str, Any]) -> None:
        """... and its file per definition (deployment-apps-v1.json and the rest), but for their $schema and $id."""
        theirs = {path.name: {key: value for key, value in json.loads(path.read_text(encoding="utf-8")).items()
                              if key not in ("$schema", "$id")}
                  for path in shipped(REPRODUCED).glob("*.json") if path.name not in ("_definitions.json", "all.json")}

        assert 862 == len(theirs)
        assert theirs == schemas.kinds(document)


BOGUS_SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}, "spec": {"prots": []}}


@pytest.mark.parametrize("schema_release", list(RELEASES))
class TestEveryRelease:
    def test_a_valid_object_passes(self, schema_release: str) -> None:
        """A plain ConfigMap validates for the release."""
        schemas.validator(schema_release)({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                                           "data": {"a": "b"}})

    def test_a_misspelt_field_fails(self, schema_release: str) -> None:
        """Strict: an unknown field is an error, for every release (the validation means something)."""
        with pytest.raises(kubernetes_validate.ValidationError):
            schemas.validator(schema_release)(BOGUS_SERVICE)

    def test_a_third_party_kind_has_no_schema(self, schema_release: str) -> None:
        """A ServiceMonitor is no kind of Kubernetes': its objects need our own checks (CUSTOM_CHECKS)."""
        monitor = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "x"}}
        with pytest.raises(kubernetes_validate.SchemaNotFoundError):
            schemas.validator(schema_release)(monitor)


def test_which_schemas_each_release_uses() -> None:
    """kubernetes-validate's for v1.36 and v1.37; v1.38's, which it does not have, from the server."""
    assert {"v1.36": True, "v1.37": True, "v1.38": False} == {
        name: schemas.shipped_with_validator(name) for name in RELEASES}


@pytest.mark.parametrize("schema_release", ["v1.38"])
def test_v1_38s_schemas_know_what_v1_38_added(schema_release: str) -> None:
    """A pod with v1.38's seccompProfile.oci (new in v1.38's core/v1) validates for v1.38, and is refused for v1.37
    by kubernetes-validate's schemas: v1.38 is validated with v1.38's, not v1.37's again."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
           "spec": {"containers": [{"name": "c", "image": "registry.example/c:1"}],
                    "securityContext": {"seccompProfile": {"type": "OCI", "oci": {"ref": "registry.example/p:1"}}}}}
    schemas.validator(schema_release)(pod)

    with pytest.raises(kubernetes_validate.ValidationError):
        schemas.validator("v1.37")(pod)
