"""Fuzzing the dump parser and every reader: nothing a file or an API body holds may raise.

Valid objects (the conformance dumps' items, and what they lack) are mutated: subtrees replaced by any JSON
value (huge integers, NaN and infinities, number-like strings, lists where maps are expected and maps where
lists are, nesting thousands of levels deep), fields deleted. Each mutated object goes through every reader
(fast and full), and mutated dumps through the whole ``audit`` path: loading, every ledger, the status body
the operator writes, and every output format. Whole files (any text, broken JSON and YAML, deep nesting)
go through ``audit.run``, which must exit 0 or 2 (2 with one line naming the file), never raise.

The CI run is bounded; ``DRALEDGER_FUZZ_EXAMPLES=50000`` runs each test that many times
(benchmarks/results/fuzzing.md).
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from draledger.commands import audit, clusterctl, dumps
from draledger.core import bodies
from draledger.core.accounting.ledger import Flags
from draledger.core.loading import all_problems, load
from draledger.core.views import ClaimView, NodeView, PodView, SliceView, read_claim, read_node, read_pod, read_slice
from draledger.core.views.slices import DeviceMemo
from strategies import any_values, json_values, mutated, nested, seed_objects

CONFORMANCE = Path(__file__).parents[1] / "conformance"
SEEDS = seed_objects(json.loads(p.read_text(encoding="utf-8"))["dump"] for p in sorted(CONFORMANCE.glob("*.json")))
NOW = "2026-12-02T10:00:00Z"


LONG_RUN = os.environ.get("DRALEDGER_FUZZ_EXAMPLES")
# A long run takes longer than the per-test timeout of the suite (pyproject.toml): it has none.
pytestmark = [pytest.mark.timeout(0)] if LONG_RUN else []


def fuzz_settings(examples: int) -> settings:
    """``examples`` in CI; ``DRALEDGER_FUZZ_EXAMPLES`` for a long run. No deadline: an example that buries a
    field 3,000 levels deep takes longer than one that does not, and that is not a failure."""
    wanted = int(LONG_RUN or examples)
    return settings(max_examples=wanted, deadline=None, suppress_health_check=list(HealthCheck))


READERS: dict[str, Callable[[Any], Any]] = {
    "read_node": read_node,
    "read_pod": read_pod,
    "read_slice": read_slice,
    "read_slice_with_a_memo": lambda raw: read_slice(raw, DeviceMemo()),
    "read_claim": read_claim,
}
VIEWS = {"read_node": NodeView, "read_pod": PodView, "read_slice": SliceView, "read_claim": ClaimView}


def view_type(reader: str) -> type:
    return next(t for prefix, t in VIEWS.items() if reader.startswith(prefix))


def account(items: list[Any]) -> list[dict[str, Any]]:
    """What ``audit`` and the operator do with a dump: load it, compute and print every ledger, build the
    status body the operator writes; the ledger objects are returned."""
    loaded = load(items, "fuzz.json")
    for problem in all_problems(loaded):
        str(problem)
    for node in loaded.state.nodes:
        ledger = loaded.state.ledger(node, Flags())
        assert ledger is not None
        bodies.status_body(ledger, ledger_version=1, mapping_version=1, now=NOW)
    objects = audit.ledgers_of(loaded, Flags(), NOW)
    for output in ("json", "yaml", "table"):
        audit.emit(objects, output, True, io.StringIO())
    return objects


def mutated_seeds(values: st.SearchStrategy[Any] = any_values) -> st.SearchStrategy[Any]:
    return st.sampled_from(SEEDS).flatmap(lambda raw: mutated(raw, values=values))


@st.composite
def mutated_dumps(draw: st.DrawFn, values: st.SearchStrategy[Any] = any_values) -> list[Any]:
    """The items of one dump: a few seed objects, some of them mutated, sometimes junk items."""
    items = []
    for raw in draw(st.lists(st.sampled_from(SEEDS), min_size=1, max_size=8)):
        items.append(draw(mutated(raw, values=values)) if draw(st.booleans()) else raw)
    if draw(st.integers(0, 4)) == 0:
        items.insert(draw(st.integers(0, len(items))), draw(values))
    return items


class TestReaders:
    @fuzz_settings(1000)
    @given(mutated_seeds())
    def test_every_reader_takes_any_value_anywhere(self, raw: Any) -> None:
        """Every reader returns its view for any mutated object (problems named by object), never raises."""
        if not isinstance(raw, dict):
            raw = {"kind": "Pod", "metadata": raw}
        for name, read in READERS.items():
            view = read(raw)
            assert isinstance(view, view_type(name)), name
            assert all(p.obj is not None and p.obj.kind for p in view.problems), name
            for problem in view.problems:
                assert len(problem.value) <= 80
                str(problem)

    @fuzz_settings(500)
    @given(mutated_seeds(), mutated_seeds())
    def test_a_memo_never_changes_a_slice(self, first: Any, raw: Any) -> None:
        """Reading a mutated slice with the memo of another reading under its name gives what reading it
        afresh gives."""
        if not isinstance(raw, dict) or not isinstance(first, dict):
            return
        memo = DeviceMemo()
        first = {**first, "metadata": raw.get("metadata")}
        read_slice(first, memo)
        assert read_slice(raw) == read_slice(raw, memo)


class TestAccounting:
    @fuzz_settings(400)
    @given(mutated_dumps())
    @example([{"kind": "Node", "metadata": {"name": "n1", "uid": "u1"},  # once UnicodeEncodeError in -o json
               "status": {"allocatable": {"\ud800": None}, "capacity": {"cpu": "16"}}}])
    def test_a_mutated_dump_is_accounted(self, items: list[Any]) -> None:
        """Loading, every ledger, the status body and every output format take any mutated dump."""
        loaded = load(items, "fuzz.json")
        objects = account(items)
        assert sorted(loaded.state.nodes) == [o["metadata"]["name"] for o in objects]


# ------------------------------------------------------------------ whole files


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    """One file that the file tests rewrite for every example (a function-scoped tmp_path would be shared
    across examples anyway)."""
    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder) / "dump"


def audit_file(path: Path, content: bytes) -> tuple[int, str, str]:
    path.write_bytes(content)
    out, err = io.StringIO(), io.StringIO()
    code = audit.run([str(path)], "json", stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def check_outcome(path: Path, code: int, out: str, err: str) -> None:
    """Exit 0 with a List of ledgers, or exit 2 with one line that names the file and nothing printed."""
    assert code in (0, 2)
    if code == 2:
        assert ("", 1) == (out, len(err.splitlines()))
        assert err.startswith(f"error: {path}: ")
    else:
        assert "List" == json.loads(out)["kind"]
        said, *warnings = err.splitlines()
        assert said.startswith("release: ")  # whose rules apply, and why
        assert all(line.startswith("warning: ") for line in warnings)


def as_text(document: Any) -> str:
    """JSON text for a document (decimals as strings)."""
    return json.dumps(document, default=str)


@st.composite
def file_contents(draw: st.DrawFn) -> bytes:
    """Any bytes; text; a mutated dump as JSON or YAML; or such a dump truncated or with a byte changed."""
    how = draw(st.integers(0, 5))
    if how == 0:
        return draw(st.binary(max_size=200))
    if how == 1:
        return draw(st.text(max_size=200)).encode("utf-8", "surrogatepass")
    items = draw(mutated_dumps(values=json_values))
    document: Any = {"apiVersion": "v1", "kind": draw(st.sampled_from(["List", "List", "NodeList", "Pod", 7])),
                     "items": items}
    if draw(st.integers(0, 5)) == 0:
        document = draw(mutated(document, values=json_values))
    try:
        text = json.dumps(document, default=str)
    except ValueError:  # an integer beyond what json writes (4,300 digits)
        text = "{}"
    if how == 3:
        text = "# a YAML flow document\n" + text
    elif how == 4 and text:
        text = text[: draw(st.integers(0, len(text) - 1))]
    elif how == 5 and text:
        at = draw(st.integers(0, len(text) - 1))
        text = text[:at] + draw(st.sampled_from(list('{}[]",:\\\n-&*!?|>#%@`\x00'))) + text[at + 1 :]
    return text.encode("utf-8", "surrogatepass")


@st.composite
def deep_files(draw: st.DrawFn) -> bytes:
    """A dump with one item or field nested 1 to 50,000 levels deep, as JSON, YAML flow or YAML block text."""
    depth = draw(st.integers(1, 50_000))
    style = draw(st.sampled_from(["json-list", "json-map", "yaml-flow", "yaml-block", "yaml-alias"]))
    if style == "json-list":
        text = '{"kind": "List", "items": [' + "[" * depth + "]" * depth + "]}"
    elif style == "json-map":
        text = '{"kind": "List", "items": [{"kind": "Node", "metadata": ' + '{"a": ' * depth + "1" + "}" * depth
        text += "}]}"
    elif style == "yaml-flow":
        text = "kind: List\nitems:\n- " + "[" * depth + "]" * depth + "\n"
    elif style == "yaml-block":
        depth = min(depth, 3000)  # indentation grows quadratically
        text = "kind: List\nitems:\n- kind: Node\n  metadata:\n" + "".join(
            "  " * (level + 2) + "a:\n" for level in range(depth)
        )
    else:  # a billion laughs: each level repeats the previous one ten times
        levels = min(depth, 12)
        lines = ["kind: List", 'l0: &l0 {"kind": "Node", "metadata": {"name": "n"}}']
        lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, levels)]
        lines.append(f"items: *l{levels - 1}")
        text = "\n".join(lines) + "\n"
    return text.encode()


class TestFiles:
    @fuzz_settings(400)
    @given(content=file_contents())
    def test_any_file_exits_0_or_2(self, scratch: Path, content: bytes) -> None:
        """Any file content gives exit 0 (a List of ledgers) or exit 2 (one line naming the file)."""
        check_outcome(scratch, *audit_file(scratch, content))

    @fuzz_settings(40)
    @given(content=deep_files())
    def test_deep_nesting_exits_0_or_2(self, scratch: Path, content: bytes) -> None:
        """Nesting of any depth, and YAML aliases that multiply, give exit 0 or 2, never a crash."""
        check_outcome(scratch, *audit_file(scratch, content))

    @fuzz_settings(200)
    @given(document=json_values)
    def test_parse_text_takes_any_document(self, document: Any) -> None:
        """parse_text + items_of give the items of a List, or a DumpError, for any JSON or YAML document."""
        try:
            text = as_text(document)
        except ValueError:  # an integer beyond what json writes (4,300 digits): no file holds it
            text = "10"
        for content in (text, "# as YAML\n" + text, yaml.safe_dump(json.loads(text))):
            outcome: Any
            try:
                outcome = dumps.items_of(dumps.parse_text(content, "fuzz.json"), "fuzz.json")
            except dumps.DumpError as error:
                outcome = str(error)
            if isinstance(outcome, str):
                assert outcome.startswith("fuzz.json: ")
                assert 1 == len(outcome.splitlines())
            else:
                assert isinstance(outcome, list)


EXPORT = {
    "apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
    "draledgerExport": {"formatVersion": 1, "source": "cluster", "cluster": "c-1", "server": "https://k:6443",
                        "exportedAt": NOW, "ledgers": ["n1", "n2"]},
    "items": [{"apiVersion": "draledger.dev/v1alpha1", "kind": "NodeAllocatableLedger",
               "metadata": {"name": n, "ownerReferences": [{"kind": "Node", "name": n, "uid": f"u-{n}"}]},
               "spec": {"frozen": True}, "status": {"mappingVersion": 3}} for n in ("n1", "n2")],
}


class TestExports:
    @fuzz_settings(300)
    @given(document=mutated(EXPORT, values=json_values), nodes=st.lists(st.sampled_from(["n1", "n2", "n3"])))
    def test_read_export_refuses_or_reads(self, scratch: Path, document: Any, nodes: list[str]) -> None:
        """Any mutated export is read, or refused with exit 2 in one line naming the file; never a crash."""
        try:
            scratch.write_text(as_text(document), encoding="utf-8", errors="surrogatepass")
        except ValueError:  # an integer beyond what json writes: no file holds it
            return
        outcome: Any
        try:
            outcome = clusterctl.read_export(str(scratch), nodes or None)
        except clusterctl.CommandError as error:
            outcome = error
        if isinstance(outcome, clusterctl.CommandError):
            assert (2, 1) == (outcome.code, len(str(outcome).splitlines()))
            assert str(outcome).startswith(f"{scratch}: ")
        else:
            assert set(nodes) <= set(outcome.ledgers)


class TestDeepValues:
    @pytest.mark.parametrize("container", ["list", "dict", "mixed"])
    @pytest.mark.parametrize("field", ["kind", "apiVersion", "metadata", "spec", "status"])
    def test_a_field_buried_deep_reads_without_raising(self, container: str, field: str) -> None:
        """A field buried 5,000 levels deep (beyond Python's recursion limit) goes through every reader and
        the whole audit path; where a reader reads the field, the problem shows the value in 80 characters."""
        buried = nested(5000, "x", container)
        for raw in SEEDS[:4]:
            spoiled = {**raw, field: buried}
            account([spoiled])
            for name, read in READERS.items():
                shown = [p.value for p in read(spoiled).problems if p.field == field]
                assert all(len(value) == 80 and value.endswith("...") for value in shown), name
            if field in ("metadata", "status") and container == "list":  # a list where a map belongs
                assert [field] == [p.field for p in read_node(spoiled).problems if p.field == field]
