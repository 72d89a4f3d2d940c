"""Interop with the released Go code, both ways: dynamic-resource-allocation v0.36.3, v0.37.2, v0.38.0-beta.0.

Go → Python: what the real kubeletplugin helper wrote for go/scenario.json, our reader reads exactly
as upstream's decoder does. Python → Go: our MetadataWriter, given the same scenario, leaves the
same node behind, and upstream's decoder reads our files into its own objects. Stream rules:
crafted streams get the same verdict from both decoders. The Go programs (go/) are built once into
a cache; see conftest.py and upstream.py. Without `go` this module is skipped with one line.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from draledger.devicemetadata import ClaimSelector, MetadataInvalidError, read_metadata
from draledger.devicemetadata.codec import decode_stream, split_stream
from draledger.devicemetadata.model import ATTRIBUTE_KINDS, CLAIMS_SUBDIR, DEFAULT_ROOT, TEMPLATES_SUBDIR
from tests.devicemetadata import upstream
from tests.devicemetadata.replaying import PythonVectors, attribute, canonical, load_scenario, mount_all
from tests.devicemetadata.streams import AGREE, STRICTER
from tests.devicemetadata.upstream import GoProgram, GoVectors, cdi_summary, go_merge

if upstream.find_go() is None and not upstream.required():
    pytest.skip(upstream.MISSING_GO, allow_module_level=True)

pytestmark = pytest.mark.timeout(upstream.BUILD_TIMEOUT)  # whichever test runs first may build the Go program

GPU_FILE = "plugins/gpu.example.com/dra-device-metadata/gpu-test1_gpu-claim/gpu/metadata.json"
TEMPLATE_FILE = "plugins/gpu.example.com/dra-device-metadata/gpu-test1_pod0-my-gpu-2kqrd/gpu/metadata.json"


def decode_final(vectors: GoVectors, rel: str) -> Any:
    return decode_stream(vectors.files()[rel]["data"].encode(), rel)


class TestDecodingGoFiles:
    """`decode_stream` on every metadata file the Go helper wrote."""

    def test_every_file_of_every_step_decodes_like_go(self, go_vectors: GoVectors) -> None:
        """Each file, as it was after each step, gives Go's object field by field and Go's version."""
        release = go_vectors.program.release
        expected: dict[str, Any] = {}
        actual: dict[str, Any] = {}
        for index, step in enumerate(go_vectors.steps):
            for rel, decoded in step["decoded"].items():
                key = f"step {index} ({step['op']} {step['claim']}): {rel}"
                expected[key] = (decoded.get("error"), decoded.get("decodedVersion"), decoded.get("object"))
                md = decode_stream(step["files"][rel]["data"].encode(), rel, known=release.known_versions)
                actual[key] = (None, md.api_version, canonical(md))
        assert len(expected) >= 40  # every step's files, not just the last ones
        assert expected == actual

    def test_streams_hold_the_release_versions_in_order(self, go_vectors: GoVectors) -> None:
        """Every Go file is encoded once per version the release writes by default, newest first."""
        release = go_vectors.program.release
        found = {
            rel: tuple(o["apiVersion"] for o in split_stream(entry["data"].encode(), rel))
            for rel, entry in go_vectors.files().items()
            if rel.endswith("/metadata.json")
        }
        assert {rel: release.default_versions for rel in found} == found
        assert (release.name, release.default_versions) == (
            go_vectors.results["module"],
            tuple(go_vectors.results["versions"]),
        )

    def test_every_attribute_type_keeps_its_value_and_type(self, go_vectors: GoVectors) -> None:
        """int, bool, string, version and their list forms come back as the driver passed them."""
        device = decode_final(go_vectors, GPU_FILE).requests[0].devices[0]
        passed = load_scenario()["steps"][0]["devices"][0]["metadata"]["attributes"]
        assert {name: attribute(raw) for name, raw in passed.items()} == dict(device.attributes)
        assert set(ATTRIBUTE_KINDS) == {a.kind for a in device.attributes.values()}
        assert "A100 <SXM4> & NVLink, café\u2028line" == device.attributes["model"].as_str()
        assert 2**63 - 1 == device.attributes["memory"].as_int()

    def test_generation_counts_every_update(self, go_vectors: GoVectors) -> None:
        """Prepare writes generation 1; each UpdateRequestMetadata adds one."""
        generations = {}
        for rel in sorted(r for r in go_vectors.files() if r.endswith("/metadata.json")):
            md = decode_final(go_vectors, rel)
            generations[rel.split("/", 3)[3]] = (md.generation, md.ready)
        assert {
            "gpu-test1_gpu-claim/aux/metadata.json": (1, False),
            "gpu-test1_gpu-claim/gpu/metadata.json": (1, True),
            "gpu-test1_pod0-my-gpu-2kqrd/gpu/metadata.json": (2, True),
            "net-test_deferred-claim/net/metadata.json": (3, True),
            "net-test_nic-claim/nic/metadata.json": (1, True),
        } == generations

    def test_update_keeps_the_pod_claim_name_and_subrequest(self, go_vectors: GoVectors) -> None:
        """The rewritten template claim still names its pod claim and its `req/sub` request."""
        md = decode_final(go_vectors, TEMPLATE_FILE)
        assert ("my-gpu", ("gpu/large",), 2) == (md.pod_claim_name, tuple(r.name for r in md.requests), md.generation)


class TestContainerView:
    """`read_metadata` on the Go files, mounted where the Go CDI specs put them."""

    def test_every_mounted_request_reads_as_go_merges_it(self, go_vectors: GoVectors, tmp_path: Path) -> None:
        """Each claim/request directory merges every driver's file as devicemetadata.readRequestDir does."""
        container_paths = mount_all(go_vectors.node, tmp_path)
        root = tmp_path / str(DEFAULT_ROOT).lstrip("/")
        decoded, hosts = go_vectors.steps[-1]["decoded"], go_vectors.host_paths()
        by_dir: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        for path in container_paths:
            subdir, name, request, _file = PurePosixPath(path).relative_to(DEFAULT_ROOT).parts
            by_dir[subdir, name, request].append(path)
        assert {
            (CLAIMS_SUBDIR, "gpu-claim", "aux"),
            (CLAIMS_SUBDIR, "gpu-claim", "gpu"),
            (TEMPLATES_SUBDIR, "my-gpu", "gpu"),
            (CLAIMS_SUBDIR, "nic-claim", "nic"),
            (CLAIMS_SUBDIR, "deferred-claim", "net"),
        } == set(by_dir)
        for (subdir, name, request), paths in sorted(by_dir.items()):
            objects = [decoded[hosts[p]]["object"] for p in sorted(paths)]  # glob order: by driver
            md = read_metadata(ClaimSelector(name, request, template=subdir == TEMPLATES_SUBDIR, root=root))
            ours = {"podClaimName": md.pod_claim_name, "requests": [r.to_json() for r in md.requests]}
            assert go_merge(objects) == ours, (subdir, name, request)
            meta = objects[0]["metadata"]
            assert (meta["namespace"], meta["name"], meta["uid"]) == (md.claim.namespace, md.claim.name, md.claim.uid)


