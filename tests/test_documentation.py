"""The docs stay in step with the code."""

from __future__ import annotations

import argparse
import pathlib
import re

import pytest

from draledger.commands.cli import build_parser

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_every_metric_is_documented() -> None:
    """docs/operations.md explains every metric the operator exports."""
    from draledger.operator.metrics import Metrics

    doc = (ROOT / "docs/operations.md").read_text()
    metrics = Metrics()
    metrics.watch_mapping_ages(list)
    names = {family.name for family in metrics.registry.collect()}
    assert names
    for name in names:
        assert name in doc, name


def test_every_relative_link_resolves() -> None:
    """Every relative link in README.md, docs/ and benchmarks/ (its README and results) names a file that exists."""
    pages = [ROOT / "README.md", ROOT / "benchmarks/README.md", *sorted((ROOT / "benchmarks/results").glob("*.md")),
             *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if "://" in target or target.startswith(("#", "mailto:")):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert [] == broken


PAGES = ("README.md", "manifests/README.md", "charts/dra-ledger/README.md", "benchmarks/README.md", "docs/*.md")
# A path the docs name from the repository root: a top-level directory, then at least one more part.
REPO_PATH = re.compile(r"(?<![\w./-])((?:docs|tests|operator|manifests|crds|benchmarks|e2e)/[\w./-]*\w)")
# How the project was built is not the user's business: tracker numbers, the team's working notes, and the history
# of measurements (the day of a run, figures "preliminary" or from "the last recorded run"), which is
# benchmarks/results/'s.
MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
HISTORY = re.compile(rf"\bissues? #?\d+|\bthe brief\b|\bthis session\b|\bwe decided\b|\b(?:{MONTHS}) \d{{1,2}}\b"
                     r"|\bpreliminary\b|\blast recorded run\b", re.IGNORECASE)
# The rules live in the docs themselves (docs/accounting.md), not in a document the repository does not hold.
CONTRACT = re.compile(r"ledger[- ]contract|\bthe contract\b", re.IGNORECASE)
# `kubectl apply` of manifests: `-k DIR` or `-f -` from kustomize, with the flags before it.
APPLY = re.compile(r"kubectl\s+apply((?:\s+--?[\w=-]+)*?)\s+(?:-k|-f\s+-(?=\s|$))")


def pages() -> list[pathlib.Path]:
    return sorted({path for pattern in PAGES for path in ROOT.glob(pattern)})


# Where code, charts and manifests live, and the text files there that can carry a citation.
SOURCES = ("operator", "tests", "benchmarks", "e2e", "charts", "manifests", "crds", "krew")
TEXT = {".py", ".md", ".yaml", ".yml", ".json", ".tpl", ".txt", ".toml", ".ini", ".cfg", ".sh"}


def sources() -> list[pathlib.Path]:
    """Every text file of the code, charts and manifests (and the project's own files at the top)."""
    top = [ROOT / name for name in ("pyproject.toml", "tox.ini", "Dockerfile", ".importlinter")
           if (ROOT / name).exists()]
    found = [path for folder in SOURCES for path in (ROOT / folder).rglob("*")
             if path.is_file() and path.suffix in TEXT and "__pycache__" not in path.parts]
    return sorted({*top, *found})


def where(page: pathlib.Path, text: str, offset: int) -> str:
    return f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, offset) + 1}"


