"""The writer produces the upstream host layout and CDI spec, atomically and bound to the claim UID."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from draledger.devicemetadata import (
    V1ALPHA1,
    V1BETA1,
    AttributePolicy,
    ClaimInfo,
    ClaimSelector,
    DeviceAttribute,
    MetadataInvalidError,
    MetadataMissingError,
    MetadataWriter,
    NetworkData,
    PreparedClaim,
    PreparedDevice,
    PreparedRequest,
    read_metadata,
    read_metadata_file,
)
from draledger.devicemetadata.releases import V0_36, V0_37
from tests.devicemetadata.helpers import GOLDEN, gpu_request, mount

GOLDEN_GPU = GOLDEN / "container/resourceclaims/gpu-claim/gpu/gpu.example.com-metadata.json"
UID = "c7e7b22e-5a1d-4d5b-9a55-0c6f1f0e2a10"


def golden_request() -> PreparedRequest:
    attributes = {
        "index": DeviceAttribute.of_int(0),
        "uuid": DeviceAttribute.of_string("gpu-18db0e85-99e9-c746-8531-ffeb86328b39"),
        "resource.kubernetes.io/pciBusID": DeviceAttribute.of_string("0000:3b:00.0"),
        "driverVersion": DeviceAttribute.of_version("1.2.3"),
        "virtualized": DeviceAttribute.of_bool(False),
        "apiToken": DeviceAttribute.of_string("do-not-publish"),
    }
    return PreparedRequest("gpu", (PreparedDevice("worker-0", "gpu-0", attributes),))


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")) if path.exists() else []


def test_host_file_and_cdi_spec_match_the_goldens(claim: ClaimInfo, tmp_path: Path) -> None:
    """Writing the golden claim as v0.36 does reproduces the golden file and CDI spec byte for byte."""
    writer = MetadataWriter(
        "gpu.example.com",
        plugin_data_dir=tmp_path / "plugins" / "gpu.example.com",
        cdi_dir=tmp_path / "cdi",
        release=V0_36,
    )
    result = writer.write(claim, golden_request())
    assert result is not None
    data_dir = tmp_path / "plugins" / "gpu.example.com"
    assert result.host_path == data_dir / "dra-device-metadata/gpu-test1_gpu-claim/gpu/metadata.json"
    assert result.host_path.read_bytes() == GOLDEN_GPU.read_bytes()
    assert result.cdi_spec_path == tmp_path / "cdi" / f"gpu.example.com_metadata_{UID}_gpu.json"
    expected_spec = (GOLDEN / "host" / result.cdi_spec_path.name).read_text()
    assert result.cdi_spec_path.read_text() == expected_spec.replace("@PLUGIN_DATA_DIR@", str(data_dir))
    assert result.cdi_device_id == f"gpu.example.com/metadata={UID}_gpu"
    assert str(result.container_path) == (
        "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/gpu-claim/gpu/gpu.example.com-metadata.json"
    )
    assert result.dropped == ("worker-0/gpu-0: apiToken",)
    assert b"do-not-publish" not in result.host_path.read_bytes()


def test_modes_ignore_the_umask(writer: MetadataWriter, claim: ClaimInfo, tmp_path: Path) -> None:
    """Files are 0644 and created directories 0755 even under a strict umask."""
    old = os.umask(0o077)
    try:
        result = writer.write(claim, gpu_request())
    finally:
        os.umask(old)
    assert result is not None
    for path in (result.host_path, result.cdi_spec_path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
    directory = result.host_path.parent
    while directory != tmp_path:
        assert stat.S_IMODE(directory.stat().st_mode) == 0o755, directory
        directory = directory.parent


def test_template_claim_uses_the_pod_claim_name(writer: MetadataWriter, tmp_path: Path) -> None:
    """A template claim is mounted under resourceclaimtemplates/<podClaimName> and says so in the file."""
    claim = ClaimInfo("ns", "pod0-my-gpu-2kqrd", "uid-1", pod_claim_name="my-gpu")
    result = writer.write(claim, gpu_request())
    assert result is not None
    assert str(result.container_path).endswith(
        "/resourceclaimtemplates/my-gpu/gpu/gpu.example.com-metadata.json"
    )
    assert read_metadata_file(result.host_path).pod_claim_name == "my-gpu"
    mount(writer, claim, "gpu", tmp_path / "root")
    md = read_metadata(ClaimSelector.pod_claim("my-gpu", "gpu", root=tmp_path / "root"))
    assert md.claim.name == "pod0-my-gpu-2kqrd"


def test_subrequest_is_written_under_the_base_request(writer: MetadataWriter, claim: ClaimInfo) -> None:
    """`gpu/large` goes to the `gpu` directory, CDI name and spec, and keeps its full name in the JSON."""
    result = writer.write(claim, gpu_request("gpu/large"))
    assert result is not None
    assert result.host_path.parent.name == "gpu"
    assert result.cdi_device_id.endswith(f"={UID}_gpu")
    assert result.container_path.parent.name == "gpu"
    assert [r.name for r in read_metadata_file(result.host_path).requests] == ["gpu/large"]


def test_several_drivers_round_trip_through_the_reader(tmp_path: Path) -> None:
    """Two drivers writing one request are merged by the reader from the container layout."""
    claim = ClaimInfo("ns", "nic-claim", "uid-2")
    root = tmp_path / "root"
    for driver in ("nic.example.com", "rdma.example.com"):
        writer = MetadataWriter(driver, plugin_data_dir=tmp_path / driver, cdi_dir=tmp_path / "cdi")
        writer.write(claim, PreparedRequest("nic", (PreparedDevice("node-a", f"dev-{driver[:3]}"),)))
        mount(writer, claim, "nic", root)
    md = read_metadata(ClaimSelector.claim("nic-claim", "nic", root=root))
    assert [(d.driver, d.name) for d in md.devices] == [
        ("nic.example.com", "dev-nic"),
        ("rdma.example.com", "dev-rdm"),
    ]
    assert len(list((tmp_path / "cdi").iterdir())) == 2


def test_deferred_update_bumps_the_generation(tmp_path: Path) -> None:
    """A network driver writes generation 1 without attributes, then `update` writes generation 2."""
    writer = MetadataWriter("net.example.com", plugin_data_dir=tmp_path / "p", cdi_dir=tmp_path / "cdi")
    claim = ClaimInfo("ns", "net-claim", "uid-3")
    first = writer.write(claim, PreparedRequest("net", (PreparedDevice("node-a", "vf-3"),)))
    assert first is not None
    assert first.generation == 1
    assert not read_metadata_file(first.host_path).ready
    device = PreparedDevice(
        "node-a",
        "vf-3",
        {"ifname": DeviceAttribute.of_string("net1")},
        NetworkData("net1", ("10.0.0.5/24",), "02:42:ac:11:00:05"),
    )
    second = writer.update(claim, PreparedRequest("net", (device,)))
    third = writer.update(claim, PreparedRequest("net", (device,)))
    assert (second.generation, third.generation) == (2, 3)
    md = read_metadata_file(third.host_path)
    assert md.ready
    assert md.generation == 3
    assert md.requests[0].devices[0].network_data == device.network_data


def test_update_keeps_the_pod_claim_name_and_leaves_the_cdi_spec(writer: MetadataWriter, tmp_path: Path) -> None:
    """Like UpdateRequestMetadata (which takes no podClaimName), update keeps the file's and only rewrites it."""
    template = ClaimInfo("ns", "pod0-my-gpu-2kqrd", "uid-4", pod_claim_name="my-gpu")
    first = writer.write(template, gpu_request("gpu/large"))
    assert first is not None
    spec = first.cdi_spec_path.read_bytes()
    first.cdi_spec_path.chmod(0o444)  # any rewrite would replace it with a 0644 file
    second = writer.update(ClaimInfo("ns", "pod0-my-gpu-2kqrd", "uid-4"), gpu_request("gpu/large", index=1))
    md = read_metadata_file(second.host_path)
    assert ("my-gpu", 2) == (md.pod_claim_name, md.generation)
    assert first.container_path == second.container_path
    assert spec == first.cdi_spec_path.read_bytes()
    assert 0o444 == stat.S_IMODE(first.cdi_spec_path.stat().st_mode)


