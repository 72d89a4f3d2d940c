"""Device metadata (KEP-5304) in real containers: what a pod reads, and when the files come and go.

Each test runs twice per release: with the Go helper writing the metadata (``helper``, the driver
``world.DRIVER`` on ``k8s.io/dynamic-resource-allocation/kubeletplugin``'s ``EnableDeviceMetadata``) and with
draledger.devicemetadata writing it (``python``, ``world.META_DRIVER`` in ``--metadata=python`` mode). The
container is busybox: it prints what it sees, and the test reads that through ``kubectl logs`` (the real
kube-apiserver asking the real kubelet) and parses it with draledger.devicemetadata.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from draledger.devicemetadata.codec import decode_stream
from draledger.devicemetadata.model import DeviceMetadata
from tests.realcluster.cluster import wait_until
from tests.realnode import world
from tests.realnode.drivers import Driver
from tests.realnode.site import NodeSite, Scratch

WITHIN = 60.0


@dataclass(frozen=True)
class Writer:
    """Who writes a driver's metadata, and the kind of device its claims get."""

    driver_attr: str  # NodeSite.cpu or NodeSite.meta
    kind: str

    def driver(self, site: NodeSite) -> Driver:
        found: Driver = getattr(site, self.driver_attr)
        return found


WRITERS = [pytest.param(Writer("cpu", "core"), id="helper"), pytest.param(Writer("meta", "nic"), id="python")]


def container_path(driver: str, request: str, *, template: str = "", claim: str = "") -> str:
    """KEP-5304's path inside the container (docs/device-metadata.md)."""
    where = f"resourceclaimtemplates/{template}" if template else f"resourceclaims/{claim}"
    return f"{world.METADATA_ROOT}/{where}/{request}/{driver}-metadata.json"


def host_file(site: NodeSite, driver: str, claim: dict[str, Any], request: str) -> Path:
    """Where the driver keeps the file on the node: ``<plugin dir>/dra-device-metadata/<ns>_<claim>/<request>/``."""
    meta = claim["metadata"]
    return (site.node.plugin_dir(driver) / "dra-device-metadata" / f"{meta['namespace']}_{meta['name']}" / request
            / "metadata.json")


def cdi_specs(site: NodeSite, driver: str, claim: dict[str, Any]) -> list[str]:
    """The CDI specs of the claim: the driver's own and the metadata mount's."""
    uid = claim["metadata"]["uid"]
    return sorted(path.name for path in site.node.cdi_dir.glob(f"{driver}_*_{uid}*.json"))


def sections(log: str) -> dict[str, str]:
    """The container's output, cut at its ``=== name`` lines."""
    out: dict[str, str] = {}
    name = ""
    for line in log.splitlines(keepends=True):
        if line.startswith("=== "):
            name = line[4:].strip()
            out[name] = ""
        elif name:
            out[name] += line
    return out


def reader_script(path: str, other: str) -> str:
    return (f"echo '=== file'; cat {path}; echo '=== write'; if (echo x >> {path}) 2>&1; then echo WRITABLE; "
            f"else echo READ-ONLY; fi; echo '=== mount'; grep -c ' {path} .* ro[,.]' /proc/mounts; "
            f"echo '=== tree'; find {world.METADATA_ROOT} -type f; echo '=== other'; "
            f"if [ -e {other} ]; then echo VISIBLE; else echo INVISIBLE; fi; echo '=== end'")


def parsed(text: str, where: str) -> DeviceMetadata:
    return decode_stream(text.encode(), where)


def published_attributes(driver: Driver, device: str) -> dict[str, Any]:
    for pool in driver.pools["pools"].values():
        for piece in pool["slices"]:
            for entry in piece["devices"]:
                if entry["name"] == device:
                    return dict(entry["attributes"])
    raise AssertionError(f"{device} is not published by {driver.name}")


