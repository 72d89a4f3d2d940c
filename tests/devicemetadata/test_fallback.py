"""Bounded waiting for deferred metadata and the explicit environment-variable fallback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from draledger.devicemetadata import (
    PCI_BUS_ID,
    ClaimSelector,
    DeviceAttribute,
    MetadataInvalidError,
    MetadataMissingError,
    MetadataNotReadyError,
    MissingCause,
    resolve_attributes,
    wait_for_metadata,
)
from tests.devicemetadata.helpers import FakeClock

DEFERRED = "resourceclaims/deferred-claim/net/net.example.com-metadata.json"


def finish_deferred(root: Path) -> None:
    """What a network driver's NRI hook does: rewrite with generation 2 and the attributes."""
    path = root / DEFERRED
    obj = json.loads(path.read_text())
    obj["metadata"]["generation"] = 2
    obj["requests"][0]["devices"][0]["attributes"] = {"ifname": {"string": "net1"}}
    path.write_text(json.dumps(obj, indent=2) + "\n")


def test_ready_metadata_returns_without_sleeping(root: Path, clock: FakeClock) -> None:
    """Metadata that is already final is returned at once."""
    md = wait_for_metadata(ClaimSelector.claim("gpu-claim", "gpu", root=root), clock=clock, sleep=clock.sleep)
    assert md.claim.name == "gpu-claim"
    assert clock.sleeps == []


def test_wait_returns_once_deferred_metadata_is_updated(root: Path, clock: FakeClock) -> None:
    """Polling stops as soon as the deferred file reaches generation 2 with attributes."""
    clock.on_sleep.append(lambda n: finish_deferred(root) if n == 3 else None)
    md = wait_for_metadata(
        ClaimSelector.claim("deferred-claim", "net", root=root),
        timeout=5,
        interval=0.5,
        clock=clock,
        sleep=clock.sleep,
    )
    assert md.generation == 2
    assert md.ready
    assert clock.sleeps == [0.5, 0.5, 0.5]


def test_wait_gives_up_on_the_deadline_when_not_ready(root: Path, clock: FakeClock) -> None:
    """Still generation 1 without attributes at the deadline: MetadataNotReadyError with the last view."""
    with pytest.raises(MetadataNotReadyError, match="not ready") as info:
        wait_for_metadata(
            ClaimSelector.claim("deferred-claim", "net", root=root),
            timeout=2,
            interval=0.75,
            clock=clock,
            sleep=clock.sleep,
        )
    assert info.value.last.generation == 1
    assert clock.sleeps == [0.75, 0.75, 0.5]  # the last sleep is cut to the deadline
    assert clock.now == 2


def test_wait_raises_the_last_missing_error(tmp_path: Path, clock: FakeClock) -> None:
    """A file that never appears ends with its MetadataMissingError after the deadline."""
    with pytest.raises(MetadataMissingError):
        wait_for_metadata(
            ClaimSelector.claim("c", "r", root=tmp_path), timeout=1, clock=clock, sleep=clock.sleep
        )
    assert clock.now == 1


def test_wait_retries_an_invalid_file_then_raises_it(root: Path, clock: FakeClock) -> None:
    """An invalid file is retried until the deadline and then reported as invalid."""
    (root / DEFERRED).write_text("{")
    with pytest.raises(MetadataInvalidError, match="truncated"):
        wait_for_metadata(
            ClaimSelector.claim("deferred-claim", "net", root=root), timeout=1, clock=clock, sleep=clock.sleep
        )


def test_wait_rejects_bad_bounds(root: Path) -> None:
    """A negative timeout or a zero interval is a programming error."""
    with pytest.raises(ValueError, match="timeout"):
        wait_for_metadata(ClaimSelector.claim("gpu-claim", root=root), timeout=-1)
    with pytest.raises(ValueError, match="interval"):
        wait_for_metadata(ClaimSelector.claim("gpu-claim", root=root), interval=0)


ENV = {PCI_BUS_ID: "GPU_PCI_BUS_ID", "index": "GPU_INDEX"}


def test_attributes_come_from_the_file_when_present(root: Path) -> None:
    """With a complete file the typed values come from it, whatever the environment says."""
    got = resolve_attributes(
        ClaimSelector.claim("gpu-claim", "gpu", root=root),
        ENV,
        environ={"GPU_PCI_BUS_ID": "ignored", "GPU_INDEX": "9"},
    )
    assert got.source == "file"
    assert got.values == {
        PCI_BUS_ID: DeviceAttribute.of_string("0000:3b:00.0"),
        "index": DeviceAttribute.of_int(0),
    }
    assert got.metadata is not None


def test_env_fallback_when_the_file_is_missing(tmp_path: Path) -> None:
    """No file: every value comes from its environment variable, as a string."""
    got = resolve_attributes(
        ClaimSelector.claim("gpu-claim", "gpu", root=tmp_path),
        ENV,
        environ={"GPU_PCI_BUS_ID": "0000:3b:00.0", "GPU_INDEX": "0"},
    )
    assert got.source == "env"
    assert got.values == {
        PCI_BUS_ID: DeviceAttribute.of_string("0000:3b:00.0"),
        "index": DeviceAttribute.of_string("0"),
    }
    assert got.metadata is None


def test_env_fallback_is_all_or_nothing(root: Path) -> None:
    """A file lacking one wanted attribute yields all values from the environment, never a mix."""
    got = resolve_attributes(
        ClaimSelector.claim("deferred-claim", "net", root=root),
        {"ifname": "NET_IFNAME"},
        environ={"NET_IFNAME": "eth9"},
    )
    assert got.source == "env"
    assert got.values["ifname"].value == "eth9"


def test_missing_file_and_unset_env_is_one_clear_error(root: Path) -> None:
    """Neither file nor environment: an error naming the missing attributes and env vars."""
    with pytest.raises(
        MetadataMissingError, match=r"ifname.*fallback environment variables unset: NET_IFNAME"
    ) as info:
        resolve_attributes(
            ClaimSelector.claim("deferred-claim", "net", root=root), {"ifname": "NET_IFNAME"}, environ={}
        )
    assert info.value.causes == (MissingCause.DEFERRED_NOT_WRITTEN,)


def test_env_never_masks_an_invalid_file(root: Path) -> None:
    """An invalid file raises even when every fallback variable is set."""
    (root / "resourceclaims/gpu-claim/gpu/gpu.example.com-metadata.json").write_text('{"apiVersion": ')
    with pytest.raises(MetadataInvalidError):
        resolve_attributes(
            ClaimSelector.claim("gpu-claim", "gpu", root=root),
            ENV,
            environ={"GPU_PCI_BUS_ID": "x", "GPU_INDEX": "0"},
        )


def test_driver_filter_selects_the_device(root: Path) -> None:
    """With `driver`, attributes come only from that driver's devices."""
    selector = ClaimSelector.claim("nic-claim", "nic", root=root)
    got = resolve_attributes(selector, {PCI_BUS_ID: "X"}, driver="nic.example.com", environ={})
    assert got.values[PCI_BUS_ID].value == "0000:5e:00.1"
    got = resolve_attributes(selector, {PCI_BUS_ID: "X"}, driver="rdma.example.com", environ={"X": "env"})
    assert got.source == "env"