def test_update_of_an_unprepared_request_fails(writer: MetadataWriter, claim: ClaimInfo) -> None:
    """Updating a request that was never written names it as not found in the prepared claim."""
    with pytest.raises(MetadataMissingError, match="not found in prepared claim gpu-test1/gpu-claim"):
        writer.update(claim, gpu_request())


def test_update_refuses_another_claim_uid(writer: MetadataWriter, claim: ClaimInfo) -> None:
    """A file of an earlier claim with the same name (other UID) is never updated."""
    writer.write(claim, gpu_request())
    other = ClaimInfo(claim.namespace, claim.name, "another-uid")
    with pytest.raises(MetadataInvalidError, match="refusing to update"):
        writer.update(other, gpu_request())


def test_remove_is_complete_and_idempotent(writer: MetadataWriter, claim: ClaimInfo, tmp_path: Path) -> None:
    """Unprepare deletes the claim's directory and CDI specs; a second remove does nothing."""
    writer.write(claim, gpu_request("gpu"))
    writer.write(claim, gpu_request("extra"))
    removed = writer.remove(claim)
    assert writer.claim_dir(claim) in removed
    assert len([p for p in removed if p.suffix == ".json"]) == 2
    assert not writer.claim_dir(claim).exists()
    assert tree(tmp_path / "cdi") == []
    assert writer.remove(claim) == []


