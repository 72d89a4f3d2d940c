"""The real-cluster suite: every test here runs once per selected release against a real control plane.

Environment:
- DRALEDGER_REALCLUSTER_VERSIONS: comma-separated minors to run (``v1.36,v1.37``, the default, or one of them).
- DRALEDGER_REQUIRE_REALCLUSTER=1 (set by .ci/run): a missing ``go`` or a failed build fails the run; without
  it both skip every test here with the reason in one line.
- DRALEDGER_KUBE_CACHE: where binaries are cached (default ``~/.cache/dra-ledger/kube``).

Rules:
1. Builds happen before the first test (``pytest_runtestloop``), outside every test's timeout, one release
   after the other, and only for releases that selected tests need, then the pinned tools they need
   (tests/manifests/pinned.py: helm); ``--collect-only`` builds nothing.
2. ``control_plane`` is one session fixture parametrised over the releases; the tests of one release run
   together (the shuffle of pytest-randomly is kept within a release), so one control plane runs at a time:
   pytest stops the first before it starts the second.
3. A failing test's report carries the path of the control plane's logs, and the tail of the log of every
   operator process the test started (``operators``, see operating.py).
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path

import pytest

from tests.manifests import pinned
from tests.manifests.pinned import helm  # noqa: F401 (a fixture)
from tests.realcluster import building
from tests.realcluster.cluster import unique
from tests.realcluster.launcher import ControlPlane, StartError
from tests.realcluster.operating import Installation, Operators, Site, install
from tests.realcluster.releases import RELEASES, selected

REQUIRE_ENV = "DRALEDGER_REQUIRE_REALCLUSTER"
TIMEOUT = 600  # seconds per test, the control plane's start included (builds happen before, untimed)

_BUILT: dict[str, str] = {}  # release name -> "" when its binaries are ready, else why not


def _required() -> bool:
    return os.environ.get(REQUIRE_ENV, "") == "1"


def _release_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    name = callspec.params.get("control_plane") if callspec is not None else None
    return name if isinstance(name, str) else None


def _is_ours(item: pytest.Item) -> bool:
    """A test that needs a control plane (the pin and stamp tests here need none)."""
    return "control_plane" in getattr(item, "fixturenames", ())


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "control_plane" in metafunc.fixturenames:
        names = [release.name for release in selected()]
        metafunc.parametrize("control_plane", names, indirect=True, scope="session", ids=names)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    slots = [index for index, item in enumerate(items) if _is_ours(item)]
    order = list(RELEASES)
    grouped = sorted((items[index] for index in slots),
                     key=lambda item: order.index(_release_of(item) or order[0]))  # stable: keeps the shuffle
    for index, item in zip(slots, grouped, strict=True):
        items[index] = item
        item.add_marker(pytest.mark.realcluster)
        item.add_marker(pytest.mark.timeout(TIMEOUT))


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """Build the binaries the selected tests need, before any test runs."""
    if session.config.option.collectonly:
        return
    needed = [name for name in RELEASES if any(_release_of(item) == name for item in session.items)]
    for name in needed:
        try:
            done = building.ensure(RELEASES[name])
        except building.GoMissing as missing:
            _BUILT[name] = f"realcluster suite: {missing}"  # the same for every release: one summary line
            continue
        except building.BuildError as error:
            _BUILT[name] = f"realcluster {name}: {error}"
            building.say(str(error))
            continue
        _BUILT[name] = ""
        if done.rebuilt:
            building.say(f"{RELEASES[name].kubernetes} built in {done.seconds:.0f} s")
    pinned.prepare_for(session.items)  # helm, for the tests that install the chart


def _unusable(name: str) -> None:
    """Skip (or, with DRALEDGER_REQUIRE_REALCLUSTER=1, fail) when release ``name`` has no binaries."""
    problem = _BUILT.get(name, "")
    if problem:
        if _required():
            pytest.fail(f"{problem.splitlines()[0]} ({REQUIRE_ENV}=1)\n{problem}", pytrace=False)
        pytest.skip(f"{problem.splitlines()[0]} (set {REQUIRE_ENV}=1 to fail instead)")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # raised here rather than in the fixture, a skip is reported at this line: pytest -ra shows one line for all
    name = _release_of(item)
    if name is not None and _is_ours(item):
        _unusable(name)


@pytest.fixture(scope="session")
def control_plane(request: pytest.FixtureRequest,
                  tmp_path_factory: pytest.TempPathFactory) -> Generator[ControlPlane, None, None]:
    """A running etcd + kube-apiserver + kube-scheduler + kube-controller-manager of one release (admin API)."""
    release = RELEASES[request.param]
    if release.name not in _BUILT:  # a run that skipped pytest_runtestloop (e.g. a plugin's own loop)
        try:
            building.ensure(release)
            _BUILT[release.name] = ""
        except building.BuildError as error:
            _BUILT[release.name] = f"realcluster {release.name}: {error}"
    _unusable(release.name)
    plane = ControlPlane(release, tmp_path_factory.mktemp(f"realcluster-{release.name}"))
    try:
        plane.start()
    except StartError as error:
        pytest.fail(f"realcluster {release.name}: the control plane did not start: {error}", pytrace=False)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport,
                                                                                          pytest.TestReport]:
    report = yield
    plane = getattr(item, "funcargs", {}).get("control_plane")
    if report.failed and isinstance(plane, ControlPlane):
        report.sections.append(("realcluster", f"control plane logs ({plane.release.name}): {plane.logs}"))
    started = getattr(item, "funcargs", {}).get("operators")
    if report.failed and isinstance(started, Operators) and started.started:
        report.sections.append(("draledger operator log", started.report()))
    return report


# ------------------------------------------------------------------ the real operator (tests/realcluster/operating.py)


@pytest.fixture(scope="session")
def installation(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Installation:
    """The manifests applied to the release's control plane, and the operator's token and kubeconfig."""
    return install(control_plane, tmp_path_factory.mktemp(f"draledger-{control_plane.release.name}"))


@pytest.fixture
def operators(installation: Installation, tmp_path: Path) -> Generator[Operators, None, None]:
    """Starts ``draledger run`` processes as the operator's ServiceAccount; stops every one after the test."""
    started = Operators(installation, tmp_path)
    try:
        yield started
    finally:
        started.stop_all()


@pytest.fixture
def site(control_plane: ControlPlane) -> Generator[Site, None, None]:
    """A test's own labelled nodes, driver and namespace (``site.setup(...)``), deleted afterwards."""
    made = Site(control_plane.api(), control_plane.release, unique("op"))
    try:
        yield made
    finally:
        made.teardown()