@pytest.mark.parametrize("writer", WRITERS)
def test_container_reads_its_own_file_read_only_and_not_another_claims(
        realnode: NodeSite, ns: Scratch, writer: Writer) -> None:
    """The metadata file is at the KEP path, read-only, equal to the driver's; another claim's file is not there."""
    driver = writer.driver(realnode)
    ns.claim("other", writer.kind)
    ns.create(world.pod("holder", claims=[{"name": "dev", "resourceClaimName": "other"}]))
    ns.running("holder")
    ns.template("dev", writer.kind)
    mine = container_path(driver.name, writer.kind, template="dev")
    other = container_path(driver.name, writer.kind, claim="other")
    ns.create(world.pod("reader", script=reader_script(mine, other) + "; while :; do sleep 1; done",
                        claims=[{"name": "dev", "resourceClaimTemplateName": "dev"}]))
    ns.running("reader")
    seen = sections(ns.log_until("reader", "=== end"))
    claim = ns.claim_of("reader", "dev")
    on_host = host_file(realnode, driver.name, claim, writer.kind)

    assert on_host.read_text() == seen["file"]
    metadata = parsed(seen["file"], mine)
    assert (claim["metadata"]["namespace"], claim["metadata"]["name"], claim["metadata"]["uid"]) == (
        metadata.claim.namespace, metadata.claim.name, metadata.claim.uid)
    assert ("dev", 1) == (metadata.pod_claim_name, metadata.generation)
    (device,) = metadata.requests[0].devices
    allocated = claim["status"]["allocation"]["devices"]["results"][0]
    assert (driver.name, allocated["pool"], allocated["device"]) == (device.driver, device.pool, device.name)
    assert published_attributes(driver, device.name) == {name: value.to_json()
                                                          for name, value in device.attributes.items()}
    assert ["Read-only file system", "READ-ONLY"] == [seen["write"].splitlines()[0].rsplit(": ", 1)[1],
                                                      seen["write"].splitlines()[-1]]
    assert "1" == seen["mount"].strip()
    assert [mine] == seen["tree"].split()
    assert "INVISIBLE" == seen["other"].strip()


@pytest.mark.parametrize("writer", WRITERS)
def test_unprepare_removes_the_host_files_and_cdi_specs(realnode: NodeSite, ns: Scratch, writer: Writer) -> None:
    """Once the pod is deleted and its claim unprepared, its metadata file, directory and both CDI specs are gone."""
    driver = writer.driver(realnode)
    ns.template("dev", writer.kind)
    ns.create(world.pod("app", claims=[{"name": "dev", "resourceClaimTemplateName": "dev"}]))
    ns.running("app")
    claim = ns.claim_of("app", "dev")
    on_host = host_file(realnode, driver.name, claim, writer.kind)
    uid = claim["metadata"]["uid"]
    assert on_host.is_file()
    assert sorted([f"{driver.name}_claim_{uid}.json", f"{driver.name}_metadata_{uid}_{writer.kind}.json"]) == (
        cdi_specs(realnode, driver.name, claim))

    ns.delete("app")
    wait_until(lambda: not on_host.parent.parent.exists() and not cdi_specs(realnode, driver.name, claim),
               within=WITHIN, what="the claim's metadata directory and CDI specs to be removed")
    unprepared = [record for record in driver.records() if record["event"] == "unprepare" and record["uid"] == uid]
    assert [""] == [record["error"] for record in unprepared]


@pytest.mark.parametrize("writer", WRITERS)
def test_a_metadata_update_bumps_the_generation_on_the_node(realnode: NodeSite, ns: Scratch, writer: Writer) -> None:
    """An update rewrites the file with generation 2 and the new attributes; a running container keeps its mount."""
    driver = writer.driver(realnode)
    ns.template("dev", writer.kind)
    path = container_path(driver.name, writer.kind, template="dev")
    script = f"while :; do echo \"=== tick\"; cat {path}; sleep 1; done"
    ns.create(world.pod("app", script=script, claims=[{"name": "dev", "resourceClaimTemplateName": "dev"}]))
    ns.running("app")
    claim = ns.claim_of("app", "dev")
    on_host = host_file(realnode, driver.name, claim, writer.kind)
    before = on_host.stat()
    allocated = claim["status"]["allocation"]["devices"]["results"][0]
    attributes = {**published_attributes(driver, allocated["device"]), "firmware": {"version": "2.0.0"}}

    driver.update_metadata(claim, writer.kind, [{"request": allocated["request"], "pool": allocated["pool"],
                                                 "device": allocated["device"], "attributes": attributes}])
    updated = parsed(on_host.read_text(), str(on_host))
    assert 2 == updated.generation
    assert attributes == {name: value.to_json() for name, value in updated.requests[0].devices[0].attributes.items()}
    in_place = on_host.stat().st_ino == before.st_ino
    # v0.36's helper rewrites the file in place; v0.37's and draledger.devicemetadata replace it (a new inode)
    assert (realnode.release.name == "v1.36" and writer.driver_attr == "cpu") == in_place
    ticks = ns.logs("app").count("=== tick")
    log = wait_until(lambda: text if (text := ns.logs("app")).count("=== tick") >= ticks + 3 else None,
                     within=WITHIN, what="three more reads by the container after the update")
    last_complete = log.split("=== tick\n")[-2]
    # a bind mount pins the inode it was made with: only an in-place rewrite reaches a running container
    assert (2 if in_place else 1) == parsed(last_complete, path).generation
