"""`draledger --version` and `draledger_build_info`: the version, the commit it was built from, Python, and the
release in force (operator/builds.py)."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import generate_latest

import draledger
from draledger.operator import builds
from draledger.operator.metrics import Metrics

ROOT = Path(__file__).resolve().parents[2]
GIT = shutil.which("git")


@pytest.fixture
def fresh_commit() -> Iterator[None]:
    """``builds.commit`` looked up again for this test (and after it)."""
    builds.commit.cache_clear()
    yield
    builds.commit.cache_clear()


def git(folder: Path, *args: str) -> str:
    assert GIT is not None
    return subprocess.run([GIT, "-C", str(folder), *args], capture_output=True, text=True, check=True).stdout.strip()


class TestCommit:
    def test_the_file_an_image_build_writes_wins(self, tmp_path: Path, fresh_commit: None,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
        """BUILD_COMMIT beside the package, as the Dockerfile writes it, is the commit (12 hex digits)."""
        written = tmp_path / "BUILD_COMMIT"
        written.write_text("0123456789abcdef0123456789abcdef01234567\n")
        monkeypatch.setattr(builds, "COMMIT_FILE", written)
        assert "0123456789ab" == builds.commit()

    def test_a_file_that_is_no_commit_is_ignored(self, tmp_path: Path, fresh_commit: None,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
        """The Dockerfile's default (or anything else that is no commit) falls through to git, then unknown."""
        written = tmp_path / "BUILD_COMMIT"
        written.write_text("unknown\n")
        monkeypatch.setattr(builds, "COMMIT_FILE", written)
        monkeypatch.setattr(builds, "PACKAGE", tmp_path)
        assert "unknown" == builds.commit()

    @pytest.mark.skipif(GIT is None, reason="no git")
    def test_a_checkout_says_its_head(self, tmp_path: Path) -> None:
        """A package tracked by git (an editable install) is its HEAD; -dirty with a change to the package."""
        package = tmp_path / "operator" / "draledger"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        git(tmp_path, "init", "-q")
        git(tmp_path, "add", ".")
        git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x")
        head = git(tmp_path, "rev-parse", "HEAD")
        assert head[:12] == builds._from_git(package)
        (package / "__init__.py").write_text("changed = True\n")
        assert f"{head[:12]}-dirty" == builds._from_git(package)

    @pytest.mark.skipif(GIT is None, reason="no git")
    def test_an_install_inside_another_checkout_is_unknown(self, tmp_path: Path) -> None:
        """A package git does not track (a virtualenv inside some project's checkout) is not that project's."""
        git(tmp_path, "init", "-q")
        (tmp_path / "f").write_text("")
        git(tmp_path, "add", "f")
        git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x")
        package = tmp_path / ".venv" / "draledger"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        assert "" == builds._from_git(package)

    def test_no_work_tree_is_unknown(self, tmp_path: Path) -> None:
        """A folder git knows nothing of gives no commit, and no error."""
        assert "" == builds._from_git(tmp_path)


class TestVersion:
    def test_the_command_prints_version_commit_and_python(self) -> None:
        """`draledger --version` (the real process): one line, the version, the commit and Python."""
        done = subprocess.run([sys.executable, "-m", "draledger", "--version"], capture_output=True, text=True,
                              timeout=60, check=True)
        expected = (f"draledger {draledger.__version__} (commit {builds.commit()}, "
                    f"{platform.python_implementation()} {platform.python_version()})\n")
        assert (expected, "") == (done.stdout, done.stderr)

    def test_one_version(self) -> None:
        """pyproject.toml reads its version from draledger.__version__, which the command prints."""
        project = tomllib.loads((ROOT / "pyproject.toml").read_text())
        assert ["version"] == project["project"]["dynamic"]
        assert "draledger.__version__" == project["tool"]["setuptools"]["dynamic"]["version"]["attr"]


class TestBuildInfo:
    def test_the_metric_carries_the_build_and_the_release(self) -> None:
        """draledger_build_info{version,commit,release} 1; release is unknown until the runtime sets it."""
        metrics = Metrics()

        def series() -> str:
            return next(line for line in generate_latest(metrics.registry).decode().splitlines()
                        if line.startswith("draledger_build_info{"))

        labels = f'commit="{builds.commit()}",release="unknown",version="{draledger.__version__}"'
        assert f"draledger_build_info{{{labels}}} 1.0" == series()
        metrics.release = "v1.37"
        assert 'release="v1.37"' in series()
