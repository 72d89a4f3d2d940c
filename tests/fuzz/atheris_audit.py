"""Coverage-guided fuzzing of ``draledger audit`` with atheris (libFuzzer): not run in CI.

Each input is the bytes of a dump file. It goes the whole way ``audit`` takes: decoding, JSON or YAML
parsing, the List, every reader, every ledger, the status body and the JSON output. A ``DumpError`` (exit 2)
is a correct answer; any other exception is a crash, which libFuzzer reports with the input that caused it.
The corpus starts from the conformance dumps (JSON and YAML), so mutations begin from valid objects.

    pip install atheris          # not a dependency of dra-ledger: a wheel for Linux x86-64, CPython 3.11
    python tests/fuzz/atheris_audit.py -atheris_runs=200000 -max_len=20000 /tmp/draledger-corpus

See benchmarks/results/fuzzing.md.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import atheris  # type: ignore[import-not-found]
import yaml

with atheris.instrument_imports(include=["draledger"]):
    from draledger.commands import audit, dumps
    from draledger.core import bodies
    from draledger.core.accounting.ledger import Flags
    from draledger.core.loading import all_problems, load

CONFORMANCE = Path(__file__).resolve().parent.parent / "conformance"
NOW = "2026-12-02T10:00:00Z"


def seed(corpus: Path) -> None:
    """Write every conformance dump into an empty corpus folder, as JSON and as YAML."""
    if corpus.exists() and any(corpus.iterdir()):
        return
    corpus.mkdir(parents=True, exist_ok=True)
    for case in sorted(CONFORMANCE.glob("*.json")):
        dump = json.loads(case.read_text(encoding="utf-8"))["dump"]
        (corpus / f"{case.stem}.json").write_text(json.dumps(dump), encoding="utf-8")
        (corpus / f"{case.stem}.yaml").write_text(yaml.safe_dump(dump), encoding="utf-8")


def test_one_input(data: bytes) -> None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return  # read_source refuses it (exit 2) before parsing
    try:
        items = dumps.items_of(dumps.parse_text(text, "fuzz"), "fuzz")
    except dumps.DumpError:
        return
    loaded = load(items, "fuzz")
    for problem in all_problems(loaded):
        str(problem)
    for node in loaded.state.nodes:
        ledger = loaded.state.ledger(node, Flags())
        assert ledger is not None
        bodies.status_body(ledger, ledger_version=1, mapping_version=1, now=NOW)
    audit.emit(audit.ledgers_of(loaded, Flags(), NOW), "json", False, io.StringIO())


def main() -> None:
    folders = [arg for arg in sys.argv[1:] if not arg.startswith("-")]
    for folder in folders[:1]:
        seed(Path(folder))
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
