"""Shared helpers of the device-metadata tests: a fake clock, sample requests, a stand-in mount."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from draledger.devicemetadata import (
    ClaimInfo,
    DeviceAttribute,
    MetadataWriter,
    PreparedDevice,
    PreparedRequest,
)

GOLDEN = Path(__file__).parent / "golden"


class FakeClock:
    """A monotonic clock that only moves when `sleep` is called; `on_sleep` hooks run per sleep."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self.on_sleep: list[Callable[[int], None]] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        for hook in self.on_sleep:
            hook(len(self.sleeps))


def gpu_request(name: str = "gpu", index: int = 0) -> PreparedRequest:
    return PreparedRequest(
        name,
        (
            PreparedDevice(
                pool="worker-0",
                name=f"gpu-{index}",
                attributes={
                    "index": DeviceAttribute.of_int(index),
                    "resource.kubernetes.io/pciBusID": DeviceAttribute.of_string("0000:3b:00.0"),
                },
            ),
        ),
    )


def mount(writer: MetadataWriter, claim: ClaimInfo, request: str, container_root: Path) -> Path:
    """Stand in for the CDI bind mount: link the container path to the host file."""
    container = container_root / writer.container_path(claim, request).relative_to(writer.container_root)
    container.parent.mkdir(parents=True, exist_ok=True)
    container.symlink_to(writer.host_path(claim, request))
    return container
