"""``draledger audit``: the conformance cases through the real command and through the core, the output
formats, merged and standard-input dumps, and bad input (whole files rejected, single objects named)."""

from __future__ import annotations

import io
import itertools
import json
import re
import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from draledger.commands import audit, dumps
from draledger.core.accounting.ledger import Flags
from draledger.core.loading import all_problems, load
from strategies import (
    CPU1,
    as_list,
    claim_obj,
    container,
    device,
    direct,
    node_obj,
    pod_obj,
    result,
    slice_obj,
    status_v136,
)

RunAudit = Callable[..., subprocess.CompletedProcess[str]]  # the run_audit fixture (conftest.py)
WriteDump = Callable[..., Path]  # the write_dump fixture (conftest.py)
CASES = sorted(p.stem for p in (Path(__file__).parents[1] / "conformance").glob("*.json"))
NOW = "2026-12-02T10:00:00Z"

# ------------------------------------------------------------------ comparing ledgers with `expect`
# Same semantics as /work/shared/tools/check_cases.py: quantities compared numerically (a missing figure
# passes when 0 is expected), claim problems as substrings, absentClaims, ledgerCount and conditions.

_SUFFIX = {"": Decimal(1), "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "k": Decimal(10**3),
           "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12), "P": Decimal(10**15),
           "E": Decimal(10**18), "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30),
           "Ti": Decimal(2**40), "Pi": Decimal(2**50), "Ei": Decimal(2**60)}
_QTY = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|n|u)?$")


def without_release(err: str) -> str:
    """Standard error less its first line, which says whose rules apply and why (every audit prints it)."""
    first, _, rest = err.partition("\n")
    assert first.startswith("release: "), err
    return rest


def qty(text: object) -> Decimal:
    if isinstance(text, int | float):
        return Decimal(str(text))
    match = _QTY.match(str(text).strip())
    if match is None:
        raise ValueError(f"not a quantity: {text!r}")
    return Decimal(match[1] + (match[2] or "")) * _SUFFIX[match[3] or ""]


def _same(got: object, want: object) -> bool:
    if got is None:
        return qty(want) == 0
    try:
        return qty(got) == qty(want)
    except ValueError:
        return False


def _figures(got: dict[str, Any], want: dict[str, dict[str, Any]], where: str) -> list[str]:
    errors = []
    for resource, fields in want.items():
        line = got.get(resource) or {}
        errors += [f"{where}.{resource}.{f} = {line.get(f)}, expected {v}"
                   for f, v in fields.items() if not _same(line.get(f), v)]
    return errors


def compare_ledger(ledger: dict[str, Any], want: dict[str, Any], where: str) -> list[str]:
    status = ledger.get("status") or {}
    errors = []
    if "phase" in want and status.get("phase") != want["phase"]:
        errors.append(f"{where}: phase {status.get('phase')!r}, expected {want['phase']!r}")
    errors += _figures(status.get("resources") or {}, want.get("resources", {}), f"{where}: resources")
    zones = {str(z.get("id")): z.get("resources") or {} for z in status.get("numaZones") or []}
    for zone, resources in want.get("numaZones", {}).items():
        errors += _figures(zones.get(zone, {}), resources, f"{where}: numaZones[{zone}]")
    claims = {f"{c.get('namespace')}/{c.get('name')}": c for c in status.get("claims") or []}
    for key, wanted in want.get("claims", {}).items():
        claim = claims.get(key)
        if claim is None:
            errors.append(f"{where}: claim {key} missing from the ledger")
            continue
        got = claim.get("resources") or {}
        errors += [f"{where}: claim {key} resources.{r} = {got.get(r)}, expected {v}"
                   for r, v in wanted.get("resources", {}).items()
                   if got.get(r) is None or not _same(got.get(r), v)]
        problems = " ".join(str(p) for p in claim.get("problems") or [])
        errors += [f"{where}: claim {key} lacks problem {p}" for p in wanted.get("problems", []) if p not in problems]
    errors += [f"{where}: claim {key} should not be in this ledger" for key in want.get("absentClaims", [])
               if key in claims]
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    errors += [f"{where}: condition {t} = {conditions.get(t)}, expected {v}"
               for t, v in want.get("conditions", {}).items() if conditions.get(t) != v]
    return errors


def compare(items: list[dict[str, Any]], expect: dict[str, Any]) -> list[str]:
    """Every way the printed ledgers differ from a conformance case's ``expect`` (empty: they match)."""
    errors = [f"item {i.get('metadata', {}).get('name')} has kind {i.get('kind')!r}"
              for i in items if i.get("kind") != "NodeAllocatableLedger"]
    by_node = {(i.get("status") or {}).get("nodeName") or i.get("metadata", {}).get("name"): i for i in items}
    if "ledgerCount" in expect and len(items) != expect["ledgerCount"]:
        errors.append(f"{len(items)} ledgers, expected {expect['ledgerCount']}")
    for node, want in expect.get("nodes", {}).items():
        if node not in by_node:
            errors.append(f"no ledger for node {node}")
        else:
            errors += compare_ledger(by_node[node], want, node)
    return errors


def core_ledgers(items: list[Any], flags: Flags | None = None) -> list[dict[str, Any]]:
    loaded = load(items, "test")
    return audit.ledgers_of(loaded, flags or Flags(), NOW)


def timeless(document: Any) -> Any:
    """The document without observedTime and lastTransitionTime (the only clock-dependent fields)."""
    if isinstance(document, dict):
        return {k: timeless(v) for k, v in document.items() if k not in ("observedTime", "lastTransitionTime")}
    if isinstance(document, list):
        return [timeless(v) for v in document]
    return document


