"""The README's commands print what the README says they print, and its manifests do what it says."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
from typing import Any
from xml.etree import ElementTree

import pytest
import yaml

from tests.manifests.documented import blocks, commands
from tests.manifests.documented import section as documented_section
from tests.manifests.kustomized import kubectl_binary

ROOT = pathlib.Path(__file__).resolve().parents[1]
SVG = "{http://www.w3.org/2000/svg}"
PHASES = {"Rebuilding", "Frozen", "Stale", "Overcommitted", "Ready"}


def test_first_example_table_is_real() -> None:
    """The audit table in the README is exactly the command's output on the committed dump."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"\$ draledger audit -f (\S+).*?\n(.*?)```", readme, re.S)
    assert block is not None
    result = subprocess.run([sys.executable, "-m", "draledger", "audit", "-f", block[1]], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    assert block[2] == result.stdout


def test_example_dump_is_up_to_date(tmp_path: pathlib.Path) -> None:
    """tests/data/example-cluster.json is what tests/data/make_example.py builds from the conformance cases."""
    fresh = tmp_path / "example.json"
    subprocess.run([sys.executable, "tests/data/make_example.py", str(fresh)], cwd=ROOT, check=True)
    assert (ROOT / "tests/data/example-cluster.json").read_text() == fresh.read_text()


def section(title: str) -> str:
    readme = (ROOT / "README.md").read_text()
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", readme, re.S | re.M)
    assert found is not None, f"README.md has no section {title!r}"
    return found[1]


def kustomize(directory: pathlib.Path) -> list[dict[str, Any]]:
    """``kubectl kustomize DIRECTORY`` with the pinned kubectl, or a skip without one."""
    kubectl = kubectl_binary()
    if kubectl is None:
        pytest.skip("kubectl not found: install the test extra to render the manifests")
    done = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert 0 == done.returncode, done.stderr
    return [obj for obj in yaml.safe_load_all(done.stdout) if obj]


def overlay_needs() -> dict[str, str]:
    """The README's overlay table: overlay directory -> what else it says the cluster needs."""
    rows = re.findall(r"^\| `(manifests/overlays/[\w-]+)` \|.*\| ([^|]+) \|$", section("In a cluster"), re.M)
    return {path: needs.strip() for path, needs in rows}


class TestInACluster:
    def test_the_table_offers_every_overlay(self) -> None:
        """Each overlay in manifests/overlays has a row, and the command applies one of them, server-side."""
        overlays = sorted(f"manifests/overlays/{p.name}" for p in (ROOT / "manifests/overlays").iterdir())
        assert overlays == sorted(overlay_needs())
        command = re.search(r"^kubectl apply (.*?) -k (\S+)", section("In a cluster"), re.M)
        assert command is not None
        assert ("--server-side", True) == (command[1], command[2] in overlay_needs())

    @pytest.mark.parametrize("overlay", ["minimal", "observe", "canary", "production"])
    def test_prerequisites_are_what_the_overlay_renders(self, overlay: str) -> None:
        """The table names cert-manager and the Prometheus Operator exactly when the overlay renders their kinds."""
        groups = {obj["apiVersion"].rpartition("/")[0] for obj in kustomize(ROOT / "manifests/overlays" / overlay)}
        needs = overlay_needs()[f"manifests/overlays/{overlay}"]
        assert ("cert-manager.io" in groups, "monitoring.coreos.com" in groups) == (
            "cert-manager" in needs, "monitoring.coreos.com" in needs or "Prometheus Operator" in needs)
        assert (groups.isdisjoint({"cert-manager.io", "monitoring.coreos.com"})) == (needs == "nothing")


    def test_the_rollback_lines_are_the_drills(self) -> None:
        """The README's freeze, export, repair and resume are rollout.md's drill, which the real-cluster test runs."""
        readme = [line for block in blocks(section("In a cluster"), "sh") for line in commands(block)
                  if line.startswith(("draledger freeze", "draledger export", "draledger resume", "# repair"))]
        drill = commands(blocks(documented_section(ROOT / "docs/rollout.md", "Rollback drill"), "sh")[0])

        assert drill == readme
        assert ["freeze", "export", "#", "resume"] == [line.split()[1] if line[0] != "#" else "#" for line in readme]

    def test_the_helm_line_installs_the_chart(self) -> None:
        """The README's helm command installs charts/dra-ledger, the chart of this repository."""
        (line,) = [line for block in blocks(section("In a cluster"), "sh") for line in commands(block)
                   if line.startswith("helm ")]
        assert ["helm", "install", "dra-ledger", "charts/dra-ledger"] == line.split()[:4]
        assert (ROOT / "charts/dra-ledger/Chart.yaml").is_file()


class TestBuildingTheImage:
    def test_images_snippet_points_an_overlay_at_your_registry(self, tmp_path: pathlib.Path) -> None:
        """The README's kustomization, with its overlay path made local, runs the operator from the new image."""
        snippet = re.search(r"```yaml\n(.*?)```", section("Building and publishing the image"), re.S)
        assert snippet is not None
        document = yaml.safe_load(snippet[1])
        (overlay,) = document["resources"]
        assert overlay.endswith("/manifests/overlays/minimal")
        document["resources"] = [os.path.relpath(ROOT / "manifests/overlays/minimal", tmp_path)]
        (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(document))
        (image,) = document["images"]
        deployment = next(o for o in kustomize(tmp_path) if o["kind"] == "Deployment")
        containers = deployment["spec"]["template"]["spec"]["containers"]
        assert [f"{image['newName']}:{image['newTag']}"] == [c["image"] for c in containers]

    def test_pushed_tag_is_the_one_the_snippet_uses(self) -> None:
        """docker build and docker push name the image the kustomization points the overlay at."""
        text = section("Building and publishing the image")
        built = re.search(r"^docker build -t (\S+) \.$", text, re.M)
        pushed = re.search(r"^docker push (\S+)$", text, re.M)
        snippet = re.search(r"```yaml\n(.*?)```", text, re.S)
        assert built is not None
        assert pushed is not None
        assert snippet is not None
        image = yaml.safe_load(snippet[1])["images"][0]
        assert built[1] == pushed[1] == f"{image['newName']}:{image['newTag']}"


def test_the_docs_picture_is_the_first_example() -> None:
    """docs/images/ledger-report.svg draws the nodes of the README's audit example, each in its phase."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"\$ draledger audit -f (\S+).*?\n(.*?)```", readme, re.S)
    assert block is not None
    in_readme = {line.split()[0]: line.split()[1] for line in block[2].splitlines()[1:]}
    drawn = {}
    for panel in ElementTree.parse(ROOT / "docs/images/ledger-report.svg").iter(f"{SVG}g"):
        if panel.get("class") == "panel":
            texts = ["".join(text.itertext()).strip() for text in panel.iter(f"{SVG}text")]
            (name,) = [text for text in texts if re.fullmatch(r"[a-z]+-node-\d+", text)]
            (phase,) = [text for text in texts if text in PHASES]
            drawn[name] = phase
    assert in_readme == drawn


def test_the_docs_picture_is_current() -> None:
    """docs/images/ledger-report.svg is what docs/examples/make_report.py renders now (figures, rules and layout
    as the code has them); DRALEDGER_REGENERATE_DOCS=1 writes it anew (tests/generated_docs.py)."""
    from draledger.commands.audit import ledgers_of
    from draledger.commands.dumps import load_paths
    from draledger.commands.report import render_svg
    from draledger.core.accounting.ledger import Flags
    from tests.generated_docs import REGENERATE

    picture = ROOT / "docs/images/ledger-report.svg"
    now = render_svg(ledgers_of(load_paths([str(ROOT / "tests/data/example-cluster.json")]), Flags(),
                                "2026-12-02T10:00:00Z"), title="dra-ledger: the example cluster")
    if os.environ.get(REGENERATE, "") not in ("", "0"):
        picture.write_text(now, encoding="utf-8")
    assert now == picture.read_text(encoding="utf-8"), "regenerate it with docs/examples/make_report.py"
