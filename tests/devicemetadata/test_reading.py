"""Finding and merging the metadata files of a claim inside a container."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from draledger.devicemetadata import (
    PCI_BUS_ID,
    ClaimSelector,
    MetadataError,
    MetadataInvalidError,
    MetadataMissingError,
    MissingCause,
    model,
    read_metadata,
    read_metadata_file,
    read_resource_claim_metadata,
    read_resource_claim_template_metadata,
)

GPU = "resourceclaims/gpu-claim/gpu/gpu.example.com-metadata.json"


def rewrite(path: Path, **changes: object) -> None:
    """Rewrite a golden file in place with top-level or metadata changes."""
    obj = json.loads(path.read_text())
    for key, value in changes.items():
        if key in ("name", "namespace", "uid", "generation"):
            obj["metadata"][key] = value
        else:
            obj[key] = value
    path.write_text(json.dumps(obj, indent=2) + "\n")


def test_direct_claim(root: Path) -> None:
    """A directly referenced claim is read from resourceclaims/<claim>/<request>/."""
    md = read_resource_claim_metadata("gpu-claim", "gpu", root=root)
    assert (md.claim.namespace, md.claim.name) == ("gpu-test1", "gpu-claim")
    assert md.attribute(PCI_BUS_ID) is not None
    assert md.attribute(PCI_BUS_ID).value == "0000:3b:00.0"  # type: ignore[union-attr]
    assert [s.driver for s in md.sources] == ["gpu.example.com"]
    assert md.generation == 1
    assert md.ready


def test_template_claim(root: Path) -> None:
    """A template claim is read by the pod's claim name and carries podClaimName."""
    md = read_resource_claim_template_metadata("my-gpu", "gpu", root=root)
    assert md.pod_claim_name == "my-gpu"
    assert md.claim.name == "pod0-my-gpu-2kqrd"
    assert [d.name for d in md.request("gpu").devices] == ["gpu-3", "gpu-4"]


def test_default_root_is_the_upstream_path() -> None:
    """Without a root the upstream in-container path is used."""
    assert ClaimSelector.claim("c", "r").claim_dir == Path(
        "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/c"
    )
    assert ClaimSelector.pod_claim("c").claim_dir == Path(
        "/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/c"
    )