def test_remove_keeps_files_of_another_uid(writer: MetadataWriter, claim: ClaimInfo) -> None:
    """Removing one claim incarnation leaves a newer incarnation's files alone."""
    newer = ClaimInfo(claim.namespace, claim.name, "newer-uid")
    writer.write(newer, gpu_request())
    writer.remove(claim)
    assert writer.host_path(newer, "gpu").exists()
    assert writer.cdi_spec_path(newer, "gpu").exists()


def test_rebuild_rewrites_from_the_current_claims(writer: MetadataWriter, claim: ClaimInfo) -> None:
    """After a restart stale files go, current claims are rewritten, generations stay monotonic."""
    gone = ClaimInfo("ns", "gone", "uid-gone")
    writer.write(gone, gpu_request())
    writer.write(claim, gpu_request("gpu"))
    writer.update(claim, gpu_request("gpu"))  # generation 2
    writer.write(claim, gpu_request("stale"))
    writer.host_path(claim, "gpu").write_text("{ tampered")  # never trusted
    deferred = ClaimInfo("ns", "net", "uid-net")
    writer.write(deferred, PreparedRequest("net", (PreparedDevice("p", "vf"),)))
    writer.update(deferred, PreparedRequest("net", (PreparedDevice("p", "vf"),)))

    result = writer.rebuild(
        [
            PreparedClaim(claim, (gpu_request("gpu", index=5),)),
            PreparedClaim(deferred, (PreparedRequest("net", (PreparedDevice("p", "vf"),)),)),
        ]
    )
    assert not writer.claim_dir(gone).exists()
    assert not writer.cdi_spec_path(gone, "gpu").exists()
    assert not writer.host_path(claim, "stale").exists()
    assert not writer.cdi_spec_path(claim, "stale").exists()
    md = read_metadata_file(writer.host_path(claim, "gpu"))
    assert md.requests[0].devices[0].attributes["index"].as_int() == 5
    assert md.generation == 1  # the tampered file gave no generation to continue from
    assert read_metadata_file(writer.host_path(deferred, "net")).generation == 1  # still deferred
    assert [r.generation for r in result.written] == [1, 1]
    assert writer.claim_dir(gone) in result.removed

    again = writer.rebuild([PreparedClaim(claim, (gpu_request("gpu", index=5),))])
    assert [r.generation for r in again.written] == [2]
    assert not writer.claim_dir(deferred).exists()


def test_size_limit_applies_to_writes(tmp_path: Path, claim: ClaimInfo) -> None:
    """A write over the limit fails before anything reaches the disk."""
    writer = MetadataWriter(
        "gpu.example.com", plugin_data_dir=tmp_path / "p", cdi_dir=tmp_path / "cdi", max_bytes=200
    )
    with pytest.raises(MetadataInvalidError, match="over the 200-byte limit"):
        writer.write(claim, gpu_request())
    assert tree(tmp_path / "p") == []
    assert tree(tmp_path / "cdi") == []


def test_v0_36_skips_versions_it_does_not_know(tmp_path: Path, claim: ClaimInfo) -> None:
    """As v0.36 does, unknown versions (v1beta1 included) are skipped and a list with none it knows fails."""
    writer = MetadataWriter(
        "gpu.example.com",
        plugin_data_dir=tmp_path / "p",
        cdi_dir=tmp_path / "cdi",
        release=V0_36,
        versions=["metadata.resource.k8s.io/v9", V1BETA1, V1ALPHA1],
    )
    assert writer.versions == (V1ALPHA1,)
    result = writer.write(claim, gpu_request())
    assert result is not None
    assert result.host_path.read_text().count('"apiVersion"') == 1
    with pytest.raises(ValueError, match="none of the requested metadata versions"):
        MetadataWriter("gpu.example.com", release=V0_36, versions=["metadata.resource.k8s.io/v9"])


def test_v0_37_writes_v1beta1_then_v1alpha1_by_default(writer: MetadataWriter, claim: ClaimInfo) -> None:
    """The default (newest) release encodes v1beta1 first and v1alpha1 second, for older readers."""
    result = writer.write(claim, gpu_request())
    assert result is not None
    text = result.host_path.read_text()
    assert (V1BETA1, V1ALPHA1) == writer.versions
    assert text.index(V1BETA1) < text.index(V1ALPHA1)
    assert V1BETA1 == read_metadata_file(result.host_path).api_version


