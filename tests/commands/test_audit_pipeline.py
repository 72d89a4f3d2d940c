"""``audit`` in a pipeline and at a terminal: --fail-on exit codes, hints about missing kinds, progress and
colour only on a terminal, and what cannot be a dump refused from its first bytes."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from draledger.commands import audit, dumps, progress
from strategies import CPU1, as_list, claim_obj, container, device, direct, node_obj, pod_obj, result, slice_obj

KUBECTL = "kubectl get nodes,pods,resourceslices,resourceclaims -A -o json"
# n1 is overcommitted (5 cpus asked of 4), n2 is Ready; every kind of object is there.
CLUSTER = [
    node_obj("n1", allocatable={"cpu": "4", "memory": "8Gi"}),
    node_obj("n2", allocatable={"cpu": "4", "memory": "8Gi"}),
    slice_obj("s", devices=[device("core-0", v136=CPU1)]),
    claim_obj("c", results=[result("core-0")]),
    pod_obj("p", containers=[container("a", {"cpu": "5"}, claims=["x"])], resource_claims=[direct("x", "c")]),
]


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def run(path: Path, *, output: str = "table", stdout: io.StringIO | None = None, stderr: io.StringIO | None = None,
        fail_on: tuple[str, ...] = audit.FAIL_ON) -> tuple[int, str, str]:
    """The audit's exit code, standard output, and standard error less the one line saying whose rules apply
    (``TestRelease``)."""
    out, err = stdout or io.StringIO(), stderr or io.StringIO()
    code = audit.run([str(path)], output, stdout=out, stderr=err, fail_on=fail_on)
    lines = err.getvalue().split("\n")
    said = [line for line in lines if line.startswith("release: ")]
    assert 1 == len(said), err.getvalue()
    return code, out.getvalue(), "\n".join(line for line in lines if not line.startswith("release: "))


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(as_list(CLUSTER)), encoding="utf-8")
    return path


class TestRelease:
    @pytest.mark.parametrize(("kubelets", "release", "why"), [
        pytest.param([], "v1.36", "no Node reports a kubeletVersion", id="no-kubelet"),
        pytest.param(["v1.37.2", "v1.38.0-beta.0"], "v1.38", "the newest kubelet in the dump is v1.38.0-beta.0",
                     id="newest-kubelet"),
        pytest.param(["v1.35.4"], "v1.36", "v1.35 is older than v1.36", id="older-kubelet"),
    ])
    def test_it_says_whose_rules_apply_and_why(self, tmp_path: Path, kubelets: list[str], release: str,
                                                why: str) -> None:
        """Without --release, the newest kubeletVersion decides (a lower bound of the control plane's), and the
        first line of standard error says which release and why."""
        nodes = [node_obj(f"n{i}", kubelet=version) for i, version in enumerate(kubelets or [None])]
        path = tmp_path / "dump.json"
        path.write_text(json.dumps(as_list(nodes)), encoding="utf-8")
        out, err = io.StringIO(), io.StringIO()
        assert 0 == audit.run([str(path)], "json", stdout=out, stderr=err)
        first = err.getvalue().splitlines()[0]
        assert first.startswith(f"release: {release}'s rules (")
        assert why in first
        assert {release} == {i["status"]["release"] for i in json.loads(out.getvalue())["items"]}

    def test_a_chosen_release_wins(self, tmp_path: Path) -> None:
        """--release overrides what the dump shows."""
        path = tmp_path / "dump.json"
        path.write_text(json.dumps(as_list([node_obj("n1", kubelet="v1.36.3")])), encoding="utf-8")
        out, err = io.StringIO(), io.StringIO()
        assert 0 == audit.run([str(path)], "json", stdout=out, stderr=err, release="v1.38")
        assert err.getvalue().startswith("release: v1.38's rules (chosen (--release))")
        assert "v1.38" == json.loads(out.getvalue())["items"][0]["status"]["release"]


class TestFailOn:
    def test_by_default_the_phases_do_not_fail(self, cluster: Path) -> None:
        """Without --fail-on an Overcommitted node still exits 0 (docs/cli.md): the ledgers are the answer."""
        assert (0, "") == run(cluster)[::2]

    def test_overcommitted_fails_when_asked(self, cluster: Path) -> None:
        """--fail-on Overcommitted: a node Overcommitted exits 1 after the output, named on stderr in one line."""
        code, out, err = run(cluster, output="json", fail_on=("Overcommitted",))
        assert 2 == len(json.loads(out)["items"])
        assert (1, "error: n1 (Overcommitted): 1 of 2 nodes in a --fail-on phase (Overcommitted)\n") == (code, err)

    def test_none_disables_it(self, cluster: Path) -> None:
        """--fail-on none: exit 0 whatever the phases."""
        assert (0, "") == run(cluster, fail_on=())[::2]

    def test_a_phase_no_node_is_in(self, cluster: Path) -> None:
        """--fail-on Stale,Frozen with every node Ready or Overcommitted: exit 0."""
        assert 0 == run(cluster, fail_on=("Stale", "Frozen"))[0]

    def test_through_the_command(self, cluster: Path) -> None:
        """The real command: exit 0 by default and with --fail-on none, 1 with --fail-on overcommitted or ready."""
        def code(*argv: str) -> int:
            return subprocess.run([sys.executable, "-m", "draledger", "audit", "-f", str(cluster), *argv],
                                  capture_output=True, timeout=60, check=False).returncode

        assert (0, 0, 1, 1) == (code(), code("--fail-on", "none"), code("--fail-on", "overcommitted"),
                                code("--fail-on", "ready"))


class TestMissingKinds:
    @pytest.mark.parametrize(
        ("kept", "missing"),
        [
            pytest.param(("Node", "Pod"), "ResourceSlice, ResourceClaim", id="no-dra-objects"),
            pytest.param(("Node", "Pod", "ResourceSlice"), "ResourceClaim", id="no-claims"),
            pytest.param(("Node", "ResourceSlice", "ResourceClaim"), "Pod", id="no-pods"),
        ],
    )
    def test_named_with_the_kubectl_line(self, tmp_path: Path, kept: tuple[str, ...], missing: str) -> None:
        """A dump without some of the kinds a ledger needs says which, and how to dump them (on stderr)."""
        path = tmp_path / "partial.json"
        path.write_text(json.dumps(as_list([i for i in CLUSTER if i["kind"] in kept])), encoding="utf-8")
        _, _, err = run(path, fail_on=())
        assert [f"warning: the dump has no {missing} objects: ledgers that need them turn Stale or miss claims; "
                f"dump with {KUBECTL}"] == [line for line in err.splitlines() if "the dump has no" in line]

    def test_a_complete_dump_has_no_hint(self, cluster: Path) -> None:
        """Every kind present: nothing but the --fail-on line on stderr."""
        assert "the dump has no" not in run(cluster)[2]


class TestTerminal:
    def test_progress_on_a_terminal(self, cluster: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A large dump (here: any, LARGE lowered) tells a terminal's stderr what it reads and computes; stdout
        is untouched (-o json still parses)."""
        monkeypatch.setattr(progress, "LARGE", 0)
        monkeypatch.setattr(dumps, "HEAD", 16)  # the file is read in several pieces, as a large one is
        monkeypatch.setattr(dumps, "CHUNK", 64)
        code, out, err = run(cluster, output="json", stderr=Terminal(), fail_on=())
        assert (0, 2) == (code, len(json.loads(out)["items"]))
        lines = err.split("\n")
        assert re.fullmatch(rf"(\rreading {re.escape(str(cluster))}: 0 MB \.\.\.)+", lines[0])
        assert [f"parsing {cluster}", "computing 2 ledgers", ""] == lines[1:]

    def test_no_progress_for_a_small_dump(self, cluster: Path) -> None:
        """A dump read in a moment shows no progress, even on a terminal."""
        assert "" == run(cluster, stderr=Terminal(), fail_on=())[2]

    def test_no_progress_in_a_pipe(self, cluster: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """stderr that is no terminal (a pipe, a CI log) never gets progress lines."""
        monkeypatch.setattr(progress, "LARGE", 0)
        assert "" == run(cluster, fail_on=())[2]

    def test_phases_coloured_on_a_terminal(self, cluster: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """On a terminal the table colours the phase text only: columns still line up once the codes are gone."""
        monkeypatch.delenv("NO_COLOR", raising=False)
        _, out, _ = run(cluster, stdout=Terminal(), fail_on=())
        assert "\033[31mOvercommitted\033[0m   " in out
        plain = re.sub(r"\033\[\d+m", "", out)
        assert plain == run(cluster, fail_on=())[1]

    @pytest.mark.parametrize("no_color", ["1", "yes"])
    def test_no_color(self, cluster: Path, monkeypatch: pytest.MonkeyPatch, no_color: str) -> None:
        """NO_COLOR set to anything: no colour, even on a terminal."""
        monkeypatch.setenv("NO_COLOR", no_color)
        assert "\033" not in run(cluster, stdout=Terminal(), fail_on=())[1]

    def test_no_colour_in_a_pipe(self, cluster: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Not a terminal: no colour."""
        monkeypatch.delenv("NO_COLOR", raising=False)
        assert "\033" not in run(cluster, fail_on=())[1]


class TestFirstBytes:
    @pytest.fixture
    def large_text(self, tmp_path: Path) -> Path:
        """50 MB of prose: once 25 s of parsing before `expected a kind: List object, got str`."""
        path = tmp_path / "large.log"
        line = b"2026-12-03 10:00:00 INFO something happened on the node, as it does every second\n"
        with path.open("wb") as stream:
            for _ in range(50_000_000 // len(line) // 1000):
                stream.write(line * 1000)
        return path

    def test_refused_after_its_first_bytes(self, large_text: Path) -> None:
        """Only the head is read: nothing after it reaches the progress counter."""
        counter = progress.Progress(io.StringIO())
        with pytest.raises(dumps.DumpError, match="neither JSON nor YAML of a List: it starts with '2026-12-03"):
            dumps.read_source(str(large_text), counter)
        assert 0 == counter.read

    def test_refused_by_the_command_within_seconds(self, large_text: Path) -> None:
        """The real command refuses it in one line, exit 2, well within a generous deadline."""
        done = subprocess.run([sys.executable, "-m", "draledger", "audit", "-f", str(large_text)],
                              capture_output=True, text=True, timeout=20, check=False)
        assert (2, "", 1) == (done.returncode, done.stdout, len(done.stderr.splitlines()))
        assert done.stderr.startswith(f"error: {large_text}: neither JSON nor YAML of a List")

    @pytest.mark.parametrize(
        "head",
        [
            pytest.param("\n\n  {", id="json-after-blank-lines"),
            pytest.param("\ufeff[", id="json-after-a-byte-order-mark"),
            pytest.param("# kubectl get nodes -o yaml\n---\napiVersion: v1\n", id="yaml-after-a-comment"),
            pytest.param("%YAML 1.1\n---\nkind: List\n", id="yaml-after-a-directive"),
            pytest.param("items: []\n", id="yaml-items-first"),
            pytest.param("", id="empty"),
        ],
    )
    def test_what_can_start_a_dump(self, head: str) -> None:
        """JSON objects and arrays, and YAML that opens with a List's key, pass the first look."""
        dumps.sniff(head, "dump")

    def test_yaml_from_kubectl_is_read(self, tmp_path: Path) -> None:
        """A commented YAML dump as kubectl prints it is audited like its JSON twin."""
        path = tmp_path / "dump.yaml"
        path.write_text("# from the staging cluster\n---\n" + yaml.safe_dump(as_list(CLUSTER)), encoding="utf-8")
        assert 2 == len(json.loads(run(path, output="json", fail_on=())[1])["items"])