def test_default_root_is_looked_up_at_call_time(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pointing model.DEFAULT_ROOT elsewhere redirects readers that pass no root."""
    monkeypatch.setattr(model, "DEFAULT_ROOT", root)
    assert read_resource_claim_metadata("gpu-claim", "gpu").claim.name == "gpu-claim"


def test_several_drivers_are_merged(root: Path) -> None:
    """Each driver's file of one request is read and their devices merged in driver order."""
    md = read_resource_claim_metadata("nic-claim", "nic", root=root)
    assert [s.driver for s in md.sources] == ["nic.example.com", "rdma.example.com"]
    assert [(d.driver, d.name) for d in md.request("nic").devices] == [
        ("nic.example.com", "eth1"),
        ("rdma.example.com", "mlx5_1"),
    ]
    assert md.generation == 2  # the highest among the files
    net = md.devices[0].network_data
    assert net is not None
    assert net.ips == ("10.0.0.5/24", "fd00::5/64")
    assert md.attribute("rdma.example.com/gid", driver="nic.example.com") is None


def test_subrequest_is_found_under_its_base_request(root: Path) -> None:
    """A prioritized-list subrequest is read from the base request's directory and keeps `req/sub`."""
    md = read_resource_claim_metadata("pref-claim", "accel", root=root)
    assert [r.name for r in md.requests] == ["accel/large"]
    assert md.request("accel") is md.request("accel/large")
    assert md.attribute("memory") is not None
    assert md.attribute("memory").as_int() == 85899345920  # type: ignore[union-attr]


def test_all_requests_of_a_claim(root: Path) -> None:
    """Without a request every request directory of the claim is read."""
    extra = root / "resourceclaims" / "gpu-claim" / "extra" / "gpu.example.com-metadata.json"
    extra.parent.mkdir()
    text = (root / GPU).read_text().replace('"name": "gpu",', '"name": "extra",')
    extra.write_text(text)
    md = read_resource_claim_metadata("gpu-claim", root=root)
    assert [r.name for r in md.requests] == ["extra", "gpu"]


def test_file_over_the_size_limit(root: Path) -> None:
    """A file larger than the limit is refused with its size and the limit."""
    with pytest.raises(MetadataInvalidError, match="over the 100-byte limit") as info:
        read_resource_claim_metadata("gpu-claim", "gpu", root=root, max_bytes=100)
    assert info.value.path == root / GPU


def test_default_size_limit_is_one_mebibyte(root: Path) -> None:
    """The default limit is 1 MiB: a file just over it is refused."""
    path = root / GPU
    path.write_bytes(path.read_bytes() + b" " * (1024 * 1024))
    with pytest.raises(MetadataInvalidError, match="1048576-byte limit"):
        read_metadata_file(path)


def test_request_missing_from_its_own_file(root: Path) -> None:
    """A file that does not hold the request of its directory is invalid."""
    path = root / GPU
    obj = json.loads(path.read_text())
    obj["requests"][0]["name"] = "other"
    path.write_text(json.dumps(obj))
    with pytest.raises(MetadataInvalidError, match="request 'gpu' is missing from its own file"):
        read_resource_claim_metadata("gpu-claim", "gpu", root=root)


def test_file_with_a_foreign_request(root: Path) -> None:
    """A file holding another directory's request besides its own is invalid."""
    path = root / GPU
    obj = json.loads(path.read_text())
    obj["requests"].append({"name": "other", "devices": []})
    path.write_text(json.dumps(obj))
    with pytest.raises(MetadataInvalidError, match="another directory: other"):
        read_resource_claim_metadata("gpu-claim", "gpu", root=root)


def test_device_of_another_driver(root: Path) -> None:
    """A device whose driver differs from the file's driver name is invalid."""
    path = root / GPU
    path.rename(path.with_name("other.example.com-metadata.json"))
    with pytest.raises(MetadataInvalidError, match=r"is of driver 'gpu\.example\.com'"):
        read_resource_claim_metadata("gpu-claim", "gpu", root=root)


def test_drivers_disagreeing_on_the_claim(root: Path) -> None:
    """Files of one request from different claim incarnations (UIDs) are not merged."""
    rewrite(root / "resourceclaims/nic-claim/nic/rdma.example.com-metadata.json", uid="another-uid")
    with pytest.raises(MetadataInvalidError, match="uid=another-uid"):
        read_resource_claim_metadata("nic-claim", "nic", root=root)


def test_claim_name_must_match_its_directory(root: Path) -> None:
    """A direct-claim file naming another claim is invalid."""
    rewrite(root / GPU, name="someone-else")
    with pytest.raises(MetadataInvalidError, match=r"metadata\.name is 'someone-else'"):
        read_resource_claim_metadata("gpu-claim", "gpu", root=root)


def test_pod_claim_name_must_match_its_directory(root: Path) -> None:
    """A template-claim file with another podClaimName is invalid."""
    rewrite(root / "resourceclaimtemplates/my-gpu/gpu/gpu.example.com-metadata.json", podClaimName="x")
    with pytest.raises(MetadataInvalidError, match="podClaimName is 'x'"):
        read_resource_claim_template_metadata("my-gpu", "gpu", root=root)


def test_truncated_file_in_the_layout(root: Path) -> None:
    """A truncated file found through the layout is an error naming its path."""
    path = root / GPU
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(MetadataInvalidError, match="truncated") as info:
        read_resource_claim_metadata("gpu-claim", "gpu", root=root)
    assert info.value.path == path


def test_no_metadata_mounted_at_all(tmp_path: Path) -> None:
    """No root at all: a missing error with the prepare/driver/write causes."""
    with pytest.raises(MetadataMissingError, match="no device metadata is mounted") as info:
        read_resource_claim_metadata("gpu-claim", "gpu", root=tmp_path / "nothing")
    assert MissingCause.CLAIM_NOT_PREPARED in info.value.causes
    assert MissingCause.DRIVER_WITHOUT_METADATA in info.value.causes
    assert "possible causes" in str(info.value)


def test_missing_claim_hints_at_the_other_kind(root: Path) -> None:
    """Asking for a template claim as a direct claim says which flag to use."""
    with pytest.raises(MetadataMissingError, match="use --template"):
        read_resource_claim_metadata("my-gpu", "gpu", root=root)
    with pytest.raises(MetadataMissingError, match="use --claim"):
        read_resource_claim_template_metadata("gpu-claim", "gpu", root=root)


def test_missing_request_lists_the_present_ones(root: Path) -> None:
    """A request without a directory names the requests that do have metadata."""
    with pytest.raises(MetadataMissingError, match=r"requests with metadata: gpu") as info:
        read_resource_claim_metadata("gpu-claim", "nope", root=root)
    assert MissingCause.REQUEST_WITHOUT_DEVICES in info.value.causes


def test_request_directory_without_files(root: Path) -> None:
    """A request directory without any *-metadata.json file suggests deferred metadata."""
    (root / GPU).unlink()
    with pytest.raises(MetadataMissingError) as info:
        read_resource_claim_metadata("gpu-claim", "gpu", root=root)
    assert MissingCause.DEFERRED_NOT_WRITTEN in info.value.causes


def test_claim_without_request_directories(root: Path) -> None:
    """A claim directory with no request directories is missing metadata."""
    (root / "resourceclaims" / "empty-claim").mkdir()
    with pytest.raises(MetadataMissingError, match="no request directories"):
        read_metadata(ClaimSelector.claim("empty-claim", root=root))


def test_missing_and_unreadable_single_files(tmp_path: Path) -> None:
    """read_metadata_file tells a missing file, a directory and other files apart."""
    with pytest.raises(MetadataMissingError, match="no such file"):
        read_metadata_file(tmp_path / "absent.json")
    with pytest.raises(MetadataInvalidError, match="is a directory"):
        read_metadata_file(tmp_path)
    assert issubclass(MetadataMissingError, MetadataError)
    assert not issubclass(MetadataMissingError, MetadataInvalidError)