@pytest.mark.parametrize(
    ("versions", "message"),
    [
        pytest.param([], "must be selected explicitly", id="none"),
        pytest.param([V1ALPHA1], "must be enabled explicitly", id="without-v1beta1"),
        pytest.param([V1BETA1, "metadata.resource.k8s.io/v9"], "is not supported", id="unknown"),
    ],
)
def test_v0_37_refuses_version_lists_its_start_refuses(versions: list[str], message: str) -> None:
    """Like v0.37's Start: versions are explicit, include v1beta1 and are all known."""
    with pytest.raises(ValueError, match=message):
        MetadataWriter("gpu.example.com", release=V0_37, versions=versions)


def test_request_without_devices_gets_no_file(
    writer: MetadataWriter, claim: ClaimInfo, tmp_path: Path
) -> None:
    """Like upstream, a request with no devices gets no file and no mount."""
    assert writer.write(claim, PreparedRequest("gpu", ())) is None
    assert tree(tmp_path) == []


def test_explicit_policy_limits_attributes(tmp_path: Path, claim: ClaimInfo) -> None:
    """With an allowlist only the listed attributes are written."""
    writer = MetadataWriter(
        "gpu.example.com",
        plugin_data_dir=tmp_path / "p",
        cdi_dir=tmp_path / "cdi",
        policy=AttributePolicy.only(["resource.kubernetes.io/pciBusID"]),
    )
    result = writer.write(claim, gpu_request())
    assert result is not None
    assert list(read_metadata_file(result.host_path).requests[0].devices[0].attributes) == [
        "resource.kubernetes.io/pciBusID"
    ]
    assert result.dropped == ("worker-0/gpu-0: index",)


def test_failed_write_leaves_no_temp_file(
    writer: MetadataWriter, claim: ClaimInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the final rename fails, the temp file is removed and the old file stays."""
    first = writer.write(claim, gpu_request(index=1))
    assert first is not None
    before = first.host_path.read_bytes()

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk gone"):
        writer.update(claim, gpu_request(index=2))
    assert os.listdir(first.host_path.parent) == ["metadata.json"]
    assert first.host_path.read_bytes() == before


@pytest.mark.parametrize("uid", ["", "a_b", "a/b"])
def test_claim_uid_must_fit_the_layout(uid: str) -> None:
    """UIDs that would break the directory or CDI file name are refused."""
    with pytest.raises(ValueError, match="claim UID"):
        ClaimInfo("ns", "c", uid)


def test_concurrent_writer_and_reader_never_see_a_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader racing a writer always gets a complete, consistent old or new file."""
    # Visibility comes from the rename, not from fsync (which only matters for crashes): skip the
    # disk flushes so that many more write/read interleavings fit in the test's time.
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    iterations = 200
    writer = MetadataWriter("gpu.example.com", plugin_data_dir=tmp_path / "p", cdi_dir=tmp_path / "cdi")
    claim = ClaimInfo("ns", "race", "uid-race")
    root = tmp_path / "root"

    def request(seq: int) -> PreparedRequest:
        # Sizes vary a lot so a torn read would show up as truncated JSON or a length mismatch.
        attributes = {
            "seq": DeviceAttribute.of_int(seq),
            "pad": DeviceAttribute.of_string("x" * ((seq * 997) % 8000)),
        }
        return PreparedRequest("gpu", (PreparedDevice("p", "gpu-0", attributes),))

    writer.write(claim, request(0))
    mount(writer, claim, "gpu", root)
    selector = ClaimSelector.claim("race", "gpu", root=root)
    start = threading.Barrier(2)
    errors: list[BaseException] = []
    seen: list[int] = []

    def write_loop() -> None:
        try:
            start.wait()
            for seq in range(1, iterations):
                writer.update(claim, request(seq))
        except BaseException as exc:
            errors.append(exc)

    def read_loop() -> None:
        try:
            start.wait()
            for _ in range(iterations):
                md = read_metadata(selector)
                attrs = md.devices[0].attributes
                seq = attrs["seq"].as_int()
                assert md.generation == seq + 1
                assert len(attrs["pad"].as_str()) == (seq * 997) % 8000
                seen.append(seq)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write_loop), threading.Thread(target=read_loop)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert len(seen) == iterations
    assert seen == sorted(seen)  # never goes back to an older file
    assert [p.name for p in writer.host_path(claim, "gpu").parent.iterdir()] == ["metadata.json"]