def run_in_process(*args: str, stdin: str = "") -> tuple[int, str, str]:
    """``audit.run`` with captured streams: the same code path as the command, with coverage."""
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        pairs = list(itertools.pairwise(args))
        paths = [a for flag, a in pairs if flag == "-f"]
        output = next((a for flag, a in pairs if flag == "-o"), "table")
        attributes = [a for flag, a in pairs if flag == "--numa-attribute"]
        code = audit.run(paths, output, "--numa" in args, attributes, stdout=out, stderr=err)
    finally:
        sys.stdin = old
    return code, out.getvalue(), err.getvalue()


# ------------------------------------------------------------------ the conformance cases


@pytest.fixture(scope="module")
def command_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every conformance case through the real command, run side by side (one process each)."""
    folder = tmp_path_factory.mktemp("conformance")
    running = {}
    for name in CASES:
        case = json.loads((Path(__file__).parents[1] / "conformance" / f"{name}.json").read_text(encoding="utf-8"))
        dump = folder / f"{name}.json"
        dump.write_text(json.dumps(case["dump"]), encoding="utf-8")
        running[name] = subprocess.Popen(
            [sys.executable, "-m", "draledger", "audit", "-f", str(dump), "-o", "json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = {}
    for name, process in running.items():
        stdout, stderr = process.communicate(timeout=90)
        results[name] = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    return results


class TestConformance:
    @pytest.mark.parametrize("case", CASES)
    def test_through_the_command(self, case: str, conformance_cases: dict[str, dict[str, Any]],
                                 command_results: dict[str, subprocess.CompletedProcess[str]]) -> None:
        """`draledger audit -f CASE -o json` prints the expected ledgers and exits 0 (no --fail-on), whatever
        the phases (docs/cli.md: only --fail-on turns a phase into exit 1)."""
        expect = conformance_cases[case]["expect"]
        done = command_results[case]
        output = json.loads(done.stdout)
        assert expect.get("exitCode", 0) == done.returncode, done.stderr
        for text in expect.get("stderrContains", []):
            assert text in done.stderr
        assert ("v1", "List") == (output["apiVersion"], output["kind"])
        assert [] == compare(output["items"], expect)

    @pytest.mark.parametrize("case", CASES)
    def test_through_the_core(self, case: str, conformance_cases: dict[str, dict[str, Any]]) -> None:
        """dumps.load_items + audit.ledgers_of give the expected ledgers."""
        assert [] == compare(core_ledgers(conformance_cases[case]["dump"]["items"]), conformance_cases[case]["expect"])

    @pytest.mark.parametrize("case", CASES)
    def test_command_and_core_agree(self, case: str, conformance_cases: dict[str, dict[str, Any]],
                                    command_results: dict[str, subprocess.CompletedProcess[str]]) -> None:
        """The command prints exactly what the core computes (clock fields aside)."""
        printed = json.loads(command_results[case].stdout)["items"]
        assert timeless(core_ledgers(conformance_cases[case]["dump"]["items"])) == timeless(printed)

    def test_ledgers_are_sorted_by_node(self, conformance_cases: dict[str, dict[str, Any]]) -> None:
        """Ledgers come out sorted by node name, one per Node, whatever the dump order."""
        items = list(reversed(conformance_cases["v08-multi-node"]["dump"]["items"]))
        assert ["n1", "n2", "n3"] == [i["metadata"]["name"] for i in core_ledgers(items)]


class TestCompareHelper:
    def test_reports_each_kind_of_mismatch(self, conformance_cases: dict[str, dict[str, Any]]) -> None:
        """The comparison is not vacuous: wrong figures, zones, claims, problems and conditions are reported."""
        ledgers = core_ledgers(conformance_cases["v06-missing-resource-slice"]["dump"]["items"])
        wrong = {"ledgerCount": 2, "nodes": {"n1": {
            "phase": "Ready",
            "resources": {"cpu": {"requested": "4", "free": "3500m"}, "gpu": {"claims": "1"}},
            "numaZones": {"0": {"cpu": {"capacity": "1"}}},
            "claims": {"t/c2": {"problems": ["SharedAcrossPods"], "resources": {"cpu": "2"}}, "t/zz": {}},
            "absentClaims": ["t/c1"],
            "conditions": {"Fits": "False"},
        }, "n9": {}}}
        errors = compare(ledgers, wrong)
        assert [
            "1 ledgers, expected 2",
            "n1: phase 'Stale', expected 'Ready'",
            "n1: resources.cpu.requested = 4500m, expected 4",
            "n1: resources.gpu.claims = None, expected 1",
            "n1: numaZones[0].cpu.capacity = None, expected 1",
            "n1: claim t/c2 resources.cpu = 1, expected 2",
            "n1: claim t/c2 lacks problem SharedAcrossPods",
            "n1: claim t/zz missing from the ledger",
            "n1: claim t/c1 should not be in this ledger",
            "n1: condition Fits = True, expected False",
            "no ledger for node n9",
        ] == errors

    def test_missing_zero_figure_passes(self) -> None:
        """A figure the ledger leaves out passes when 0 is expected; quantities compare numerically."""
        ledger = {"kind": "NodeAllocatableLedger",
                  "status": {"nodeName": "n1", "resources": {"cpu": {"free": "1500m"}}}}
        assert [] == compare([ledger], {"nodes": {"n1": {"resources": {"cpu": {"free": "1.5", "claims": "0"},
                                                                        "memory": {"free": 0}}}}})
        assert ["n1: resources.cpu.free = 1500m, expected x"] == compare(
            [ledger], {"nodes": {"n1": {"resources": {"cpu": {"free": "x"}}}}})

    def test_non_ledger_items_are_reported(self) -> None:
        """An item that is not a NodeAllocatableLedger is an error."""
        assert ["item n1 has kind 'Node'"] == compare([{"kind": "Node", "metadata": {"name": "n1"}}], {})


# ------------------------------------------------------------------ outputs and inputs

TWO_NODES = [
    node_obj("n1", allocatable={"cpu": "16", "memory": "64Gi"}),
    node_obj("n2", allocatable={"cpu": "4", "memory": "8Gi"}),
    slice_obj("n1-cores", devices=[device(f"core-{i}", attributes={"numaNode": i // 2},
                                          v136={"cpu": {"allocationMultiplier": "2"}}) for i in range(4)]),
    claim_obj("c", results=[result("core-0"), result("core-2")]),
    pod_obj("p1", containers=[container("a", {"cpu": "1", "memory": "1Gi"}, claims=["x"])],
            resource_claims=[direct("x", "c")], claim_statuses=[status_v136("c", ["a"], {"cpu": "4"})]),
    pod_obj("p2", node="n2", containers=[container("a", {"cpu": "500m"})]),
]


class TestOutputs:
    def test_table(self, write_dump: WriteDump) -> None:
        """-o table (the default) reads like kubectl: upper-case headers, aligned columns, one row per node."""
        code, out, err = run_in_process("-f", str(write_dump(as_list(TWO_NODES))))
        assert (0, "") == (code, without_release(err))
        lines = out.splitlines()
        assert ["NAME", "PHASE", "CPU REQ/ALLOC", "MEMORY REQ/ALLOC", "OTHER", "CLAIMS", "SCHEDULER", "PROBLEMS",
                "RELEASE"] == \
            re.split(r"\s{3,}", lines[0])
        assert [["n1", "Ready", "5/16", "1Gi/64Gi", "-", "1", "InSync", "0", "v1.36"],
                ["n2", "Ready", "0.5/4", "0/8Gi", "-", "0", "InSync", "0", "v1.36"]] == [
            re.split(r"\s{3,}", row) for row in lines[1:]]
        columns = [m.start() for m in re.finditer(r"\S+(?: \S+)*", lines[0])]
        for row in lines[1:]:  # every cell starts under its header
            assert columns == [m.start() for m in re.finditer(r"\S+(?: \S+)*", row)]
        assert all(line == line.rstrip() for line in lines)

    def test_table_with_numa_zones(self, write_dump: WriteDump) -> None:
        """--numa adds one row per NUMA zone under its node, with claims/capacity."""
        _, out, _ = run_in_process("-f", str(write_dump(as_list(TWO_NODES))), "--numa")
        rows = [re.split(r"\s{3,}", line.strip()) for line in out.splitlines()[1:]]
        assert [["n1", "Ready", "5/16", "1Gi/64Gi", "-", "1", "InSync", "0", "v1.36"],
                ["numa-0", "2/4", "-", "-"],
                ["numa-1", "2/4", "-", "-"],
                ["n2", "Ready", "0.5/4", "0/8Gi", "-", "0", "InSync", "0", "v1.36"]] == rows

    def test_table_other_resources_and_divergence(self, write_dump: WriteDump) -> None:
        """Resources beyond cpu and memory go to OTHER, for nodes and zones; divergence shows as Diverged."""
        hp = slice_obj("hp", pool="hp", devices=[device("hp-0", attributes={"numaNode": 0}, capacity={"size": "1Gi"},
                                                        multi=True, v136={"hugepages-2Mi": {"capacityKey": "size"}})])
        items = [node_obj("n1", allocatable={"cpu": "4", "memory": "8Gi", "hugepages-2Mi": "1Gi"}), hp,
                 claim_obj("h", results=[result("hp-0", pool="hp", consumed={"size": "64Mi"})]),
                 pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "h")])]
        _, out, _ = run_in_process("-f", str(write_dump(as_list(items))), "--numa")
        rows = [re.split(r"\s{3,}", line.strip()) for line in out.splitlines()[1:]]
        assert [["n1", "Ready", "0/4", "0/8Gi", "hugepages-2Mi=64Mi/1Gi", "1", "Diverged", "0", "v1.36"],
                ["numa-0", "-", "-", "hugepages-2Mi=64Mi/1Gi"]] == rows

    @pytest.mark.parametrize("output", ["table", "json", "yaml"])
    def test_no_nodes(self, write_dump: WriteDump, output: str) -> None:
        """A dump without Nodes (a piped `kubectl get nal -o yaml`) is refused in one line that says what it
        holds and how to dump what audit needs: exit 2, nothing on stdout."""
        ledger = {"apiVersion": "draledger.dev/v1alpha1", "kind": "NodeAllocatableLedger", "metadata": {"name": "n"}}
        path = str(write_dump(yaml.safe_dump(as_list([ledger] * 3)), ".yaml"))
        assert (2, "", f"error: {path}: the dump has no Node objects (it holds 3 NodeAllocatableLedger): dump with "
                "kubectl get nodes,pods,resourceslices,resourceclaims -A -o json\n") == run_in_process(
            "-f", path, "-o", output)

    def test_json_and_yaml_agree(self, write_dump: WriteDump) -> None:
        """-o json and -o yaml print the same List of ledgers."""
        path = str(write_dump(as_list(TWO_NODES)))
        as_json = json.loads(run_in_process("-f", path, "-o", "json")[1])
        as_yaml = yaml.safe_load(run_in_process("-f", path, "-o", "yaml")[1])
        assert timeless(as_json) == timeless(as_yaml)
        assert ("v1", "List", ["n1", "n2"]) == (as_json["apiVersion"], as_json["kind"],
                                                [i["metadata"]["name"] for i in as_json["items"]])
        n1 = as_json["items"][0]["status"]
        assert {"allocatable": "16", "podRequests": "1", "claims": "4", "requested": "5", "free": "11",
                "schedulerCharged": "4", "schedulerRequested": "5"} == n1["resources"]["cpu"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", n1["observedTime"])

    def test_merged_files(self, write_dump: WriteDump) -> None:
        """-f repeated merges the dumps; an object in a later file replaces the earlier one."""
        first = write_dump(as_list(TWO_NODES[:3]))
        second = write_dump(as_list([*TWO_NODES[3:], node_obj("n2", allocatable={"cpu": "2", "memory": "8Gi"})]))
        merged = json.loads(run_in_process("-f", str(first), "-f", str(second), "-o", "json")[1])["items"]
        single = core_ledgers([*TWO_NODES, node_obj("n2", allocatable={"cpu": "2", "memory": "8Gi"})])
        assert timeless(single) == timeless(merged)
        assert "1500m" == merged[1]["status"]["resources"]["cpu"]["free"]

    def test_standard_input(self, run_audit: RunAudit) -> None:
        """-f - reads the dump from standard input."""
        done = run_audit("-f", "-", "-o", "json", stdin=json.dumps(as_list(TWO_NODES)))
        assert (0, "") == (done.returncode, without_release(done.stderr))
        assert timeless(core_ledgers(TWO_NODES)) == timeless(json.loads(done.stdout)["items"])

    def test_standard_input_in_process(self) -> None:
        """-f - in process reads sys.stdin."""
        code, out, _ = run_in_process("-f", "-", "-o", "json", stdin=yaml.safe_dump(as_list(TWO_NODES)))
        assert (0, ["n1", "n2"]) == (code, [i["metadata"]["name"] for i in json.loads(out)["items"]])

    def test_yaml_input(self, write_dump: WriteDump) -> None:
        """A YAML dump gives the same ledgers as its JSON twin; YAML numbers are read as written."""
        document = as_list(TWO_NODES)
        document["items"][0]["status"]["allocatable"] = {"cpu": 16, "memory": "64Gi"}
        document["items"][5]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = 0.5
        path = write_dump(yaml.safe_dump(document), ".yaml")
        from_yaml = json.loads(run_in_process("-f", str(path), "-o", "json")[1])
        assert timeless(core_ledgers(TWO_NODES)) == timeless(from_yaml["items"])

    def test_numa_attribute_option(self, run_audit: RunAudit, write_dump: WriteDump) -> None:
        """--numa-attribute replaces the default attribute list (repeatable, in order of preference)."""
        items = [node_obj("n1"),
                 slice_obj("s", devices=[device("d", attributes={"numaNode": 0, "socket": 1}, v136=CPU1)])]
        path = str(write_dump(as_list(items)))
        done = run_audit("-f", path, "-o", "json", "--numa-attribute", "missing", "--numa-attribute", "socket")
        assert [1] == [z["id"] for z in json.loads(done.stdout)["items"][0]["status"]["numaZones"]]
        default = json.loads(run_in_process("-f", path, "-o", "json")[1])
        assert [0] == [z["id"] for z in default["items"][0]["status"]["numaZones"]]

    def test_typed_list(self, write_dump: WriteDump) -> None:
        """A typed list (NodeList, as the API itself returns it) is a List too."""
        typed = {"apiVersion": "v1", "kind": "NodeList", "items": [node_obj("n1"), node_obj("n2")]}
        assert 2 == len(json.loads(run_in_process("-f", str(write_dump(typed)), "-o", "json")[1])["items"])


class TestBadFiles:
    @pytest.mark.parametrize(
        ("content", "reason"),
        [
            pytest.param('{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n1"}', "not valid JSON",
                         id="truncated-json"),
            pytest.param('{"kind": "ConfigMap", "data": {}}', "expected kind: List", id="not-a-list"),
            pytest.param("[1, 2]", "expected a kind: List object, got list", id="json-array"),
            pytest.param('{"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n1"}}',
                         "expected kind: List, got a single Node 'n1'", id="single-object"),
            pytest.param('{"kind": "List"}', "the List has no items array", id="list-without-items"),
            pytest.param("   \n", "empty input", id="empty"),
            pytest.param("kind: List\nitems: [\n", "not valid JSON or YAML", id="broken-yaml"),
            pytest.param("just some text", "neither JSON nor YAML of a List: it starts with 'just some text'",
                         id="plain-text"),
        ],
    )
    def test_unusable_file_exits_2(self, write_dump: WriteDump, content: str, reason: str) -> None:
        """A file that does not parse or is not a List exits 2, naming the file and the reason."""
        path = write_dump(content)
        code, out, err = run_in_process("-f", str(path))
        assert (2, "", 1) == (code, out, len(err.splitlines()))
        assert err.startswith(f"error: {path}: ")
        assert reason in err

    @pytest.mark.parametrize(
        ("content", "reason"),
        [
            pytest.param('{"kind": "List", "items": [{"kind": "Node"', "not valid JSON", id="truncated-json"),
            pytest.param('{"apiVersion": "v1", "kind": "ConfigMap"}', "expected kind: List", id="not-a-list"),
            pytest.param('{"kind": "List", "items": [' + "[" * 1000 + "]" * 1000 + "]}",
                         "nested too deeply", id="json-nested-1000-deep"),
            pytest.param("kind: List\nitems:\n- " + "[" * 1000 + "]" * 1000 + "\n",
                         "nested more than 100 levels deep", id="yaml-nested-1000-deep"),
            pytest.param('{"kind": ["List"], "items": []}', "got kind: ['List']", id="kind-a-list"),
        ],
    )
    def test_the_command_exits_2(self, run_audit: RunAudit, write_dump: WriteDump, content: str, reason: str) -> None:
        """The real command exits 2 on an unusable file, printing nothing but one line naming the file and the
        reason (no traceback)."""
        path = write_dump(content)
        done = run_audit("-f", str(path), "-o", "json")
        assert (2, "") == (done.returncode, done.stdout)
        assert [f"error: {path}: "] == [line[: len(str(path)) + 9] for line in done.stderr.splitlines()]
        assert reason in done.stderr

    def test_missing_file(self, tmp_path: Path) -> None:
        """A file that cannot be read exits 2 naming it."""
        code, out, err = run_in_process("-f", str(tmp_path / "nope.json"))
        assert (2, "") == (code, out)
        assert f"error: {tmp_path / 'nope.json'}: cannot read" in err

    def test_one_bad_file_among_good_ones(self, write_dump: WriteDump) -> None:
        """One unusable file stops the run even when others are good: nothing half-merged is printed."""
        code, out, err = run_in_process("-f", str(write_dump(as_list(TWO_NODES))), "-f", str(write_dump("{")))
        assert (2, "") == (code, out)
        assert "not valid JSON" in err

    def test_undecodable_file(self, tmp_path: Path) -> None:
        """A file that is not UTF-8 exits 2 naming it."""
        path = tmp_path / "binary.json"
        path.write_bytes(b"\xff\xfe\x00{")
        code, _, err = run_in_process("-f", str(path))
        assert 2 == code
        assert f"{path}: cannot read" in err


def billion_laughs(levels: int) -> str:
    """A YAML List whose items expand through aliases to 10^levels values, in a few hundred bytes."""
    lines = ["kind: List", "l0: &l0 [a, a, a, a, a, a, a, a, a, a]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join([*lines, f"items: *l{levels - 1}"]) + "\n"


class TestHostileFiles:
    """Issue 13, item 8: files that crashed or hung ``audit`` (a traceback and exit 1) now exit 2 with one line."""

    @pytest.mark.parametrize(
        ("content", "reason"),
        [
            pytest.param('{"kind": "List", "items": [' + '{"a": ' * 100_000 + "1" + "}" * 100_000 + "]}",
                         "nested too deeply for the JSON parser", id="json-maps-100000-deep"),
            pytest.param("kind: List\nitems:\n- kind: Node\n  metadata:\n"
                         + "".join("  " * (level + 2) + "a:\n" for level in range(150)),
                         "nested more than 100 levels deep", id="yaml-block-150-deep"),
            pytest.param('{"kind": "List", "items": [' + "7" * 5000 + "]}",
                         "not usable JSON: Integer value out of range", id="json-integer-of-5000-digits"),
            pytest.param("kind: List\nitems: [" + "7" * 5000 + "]\n",
                         "not valid JSON or YAML: Exceeds the limit (4300 digits)", id="yaml-integer-of-5000-digits"),
            pytest.param(billion_laughs(8), "YAML aliases expand to more than 100000 values", id="billion-laughs"),
            pytest.param("kind: List\nitems: &a [*a]\n", "YAML aliases expand to more than 100000 values",
                         id="self-containing-alias"),
            pytest.param("kind: List\nitems: !!python/tuple [1]\n", "not valid JSON or YAML", id="python-tag"),
            pytest.param("kind: List\nitems: [!!timestamp not-a-time]\n", "not valid JSON or YAML",
                         id="bad-explicit-timestamp"),
            pytest.param('{"kind": {"List": 1}, "items": []}', "got kind: {'List': 1}", id="kind-a-map"),
            pytest.param("kind: List\nitems:\n- \x0e\n", "unacceptable character", id="control-character"),
        ],
    )
    def test_exits_2_with_one_line(self, write_dump: WriteDump, content: str, reason: str) -> None:
        """The file is refused: exit 2, nothing printed, one line naming the file and the reason."""
        path = write_dump(content, ".yaml")
        code, out, err = run_in_process("-f", str(path))
        assert (2, "", 1) == (code, out, len(err.splitlines()))
        assert err.startswith(f"error: {path}: ")
        assert reason in err

    def test_yaml_reads_as_kubectl_reads_it(self, write_dump: WriteDump) -> None:
        """YAML map keys become strings and unquoted timestamps stay text, as kubectl reads them: no problem."""
        pod = pod_obj("p", containers=[container("a", {"cpu": "1"})], phase="Pending", node=None)
        pod["spec"]["schedulingGates"] = [{"name": "example.com/gate"}]
        text = yaml.safe_dump(as_list([node_obj("n1"), pod]))
        text = text.replace("  name: p\n", "  name: p\n    creationTimestamp: 2026-12-02T10:00:00Z\n")
        text = text.replace("      cpu: '16'\n", "      cpu: '16'\n      1: 2\n")
        document = dumps.parse_text(text, "dump.yaml")
        assert "2026-12-02T10:00:00Z" == document["items"][1]["metadata"]["creationTimestamp"]
        assert {"cpu": "16", "memory": "64Gi", "1": 2} == document["items"][0]["status"]["allocatable"]
        code, out, err = run_in_process("-f", str(write_dump(text, ".yaml")), "-o", "json")
        assert (0, []) == (code, [line for line in without_release(err).splitlines()
                                  if "has no ResourceSlice" not in line])
        assert "16" == json.loads(out)["items"][0]["status"]["resources"]["cpu"]["allocatable"]

    def test_yaml_only_values_become_json_values(self) -> None:
        """Binary, sets, ordered maps and tagged timestamps read as the JSON value closest to what was written."""
        text = ("kind: List\nitems: []\nb: !!binary aGk=\ns: !!set {x}\no: !!omap [{k: v}]\n"
                "t: !!timestamp 2026-12-02T10:00:00Z\nd: !!timestamp 2026-12-02\nk: {2: a, true: b, null: c, 1.5: d}\n")
        document = dumps.parse_text(text, "t")
        assert {"b": "aGk=", "s": {"x": None}, "o": [["k", "v"]], "t": "2026-12-02T10:00:00Z", "d": "2026-12-02",
                "k": {"2": "a", "true": "b", "null": "c", "1.5": "d"}} == {k: document[k] for k in "bsotdk"}


# ------------------------------------------------------------------ malformed objects: named, and computed around

MALFORMED = [
    node_obj("n1", allocatable={"cpu": "8", "memory": "16Gi", "hugepages-2Mi": "1Gi"}),
    node_obj("n2", allocatable={"cpu": "4", "memory": "8Gi"}),
    slice_obj("n1-dra", devices=[
        device("gpu-0", v136={"cpu": {"allocationMultiplier": "-1"}, "memory": {"allocationMultiplier": "4Gi"}}),
        device("hp-0", attributes={"numaNode": 0}, capacity={"size": "1Gi"}, multi=True,
               v136={"hugepages-2Mi": {"capacityKey": "bytes"}}),
    ]),
    claim_obj("g", results=[result("gpu-0")]),
    claim_obj("h", results=[result("hp-0", consumed={"bytes": "4Mi"})]),
    "not an object",
    pod_obj("p-bad", containers=[container("a", {"cpu": "12x", "memory": "1Gi"}, claims=["g", "h"]),
                                 container("b", {"cpu": "1"})],
            resource_claims=[direct("g", "g"), direct("h", "h")]),
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nospec", "namespace": "t"},
     "status": {"phase": "Pending"}},
    pod_obj("p-ok", node="n2", containers=[container("a", {"cpu": "500m"})]),
    {"kind": "Widget", "metadata": {"name": "w"}},
    {"kind": "DeviceClass", "metadata": {"name": "example"}},
]


@pytest.fixture(scope="module")
def malformed_run(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    path = tmp_path_factory.mktemp("malformed") / "dump.json"
    path.write_text(json.dumps(as_list(MALFORMED)), encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "draledger", "audit", "-f", str(path), "-o", "json"],
                          capture_output=True, text=True, timeout=60, check=False)


class TestMalformedObjects:
    def test_exit_zero_and_every_node_computed(self, malformed_run: subprocess.CompletedProcess[str]) -> None:
        """Malformed objects do not stop the run: exit 0, and every node has its ledger with exact figures."""
        assert 0 == malformed_run.returncode
        n1, n2 = json.loads(malformed_run.stdout)["items"]
        assert {
            "cpu": {"allocatable": "8", "podRequests": "1", "claims": "0", "requested": "1", "free": "7",
                    "schedulerCharged": "0", "schedulerRequested": "1"},
            "memory": {"allocatable": "16Gi", "podRequests": "1Gi", "claims": "4Gi", "requested": "5Gi",
                       "free": "11Gi", "schedulerCharged": "0", "schedulerRequested": "1Gi"},
            "hugepages-2Mi": {"allocatable": "1Gi", "podRequests": "0", "claims": "0", "requested": "0",
                              "free": "1Gi", "schedulerCharged": "0", "schedulerRequested": "0"},
        } == n1["status"]["resources"]  # the hugepages mapping names no capacity: the API refuses it
        assert "Ready" == n1["status"]["phase"]
        assert ({"allocatable": "4", "podRequests": "500m", "claims": "0", "requested": "500m", "free": "3500m",
                 "schedulerCharged": "0", "schedulerRequested": "500m"}, "Ready", []) == (
            n2["status"]["resources"]["cpu"], n2["status"]["phase"], n2["status"]["problems"])

    @pytest.mark.parametrize(
        ("kind", "name", "field", "value", "in_ledger"),
        [
            pytest.param("Pod", "t/p-bad", "spec.containers[0].resources.requests.cpu", "'12x'", True,
                         id="bad-quantity"),
            pytest.param("ResourceSlice", "n1-dra",
                         "spec.devices[0].nodeAllocatableResourceMappings.cpu.allocationMultiplier", "'-1'", True,
                         id="negative-multiplier"),
            pytest.param("ResourceSlice", "n1-dra",
                         "spec.devices[1].nodeAllocatableResourceMappings.hugepages-2Mi.capacityKey", "'bytes'", True,
                         id="capacity-key-absent"),
            pytest.param("Pod", "t/nospec", "spec", "None", False, id="pod-without-spec"),
        ],
    )
    def test_object_is_named(self, malformed_run: subprocess.CompletedProcess[str], kind: str, name: str,
                             field: str, value: str, in_ledger: bool) -> None:
        """A malformed object is named (kind, namespace/name, field, value) on stderr and in its node's ledger."""
        assert f"{kind} {name} field {field} = {value}: " in malformed_run.stderr
        problems = json.loads(malformed_run.stdout)["items"][0]["status"]["problems"]
        namespace, _, short = name.rpartition("/")
        named = [p for p in problems if (p.get("kind"), p.get("namespace", ""), p.get("name"), p.get("field"),
                                         p.get("value")) == (kind, namespace, short, field, value)]
        assert in_ledger == bool(named)

    def test_items_that_are_not_objects(self, malformed_run: subprocess.CompletedProcess[str]) -> None:
        """A List item that is not an object, or of an unknown kind, is named by its position."""
        assert "warning: MalformedItem: input = 'not an object': " in malformed_run.stderr
        assert "dump.json: items[5] is not an object (str)" in malformed_run.stderr
        assert "items[9] has kind 'Widget'; ignored" in malformed_run.stderr
        assert "DeviceClass" not in malformed_run.stderr

    def test_problems_on_stderr_are_warnings(self, malformed_run: subprocess.CompletedProcess[str]) -> None:
        """Every stderr line is a warning (nothing is an error), one per problem."""
        lines = without_release(malformed_run.stderr).splitlines()
        assert 6 == len(lines)
        assert all(line.startswith("warning: ") for line in lines)

    def test_pod_on_an_unknown_node(self, write_dump: WriteDump) -> None:
        """A pod bound to a node that is not in the dump is named, and counted in no ledger."""
        items = [node_obj("n1"), pod_obj("p", node="n7", containers=[container("a", {"cpu": "1"})])]
        code, out, err = run_in_process("-f", str(write_dump(as_list(items))), "-o", "json")
        assert 0 == code
        assert "UnknownNode: Pod t/p field spec.nodeName = n7" in err
        assert "0" == json.loads(out)["items"][0]["status"]["resources"]["cpu"]["requested"]

    def test_generation_regression_in_a_dump(self, write_dump: WriteDump) -> None:
        """A slice listed twice with an older generation second keeps the newer one and names the older."""
        newer = slice_obj("s", generation=2, devices=[device("d", v136={"cpu": {"allocationMultiplier": "2"}})])
        older = slice_obj("s", generation=1, devices=[device("d", v136={"cpu": {"allocationMultiplier": "9"}})])
        items = [node_obj("n1"), newer, older, claim_obj("c", results=[result("d")]),
                 pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")])]
        code, out, err = run_in_process("-f", str(write_dump(as_list(items))), "-o", "json")
        assert 0 == code
        assert "GenerationRegression: ResourceSlice s: " in err
        assert "2" == json.loads(out)["items"][0]["status"]["resources"]["cpu"]["claims"]


def ill_typed_dump() -> list[Any]:
    """Two nodes; on n1 a claim whose node selector ``values`` is an int (a TypeError in the claim reader, once),
    a pod requesting a quantity of 5,000 digits, a slice whose apiVersion is a list; items whose kind is a
    list or a map (``unhashable type``, once)."""
    claim = claim_obj("c", results=[result("core-0")])
    claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] = 5
    cores = slice_obj("n1-cores", devices=[device("core-0", v136={"cpu": {"allocationMultiplier": "2"}})])
    cores["apiVersion"] = ["resource.k8s.io/v1"]
    return [
        node_obj("n1", allocatable={"cpu": "16", "memory": "64Gi"}),
        node_obj("n2", allocatable={"cpu": "4", "memory": "8Gi"}),
        cores,
        claim,
        {"apiVersion": "v1", "kind": ["Pod"], "metadata": {"name": "list-kind"}},
        pod_obj("p1", containers=[container("a", {"cpu": "1"}, claims=["x"])], resource_claims=[direct("x", "c")]),
        pod_obj("huge", containers=[container("a", {"cpu": "9" * 5000, "memory": "1Gi"})]),
        {"apiVersion": "v1", "kind": {"Pod": "v1"}, "metadata": {"name": "map-kind"}},
        pod_obj("p2", node="n2", containers=[container("a", {"cpu": "500m"})]),
    ]


