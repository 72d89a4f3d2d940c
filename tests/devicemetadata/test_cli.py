"""`draledger metadata show|validate`: output and exit codes 0 (ok), 1 (missing/invalid), 2 (usage)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from draledger.devicemetadata import ClaimInfo, DeviceAttribute, MetadataWriter, PreparedDevice, PreparedRequest
from draledger.devicemetadata.cli import add_parser
from tests.devicemetadata.helpers import mount

GPU_FILE = "resourceclaims/gpu-claim/gpu/gpu.example.com-metadata.json"


def run(argv: list[str]) -> int:
    """Dispatch like the lead's `draledger.commands.cli`: add_parser, parse, call func."""
    parser = argparse.ArgumentParser(prog="draledger")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


def module(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "draledger.devicemetadata.cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_show_json_prints_merged_requests(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`-o json` prints the merged requests with devices and typed attributes."""
    assert (
        run(
            [
                "metadata",
                "show",
                "--root",
                str(root),
                "--claim",
                "nic-claim",
                "--request",
                "nic",
                "-o",
                "json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["claim"] == {
        "namespace": "net-test",
        "name": "nic-claim",
        "uid": "5d2f8a4b-1c3e-4f6a-9b8c-7d0e1f2a3b4c",
    }
    assert [d["driver"] for d in out["requests"][0]["devices"]] == ["nic.example.com", "rdma.example.com"]
    first = out["requests"][0]["devices"][0]
    assert first["attributes"]["resource.kubernetes.io/pciBusID"] == {"string": "0000:5e:00.1"}
    assert first["networkData"]["interfaceName"] == "net1"
    assert [s["driver"] for s in out["sources"]] == ["nic.example.com", "rdma.example.com"]


def test_show_table_for_a_template_claim(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The table lists one row per attribute with its type."""
    assert run(["metadata", "show", "--root", str(root), "--template", "my-gpu"]) == 0
    out = capsys.readouterr().out
    assert "podClaimName: my-gpu" in out
    assert any(
        line.split()[-3:] == ["resource.kubernetes.io/pciBusID", "string", "0000:af:00.0"]
        for line in out.splitlines()
    )
    assert any(line.split()[-3:] == ["index", "int", "4"] for line in out.splitlines())


def test_show_table_marks_deferred_metadata(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A device without attributes gets a placeholder row and the claim is marked not ready."""
    assert run(["metadata", "show", "--root", str(root), "--claim", "deferred-claim"]) == 0
    out = capsys.readouterr().out
    assert "deferred: not ready yet" in out
    assert out.splitlines()[-1].split()[-3:] == ["-", "-", "-"]


def test_show_missing_claim_exits_1_with_causes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing claim exits 1 and explains the possible causes on stderr."""
    assert run(["metadata", "show", "--root", str(tmp_path), "--claim", "gpu-claim"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: metadata missing: ")
    assert "possible causes" in err


def test_show_invalid_name_is_a_usage_error(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A claim name that cannot be a path segment exits 2."""
    assert run(["metadata", "show", "--root", str(root), "--claim", ".."]) == 2
    assert "invalid claim name" in capsys.readouterr().err


def test_validate_ok_and_invalid(root: Path, golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """validate exits 0 for a good file (listing the stream's versions) and 1 for unknown-only."""
    future = root / "resourceclaims/future-claim/gpu/gpu.example.com-metadata.json"
    assert run(["metadata", "validate", str(future)]) == 0
    assert "metadata.resource.k8s.io/v9, metadata.resource.k8s.io/v1alpha1" in capsys.readouterr().out
    assert run(["metadata", "validate", str(golden / "files" / "unknown-only.json")]) == 1
    assert "no known apiVersion" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["metadata"],
        ["metadata", "show"],
        ["metadata", "show", "--claim", "a", "--template", "b"],
        ["metadata", "show", "--claim", "a", "-o", "yaml"],
        ["metadata", "validate"],
    ],
)
def test_usage_errors_exit_2_in_process(argv: list[str]) -> None:
    """Missing or conflicting arguments are argparse usage errors (exit 2)."""
    with pytest.raises(SystemExit) as info:
        run(argv)
    assert info.value.code == 2


def test_subprocess_exit_code_0(root: Path) -> None:
    """`python -m draledger.devicemetadata.cli metadata show` exits 0 and prints JSON."""
    proc = module(
        "metadata", "show", "--root", str(root), "--claim", "gpu-claim", "--request", "gpu", "-o", "json"
    )
    assert proc.returncode == 0, proc.stderr
    devices = json.loads(proc.stdout)["requests"][0]["devices"]
    assert devices[0]["attributes"]["resource.kubernetes.io/pciBusID"] == {"string": "0000:3b:00.0"}


def test_subprocess_exit_code_1_for_truncated_file(root: Path) -> None:
    """A truncated file makes `validate` exit 1 with the path and problem on stderr."""
    path = root / GPU_FILE
    path.write_bytes(path.read_bytes()[:-10])
    proc = module("metadata", "validate", str(path))
    assert proc.returncode == 1
    assert str(path) in proc.stderr
    assert "truncated" in proc.stderr
    assert proc.stdout == ""


def test_subprocess_exit_code_1_for_missing_file(tmp_path: Path) -> None:
    """A missing file makes `validate` exit 1."""
    proc = module("metadata", "validate", str(tmp_path / "absent.json"))
    assert proc.returncode == 1
    assert "metadata missing" in proc.stderr


def test_subprocess_exit_code_2_for_usage() -> None:
    """Usage errors exit 2 for real."""
    proc = module("metadata", "show", "--request", "gpu")
    assert proc.returncode == 2
    assert "one of the arguments --claim --template is required" in proc.stderr


class TestListAttributes:
    """`show` with list-typed attributes (ints, bools, strings, versions)."""

    def test_table_prints_lists_as_json(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A list value is one cell, in JSON, with its list type."""
        writer = MetadataWriter("gpu.example.com", plugin_data_dir=tmp_path / "p", cdi_dir=tmp_path / "cdi")
        claim = ClaimInfo("ns", "list-claim", "uid-lists")
        attributes = {"numa": DeviceAttribute.of_ints([0, 1]), "fw": DeviceAttribute.of_versions(["1.0.0"])}
        writer.write(claim, PreparedRequest("gpu", (PreparedDevice("p", "gpu-0", attributes),)))
        mount(writer, claim, "gpu", tmp_path / "root")
        assert 0 == run(["metadata", "show", "--root", str(tmp_path / "root"), "--claim", "list-claim"])
        rows = [line.split(maxsplit=6)[4:] for line in capsys.readouterr().out.splitlines()[2:]]
        assert [["fw", "versions", '["1.0.0"]'], ["numa", "ints", "[0, 1]"]] == rows
