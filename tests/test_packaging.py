"""pyproject.toml declares what the code imports: every package a module imports directly is a dependency of
the part it belongs to (the operator's runtime, the demo extra, the test and dev extras), the bounds hold
what is installed, and the build backend is one that reads the SPDX license string."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# Imported by a tool that is no dependency on purpose: atheris (docs: benchmarks/results/fuzzing.md).
OPTIONAL = {"atheris"}


def name_of(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0]


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(*groups: str) -> set[str]:
    """The distributions the runtime and the named extras declare (normalized names)."""
    extras = PROJECT["project"]["optional-dependencies"]
    requirements = list(PROJECT["project"]["dependencies"]) + [r for g in groups for r in extras[g]]
    return {normal(name_of(r)) for r in requirements}


def local_modules(folder: Path) -> set[str]:
    """Modules a folder's files import as top-level names of their own (tests' ``strategies``, ``oracle``)."""
    return {p.stem for p in folder.rglob("*.py")} | {p.name for p in folder.rglob("*") if p.is_dir()}


def imported(files: list[Path], own: set[str]) -> dict[str, set[str]]:
    """Every third-party top-level module the files import (at any depth of the code), with the files."""
    found: dict[str, set[str]] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                     else [])
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "draledger" and top not in own:
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:4])


def satisfies(version: str, requirement: str) -> bool:
    """Whether ``version`` meets ``requirement``'s numeric bounds (``>=33,<38``, ``==1.45.2``): the forms this
    project writes; no pre-releases, no wildcards."""
    have = release(version)
    checks = {">=": lambda v: have >= v, "<=": lambda v: have <= v, ">": lambda v: have > v,
              "<": lambda v: have < v, "==": lambda v: have[: len(v)] == v, "!=": lambda v: have[: len(v)] != v}
    bounds = re.findall(r"(>=|<=|==|!=|<|>)\s*([\d.]+)", requirement.split(";")[0])
    assert bounds or name_of(requirement) == requirement.strip(), requirement
    return all(checks[op](release(number)) for op, number in bounds)


def distributions(module: str) -> set[str]:
    return {normal(d) for d in importlib.metadata.packages_distributions().get(module, ())}


PACKAGE = ROOT / "operator" / "draledger"
PARTS = [
    pytest.param(sorted(p for p in PACKAGE.rglob("*.py") if "demo" not in p.relative_to(PACKAGE).parts), (),
                 id="the-operator-and-its-commands"),
    pytest.param(sorted((PACKAGE / "demo").rglob("*.py")), ("demo",), id="the-demo"),
    pytest.param(sorted([*(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py"),
                         *(ROOT / "e2e").rglob("*.py")]), ("demo", "test", "dev"), id="tests-and-benchmarks"),
]


@pytest.mark.parametrize(("files", "extras"), PARTS)
def test_every_import_is_declared(files: list[Path], extras: tuple[str, ...]) -> None:
    """Each third-party package imported is declared for that part (not only pulled in by another one)."""
    own = {"tests"} | local_modules(ROOT / "tests") | local_modules(ROOT / "benchmarks") | local_modules(ROOT / "e2e")
    allowed = declared(*extras)
    missing = {module: sorted(where)[:3] for module, where in imported(files, own).items()
               if module not in OPTIONAL and not distributions(module) & allowed}
    assert {} == missing


def test_every_runtime_dependency_is_imported() -> None:
    """No runtime dependency is there for nothing: each is imported by the package outside the demo."""
    files = [p for p in PACKAGE.rglob("*.py") if "demo" not in p.relative_to(PACKAGE).parts]
    used = {d for module in imported(files, set()) for d in distributions(module)}
    assert set() == declared() - used


def test_the_bounds_hold_what_is_installed() -> None:
    """Every runtime requirement is met by the installed distribution the tests run with."""
    unmet = []
    for text in PROJECT["project"]["dependencies"]:
        version = importlib.metadata.version(name_of(text))
        if not satisfies(version, text):
            unmet.append(f"{text}: {version} installed")
    assert [] == unmet


def test_private_apis_are_bounded_to_the_tested_major() -> None:
    """kubernetes (whose private kube_config loader we use) has an upper bound: the next major of the tested one."""
    requirement = next(r for r in PROJECT["project"]["dependencies"] if name_of(r) == "kubernetes")
    major = release(importlib.metadata.version("kubernetes"))[0]
    assert satisfies(f"{major}.99", requirement)
    assert not satisfies(f"{major + 1}.0", requirement)


def test_the_build_backend_reads_the_spdx_license() -> None:
    """A license string (PEP 639) needs setuptools 77.0.1: the floor says so (76.1 refuses it)."""
    assert isinstance(PROJECT["project"]["license"], str)
    (setuptools,) = [r for r in PROJECT["build-system"]["requires"] if name_of(r) == "setuptools"]
    assert not satisfies("76.1.0", setuptools)
    assert satisfies("77.0.1", setuptools)


@pytest.mark.parametrize(("version", "requirement", "met"), [
    pytest.param("37.0.2", "kubernetes>=33,<38", True, id="within"),
    pytest.param("38.0.0", "kubernetes>=33,<38", False, id="above"),
    pytest.param("1.45.2", "kopf==1.45.2", True, id="pinned"),
    pytest.param("0.8", "kmock==0.8", True, id="short-pin"),
    pytest.param("2.9.2", "pydantic>=2.10,<3", False, id="below"),
])
def test_the_bounds_reader(version: str, requirement: str, met: bool) -> None:
    """The test's reader of bounds reads the forms pyproject.toml writes."""
    assert met == satisfies(version, requirement)
