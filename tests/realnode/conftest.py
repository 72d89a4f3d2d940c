"""The real-node suite: every test here runs once per selected release on a real kubelet, containerd and runc.

Environment:
- DRALEDGER_REALCLUSTER_VERSIONS: the releases, as for the realcluster suite (default: all).
- DRALEDGER_REQUIRE_REALNODE=1 (set by .ci/run): anything missing (root, go, runc, busybox-static) or a failed
  build fails the run; without it every test here is skipped with the reason in one line.

Rules:
1. Builds happen before the first test (``pytest_runtestloop``), outside every test's timeout, only for the
   releases selected tests need: the release's binaries (the kubelet among them), containerd, and the test driver
   (tests/realnode/drivers.py). ``.ci/run`` builds all of them in its builds step, so CI never builds here.
2. ``realnode`` is one session fixture parametrised over the releases (site.py's ``NodeSite``); the tests of one
   release run together (a shuffle is kept within a release), so one real node runs at a time.
3. Every test here carries the ``realnode`` marker and a timeout of ``TIMEOUT`` s; a failing test's report names
   the node's directory (kubelet, containerd, driver and operator logs) and the tail of the operator's log.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

from tests.realcluster import building
from tests.realcluster.launcher import StartError
from tests.realcluster.releases import RELEASES, selected
from tests.realnode import image
from tests.realnode.drivers import ensure_driver
from tests.realnode.node import find_runc
from tests.realnode.site import NodeSite, Scratch, scratch, start_site

REQUIRE_ENV = "DRALEDGER_REQUIRE_REALNODE"
TIMEOUT = 300  # seconds per test, the site's start included (builds happen before, untimed)

_PROBLEMS: dict[str, str] = {}  # release name -> "" when it can run, else why not


def _required() -> bool:
    return os.environ.get(REQUIRE_ENV, "") == "1"


def _release_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    name = callspec.params.get("realnode") if callspec is not None else None
    return name if isinstance(name, str) else None


def _is_ours(item: pytest.Item) -> bool:
    return "realnode" in getattr(item, "fixturenames", ())


def machine_problem() -> str:
    """What this machine lacks for a real node, in one line ("" when nothing)."""
    if os.geteuid() != 0:
        return "realnode suite: needs root (runc, mounts and cgroups)"
    try:
        building.find_go()
    except building.GoMissing as missing:
        return f"realnode suite: {missing}"
    if find_runc() is None:
        return "realnode suite: runc is not installed (apt-get install runc)"
    try:
        image.find_busybox()
    except image.ImageError as error:
        return f"realnode suite: {error}"
    return ""


def _prepare(name: str) -> str:
    """Module rule 1 for one release: "" when ready, else the reason."""
    problem = machine_problem()
    if problem:
        return problem
    release = RELEASES[name]
    try:
        for step in (lambda: building.ensure(release), lambda: building.tool("containerd"),
                     lambda: ensure_driver(release)):
            step()
    except building.BuildError as error:
        building.say(str(error))
        return f"realnode {name}: {error}"
    return ""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "realnode" in metafunc.fixturenames:
        names = [release.name for release in selected()]
        metafunc.parametrize("realnode", names, indirect=True, scope="session", ids=names)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    slots = [index for index, item in enumerate(items) if _is_ours(item)]
    order = list(RELEASES)
    grouped = sorted((items[index] for index in slots), key=lambda item: order.index(_release_of(item) or order[0]))
    for index, item in zip(slots, grouped, strict=True):
        items[index] = item
        item.add_marker(pytest.mark.realnode)
        item.add_marker(pytest.mark.timeout(TIMEOUT))


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    if session.config.option.collectonly:
        return
    for name in RELEASES:
        if any(_is_ours(item) and _release_of(item) == name for item in session.items):
            _PROBLEMS[name] = _prepare(name)


def _unusable(name: str) -> None:
    problem = _PROBLEMS.get(name, "")
    if problem:
        first = problem.splitlines()[0]
        if _required():
            pytest.fail(f"{first} ({REQUIRE_ENV}=1)\n{problem}", pytrace=False)
        pytest.skip(f"{first} (set {REQUIRE_ENV}=1 to fail instead)")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    name = _release_of(item)
    if name is not None and _is_ours(item):
        _unusable(name)


@pytest.fixture(scope="session")
def realnode(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> Generator[NodeSite, None, None]:
    """The release's control plane, real node, drivers and operator (site.py)."""
    name = request.param
    if name not in _PROBLEMS:  # a run that skipped pytest_runtestloop
        _PROBLEMS[name] = _prepare(name)
    _unusable(name)
    try:
        site = start_site(RELEASES[name], tmp_path_factory.mktemp(f"realnode-{name}"))
    except (StartError, AssertionError) as error:
        pytest.fail(f"realnode {name}: the node did not start: {error}", pytrace=False)
    try:
        yield site
    finally:
        site.stop()


@pytest.fixture
def ns(realnode: NodeSite, request: pytest.FixtureRequest) -> Generator[Scratch, None, None]:
    """The test's own gated namespace on the node; its pods are gone before the next test (site.py rule 2)."""
    prefix = request.node.name.split("[")[0].removeprefix("test_")[:20].replace("_", "-").strip("-")
    with scratch(realnode, prefix) as made:
        yield made


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport,
                                                                                          pytest.TestReport]:
    report = yield
    site = getattr(item, "funcargs", {}).get("realnode")
    if report.failed and isinstance(site, NodeSite):
        report.sections.append(("realnode", f"node directory ({site.release.name}): {site.workdir}"))
        report.sections.append(("draledger operator log", site.operator.tail(80)))
    return report