class TestDocumentationSpeaksToUsers:
    def test_every_repository_path_exists(self) -> None:
        """Every path the docs name from the repository root (`docs/...`, `tests/...`, ...) exists."""
        missing = [f"{where(page, text, m.start())}: {m[1]}" for page in pages() for text in [page.read_text()]
                   for m in REPO_PATH.finditer(text) if not (ROOT / m[1]).exists()]
        assert [] == missing

    def test_no_project_history(self) -> None:
        """No page talks about issue numbers, briefs or sessions of how the project was built, nor dates its
        measurements or calls them preliminary: the runs are benchmarks/results/'s."""
        found = [f"{where(page, text, m.start())}: {m[0]}" for page in pages() for text in [page.read_text()]
                 for m in HISTORY.finditer(text)]
        assert [] == found

    def test_no_citation_of_an_outside_contract(self) -> None:
        """No page, and no docstring, comment or test of the code, charts or manifests, sends the reader to a
        document of rules the repository does not hold: the rules are stated in the docs, and cited there."""
        found = [f"{where(page, text, m.start())}: {m[0]}" for page in [*pages(), *sources()]
                 for text in [page.read_text(encoding="utf-8")] for m in CONTRACT.finditer(text)]
        assert [] == found

    def test_manifests_are_applied_server_side(self) -> None:
        """Every `kubectl apply` of the manifests in the docs is a server-side apply."""
        client_side = [f"{where(page, text, m.start())}: {m[0]}" for page in pages() for text in [page.read_text()]
                       for m in APPLY.finditer(text) if "--server-side" not in m[1]]
        assert [] == client_side

    @pytest.mark.parametrize(("text", "found"), [
        pytest.param("see `docs/nowhere.md`", ["docs/nowhere.md"], id="path"),
        pytest.param("`tests/data/example-cluster.json`.", ["tests/data/example-cluster.json"], id="trailing-dot"),
        pytest.param("operator/draledger/core/", ["operator/draledger/core"], id="directory"),
        pytest.param("../../docs/x.md or https://example.com/docs/y.md", [], id="relative-or-url"),
    ])
    def test_path_pattern(self, text: str, found: list[str]) -> None:
        """The path check sees root-relative paths, not parts of relative links or URLs."""
        assert found == REPO_PATH.findall(text)

    @pytest.mark.parametrize(("text", "client_side"), [
        pytest.param("kubectl apply -k manifests/overlays/minimal", True, id="apply-k"),
        pytest.param("kubectl kustomize DIR | kubectl apply -f -", True, id="piped"),
        pytest.param("kubectl apply --server-side -k manifests/overlays/minimal", False, id="server-side"),
        pytest.param("kubectl apply --server-side\n-f - ", False, id="wrapped"),
        pytest.param("kubectl apply -f crd.yaml", None, id="a-file-is-not-the-manifests"),
    ])
    def test_apply_pattern(self, text: str, client_side: bool | None) -> None:
        """The apply check catches a client-side apply of the manifests and passes a server-side one."""
        match = APPLY.search(text)
        assert client_side == (None if match is None else "--server-side" not in match[1])


def test_every_command_and_flag_is_in_the_cli_reference() -> None:
    """docs/cli.md names every command, every flag of each, and the exit codes every --help lists."""
    from draledger.commands.errors import EXIT_CODES

    doc = (ROOT / "docs/cli.md").read_text()
    missing = []
    stack = [("draledger", build_parser())]
    while stack:
        name, parser = stack.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    full = f"{name} {sub_name}".removeprefix("draledger ")
                    if f"`draledger {full}" not in doc and f"|{sub_name}`" not in doc and f"{sub_name}|" not in doc:
                        missing.append(f"{name} {sub_name}")
                    stack.append((f"{name} {sub_name}", sub))
            elif action.help != argparse.SUPPRESS:
                missing += [f"{name} {flag}" for flag in action.option_strings
                            if flag not in ("-h", "--help", "--version") and f"`{flag}" not in doc]
    assert [] == missing
    for line in EXIT_CODES.splitlines()[1:]:
        code = line.split()[0]
        if code.isdigit():
            assert f"| {code} |" in doc, code


def test_the_configuration_table_is_generated_from_the_declarations() -> None:
    """docs/configuration.md's table is what operator/config.py declares (regenerated by this test on demand)."""
    from draledger.operator.config import OPTIONS
    from draledger.operator.options import markdown_table
    from tests.generated_docs import check

    check(ROOT / "docs/configuration.md", "options", markdown_table(OPTIONS))