class TestWriterMatchesGo:
    """`MetadataWriter` of a release against the Go kubeletplugin helper of that release."""

    def test_every_step_leaves_the_same_files(self, go_vectors: GoVectors, python_vectors: PythonVectors) -> None:
        """After each step, the same paths exist with the same modes and the same bytes (the root aside)."""
        assert len(go_vectors.steps) == len(python_vectors.snapshots)
        for index, step in enumerate(go_vectors.steps):
            expected = go_vectors.snapshot(index, python_vectors.node)
            assert expected == python_vectors.snapshots[index], f"step {index}: {step['op']} {step['claim']}"

    def test_go_decodes_our_files_into_the_go_objects(
        self, go_vectors: GoVectors, python_vectors: PythonVectors
    ) -> None:
        """Upstream's decoder reads each of our files, at every step, without error into Go's own object."""
        expected = {index: step["decoded"] for index, step in enumerate(go_vectors.steps)}
        actual = {
            index: {rel: {k: v for k, v in d.items() if k != "path"} for rel, d in decoded.items()}
            for index, decoded in enumerate(python_vectors.decoded_by_go)
        }
        assert sum(len(d) for d in actual.values()) >= 40
        assert expected == actual

    def test_go_validation_accepts_our_files(self, python_vectors: PythonVectors) -> None:
        """No decode error and, where the release validates (v0.37), no validation error either."""
        problems = {
            (index, rel): (d.get("error"), d.get("validationError"))
            for index, decoded in enumerate(python_vectors.decoded_by_go)
            for rel, d in decoded.items()
            if d.get("error") or d.get("validationError")
        }
        assert {} == problems

    def test_cdi_specs_have_the_same_ids_mount_paths_and_options(
        self, go_vectors: GoVectors, python_vectors: PythonVectors
    ) -> None:
        """Each CDI spec file names the same device, mounts the same file at the same path, read-only."""
        go_root, ours, root = go_vectors.results["root"], python_vectors.snapshots[-1], str(python_vectors.node)
        expected = {rel: cdi_summary(e["data"], go_root) for rel, e in go_vectors.files().items() if rel[:4] == "cdi/"}
        actual = {rel: cdi_summary(str(e["data"]), root) for rel, e in ours.items() if rel[:4] == "cdi/"}
        assert 6 == len(expected)
        assert expected == actual
        options = {tuple(o) for s in actual.values() for mounts in s["devices"].values() for *_, o in mounts}
        assert {("ro", "bind")} == options

    def test_prepare_answers_with_the_same_cdi_device_ids(
        self, go_vectors: GoVectors, python_vectors: PythonVectors
    ) -> None:
        """The metadata CDI ID goes to the first device of each request, after the driver's own IDs."""
        expected = [step.get("response") for step in go_vectors.steps]
        assert expected == [outcome.response for outcome in python_vectors.outcomes]

    def test_update_of_an_unprepared_request_fails_like_go(
        self, go_vectors: GoVectors, python_vectors: PythonVectors
    ) -> None:
        """Both refuse to update a request that was never prepared, with upstream's words."""
        failed = [(i, s["error"]) for i, s in enumerate(go_vectors.steps) if s.get("error")]
        assert 1 == len(failed)
        index, message = failed[0]
        assert [index] == [i for i, o in enumerate(python_vectors.outcomes) if o.error]
        assert message in str(python_vectors.outcomes[index].error)

    def test_unprepare_removes_the_claim_files_and_specs(
        self, go_vectors: GoVectors, python_vectors: PythonVectors
    ) -> None:
        """The step before unprepare has the claim's files and specs; after it neither side has any."""
        uid = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
        before, after = python_vectors.snapshots[-2], python_vectors.snapshots[-1]
        claim_paths = {rel for rel in before if "gpu-test1_short-lived" in rel or uid in rel}
        assert 7 == len(claim_paths)  # the claim directory, 2 request directories, 2 files, 2 CDI specs
        assert set() == claim_paths & set(after)
        assert set() == claim_paths & set(go_vectors.files())