@pytest.fixture(scope="module")
def ill_typed_run(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    path = tmp_path_factory.mktemp("ill-typed") / "dump.json"
    path.write_text(json.dumps(as_list(ill_typed_dump())), encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "draledger", "audit", "-f", str(path), "-o", "json"],
                          capture_output=True, text=True, timeout=60, check=False)


class TestIllTypedObjects:
    """Issue 13, item 8: ill-typed objects crashed ``audit`` (exit 1, a traceback); what the docs promise is a
    named problem, in the node's ledger, with every node still computed."""

    def test_exit_zero_and_every_node_computed(self, ill_typed_run: subprocess.CompletedProcess[str]) -> None:
        """Exit 0, no traceback, and both ledgers with exact figures (the huge request is not counted)."""
        assert (0, "") == (ill_typed_run.returncode, "".join(
            line for line in without_release(ill_typed_run.stderr).splitlines() if not line.startswith("warning: ")))
        n1, n2 = json.loads(ill_typed_run.stdout)["items"]
        assert ({"cpu": "1", "memory": "1Gi"}, "2") == (
            {r: n1["status"]["resources"][r]["podRequests"] for r in ("cpu", "memory")},
            n1["status"]["resources"]["cpu"]["claims"])
        assert "500m" == n2["status"]["resources"]["cpu"]["requested"]

    @pytest.mark.parametrize(
        ("kind", "name", "field", "value"),
        [
            pytest.param("ResourceClaim", "t/c", "status.allocation.nodeSelector.nodeSelectorTerms[0]"
                         ".matchFields[0].values", "5", id="values-not-a-list"),
            pytest.param("Pod", "t/huge", "spec.containers[0].resources.requests.cpu", "'" + "9" * 76 + "...",
                         id="quantity-out-of-range"),
            pytest.param("ResourceSlice", "n1-cores", "apiVersion", "['resource.k8s.io/v1']",
                         id="api-version-not-a-string"),
        ],
    )
    def test_object_is_named(self, ill_typed_run: subprocess.CompletedProcess[str], kind: str, name: str,
                             field: str, value: str) -> None:
        """The ill-typed object is named on stderr and in n1's ledger (kind, namespace/name, field, value)."""
        assert f"warning: MalformedField: {kind} {name} field {field} = {value}: " in ill_typed_run.stderr
        problems = json.loads(ill_typed_run.stdout)["items"][0]["status"]["problems"]
        namespace, _, short = name.rpartition("/")
        assert [(kind, namespace, short, field, value)] == [
            (p["kind"], p.get("namespace", ""), p["name"], p["field"], p["value"])
            for p in problems if p.get("field") == field]

    @pytest.mark.parametrize(("index", "value"), [(4, "['Pod']"), (7, "{'Pod': 'v1'}")])
    def test_kind_not_a_string(self, ill_typed_run: subprocess.CompletedProcess[str], index: int, value: str) -> None:
        """An item whose kind is a list or a map is named by position on stderr, and skipped."""
        assert (f"warning: MalformedItem: input field kind = {value}: "
                f"{ill_typed_run.args[5]}: items[{index}] has a kind that is not a string") in ill_typed_run.stderr

    def test_table_with_a_name_that_is_no_valid_unicode(self, run_audit: RunAudit, write_dump: WriteDump) -> None:
        """A node named with a lone surrogate (valid JSON) prints in the table, escaped (once UnicodeEncodeError)."""
        path = write_dump('{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n\\ud800"}}]}')
        done = run_audit("-f", str(path))
        assert (0, "n\\ud800") == (done.returncode, done.stdout.splitlines()[1].split()[0])

    def test_every_output_with_names_that_are_no_valid_unicode(
        self, run_audit: RunAudit, write_dump: WriteDump, tmp_path: Path
    ) -> None:
        """A lone surrogate in a node's name and in a resource name (both valid JSON) reaches every output: JSON
        gives the same name back, YAML and the SVG picture hold it escaped, the table keeps its columns."""
        path = write_dump(
            '{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n\\ud800"}, "status": '
            '{"allocatable": {"cpu": "4", "x\\udc00": null}, "capacity": {"cpu": "4"}}}]}'
        )
        picture = tmp_path / "ledgers.svg"
        as_json = run_audit("-f", str(path), "-o", "json", "--svg", str(picture))
        ledger = json.loads(as_json.stdout)["items"][0]
        assert (0, "n\ud800", ["status.allocatable.x\udc00"]) == (
            as_json.returncode, ledger["metadata"]["name"], [p["field"] for p in ledger["status"]["problems"]])
        assert "n\\ud800" in picture.read_text(encoding="utf-8")
        as_yaml = run_audit("-f", str(path), "-o", "yaml")
        assert (0, "n\ud800") == (as_yaml.returncode, yaml.safe_load(as_yaml.stdout)["items"][0]["metadata"]["name"])
        header, row = run_audit("-f", str(path)).stdout.splitlines()[:2]
        name, phase = row.split()[:2]
        assert (row.index(f" {phase} ") + 1, "n\\ud800") == (header.index("PHASE"), name)


