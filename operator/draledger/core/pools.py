"""A pool of devices as the rules read it: its slices, its newest generation, its devices, whether it is whole.

Rules (kube-scheduler's allocator; docs/accounting.md, 6 "Missing slices and `Stale`"):
1. A pool's devices are those of its slices of the newest generation (the highest ``spec.pool.generation`` among
   its slices).
2. A pool is complete when its newest generation has at least the ``resourceSliceCount`` its slices say.
3. A device name published twice in the newest generation makes the pool invalid, as the allocator calls it
   (``validateDeviceNames``): no device of it resolves, whatever order the slices arrived in.
4. The devices are indexed, and completeness judged, when first read after a change, never per slice event:
   drivers republish a pool's slices one by one.
"""

from __future__ import annotations

from collections.abc import Mapping

from draledger.core.views import DeviceView, SliceView

_NO_DEVICES: Mapping[str, DeviceView] = {}


class Pool:
    """The slices of one pool (rules 1 to 4); only ``put`` and ``drop`` change it."""

    __slots__ = ("_complete", "_devices", "_invalid", "newest", "slices")

    def __init__(self) -> None:
        self.slices: dict[str, SliceView] = {}
        self.newest = 0  # the newest generation among the slices (rule 1)
        self._devices: Mapping[str, DeviceView] | None = None  # built on first read (rule 4)
        self._invalid = ""
        self._complete: bool | None = None  # judged on first read (rule 4)

    def put(self, view: SliceView) -> None:
        self.slices[view.name] = view
        self._changed()

    def drop(self, name: str) -> None:
        del self.slices[name]
        self._changed()

    def _changed(self) -> None:
        self.newest = max((s.generation for s in self.slices.values()), default=0)
        self._devices = self._complete = None

    def newest_slices(self) -> list[SliceView]:
        return [s for s in self.slices.values() if s.generation == self.newest]

    @property
    def devices(self) -> Mapping[str, DeviceView]:
        """The devices of the newest generation by name; none in an invalid pool (rules 1 and 3)."""
        if self._devices is None:
            index: dict[str, DeviceView] = {}
            twice: list[str] = []
            for view in sorted(self.newest_slices(), key=lambda s: s.name):
                for device in view.devices:
                    if device.name in index:
                        twice.append(device.name)
                    index[device.name] = device
            self._invalid = f"duplicate device name {sorted(twice)[0]}" if twice else ""
            self._devices = _NO_DEVICES if twice else index
        return self._devices

    @property
    def invalid(self) -> str:
        """Why the newest generation is invalid ("" when it is not, rule 3)."""
        self.devices  # noqa: B018  (builds the index, which finds it)
        return self._invalid

    @property
    def complete(self) -> bool:
        """Rule 2."""
        if self._complete is None:
            newest = self.newest_slices()
            self._complete = len(newest) >= max((s.slice_count for s in newest), default=0)
        return self._complete