class TestStreamRulesAgreeWithGo:
    """`decode_stream(known=release.known_versions)` against `devicemetadata.DecodeMetadataFromStream`."""

    @pytest.mark.parametrize(("data", "accepted"), AGREE)
    def test_same_verdict_and_object(
        self, go_program: GoProgram, data: bytes, accepted: bool | str, tmp_path: Path
    ) -> None:
        """Both accept (with the same object and version) or both refuse."""
        release = go_program.release
        expected = accepted if isinstance(accepted, bool) else accepted in release.known_versions
        go = go_decode(go_program, data, tmp_path)
        assert expected == ("error" not in go), go.get("error")
        if not expected:
            with pytest.raises(MetadataInvalidError):
                decode_stream(data, "metadata.json", known=release.known_versions)
            return
        md = decode_stream(data, "metadata.json", known=release.known_versions)
        assert (go["decodedVersion"], go["object"]) == (md.api_version, canonical(md))

    @pytest.mark.parametrize("data", STRICTER)
    def test_we_refuse_what_upstream_tolerates(self, go_program: GoProgram, data: bytes, tmp_path: Path) -> None:
        """Upstream decodes these streams; we report them as invalid (docs/device-metadata.md says why)."""
        assert "error" not in go_decode(go_program, data, tmp_path)
        with pytest.raises(MetadataInvalidError):
            decode_stream(data, "metadata.json", known=go_program.release.known_versions)


def go_decode(program: GoProgram, data: bytes, tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "metadata.json"
    path.write_bytes(data)
    (decoded,) = program.decode([path])
    return decoded