class TestLoading:
    def test_malformed_items_in_process(self) -> None:
        """Non-object items and unknown kinds are named by position; everything else is loaded."""
        loaded = load(MALFORMED, "dump.json")
        assert [("MalformedItem", "dump.json: items[5] is not an object (str)", "'not an object'"),
                ("UnknownKind", "dump.json: items[9] has kind 'Widget'; ignored", "")] == [
            (p.reason, p.message, p.value) for p in loaded.problems]
        assert (["n1", "n2"], 3) == (sorted(loaded.state.nodes), len(loaded.state.pods))
        assert 6 == len(all_problems(loaded))

    def test_svg_report(self, write_dump: WriteDump, tmp_path: Path) -> None:
        """--svg also writes the ledgers as an SVG picture."""
        picture = tmp_path / "ledgers.svg"
        out, err = io.StringIO(), io.StringIO()
        code = audit.run([str(write_dump(as_list(TWO_NODES)))], "json", stdout=out, stderr=err, svg=str(picture))
        assert (0, "") == (code, without_release(err.getvalue()))
        assert "<svg" in picture.read_text(encoding="utf-8")
        assert 2 == len(json.loads(out.getvalue())["items"])


class TestCommandLine:
    def test_main_exit_status(self, write_dump: WriteDump, capfd: pytest.CaptureFixture[str]) -> None:
        """The console entry point exits with audit's status."""
        from draledger.commands import cli

        with pytest.raises(SystemExit) as exit_info:
            cli.main(["audit", "-f", str(write_dump(as_list(TWO_NODES))), "-o", "json"])
        assert 0 == exit_info.value.code
        assert ["n1", "n2"] == [i["metadata"]["name"] for i in json.loads(capfd.readouterr().out)["items"]]
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["audit", "-f", str(write_dump("{"))])
        assert 2 == exit_info.value.code

    def test_needs_a_file(self, run_audit: RunAudit) -> None:
        """audit without -f is a usage error."""
        done = run_audit()
        assert 2 == done.returncode
        assert "-f" in done.stderr


class TestImports:
    def test_audit_runs_without_the_operators_libraries(self) -> None:
        """``draledger audit`` needs no install of the operator's stack: neither Kopf, the kubernetes client,
        aiohttp nor pydantic is imported (pydantic alone was 0.17 s of a 1,000-node audit's 6.3 s)."""
        example = Path(__file__).parents[1] / "data" / "example-cluster.json"
        probe = (
            "import sys, runpy, contextlib, io\n"
            f"sys.argv = ['draledger', 'audit', '-f', {str(example)!r}, '-o', 'json']\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "    runpy.run_module('draledger', run_name='__main__')\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'kopf', 'kubernetes', 'aiohttp', 'pydantic'}))\n"
        )
        result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
        assert "[]" == result.stdout.strip(), result.stderr
