"""``draledger freeze``, ``resume``, ``export`` and ``report`` against the emulated API server: what they patch,
what an export says about itself, which exports ``resume --since-export`` refuses, and how the commands fail
when the server cannot be reached or the kubeconfig cannot be used (issue 13, items 9 and 10)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp.web
import pytest
import yaml

from draledger.commands import cli, clusterctl
from draledger.demo.emulator import ClusterEmulator, serve_emulator
from strategies import as_list, node_obj

LEDGERS = "draledger.dev/v1alpha1/nodeallocatableledgers"
NAMESPACES = "v1/namespaces"
NODES = ("n1", "n2", "n3")
CONFORMANCE = Path(__file__).parents[1] / "conformance"


def ledger(node: str, uid: str, mapping_version: int, frozen: bool) -> dict[str, Any]:
    return {
        "apiVersion": "draledger.dev/v1alpha1",
        "kind": "NodeAllocatableLedger",
        "metadata": {"name": node, "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid}]},
        "spec": {"frozen": frozen},
        "status": {"nodeName": node, "phase": "Frozen" if frozen else "Ready", "mappingVersion": mapping_version},
    }


@contextlib.asynccontextmanager
async def cluster(*, kube_system: bool = True, frozen: bool = True) -> AsyncIterator[tuple[ClusterEmulator, str]]:
    """Three nodes, each with its ledger (mappingVersion 3, frozen unless told), and a kube-system Namespace."""
    async with serve_emulator() as (emulator, url):
        nodes = emulator.load_objects([node_obj(n) for n in NODES])
        emulator.load_objects([ledger(n["metadata"]["name"], n["metadata"]["uid"], 3, frozen) for n in nodes])
        if kube_system:
            emulator.load_objects([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}}])
        yield emulator, url


def command(*argv: str) -> tuple[int, str, str]:
    """``draledger ARGV...`` in process (call it through a thread: it runs its own event loop)."""
    args = cli.build_parser().parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    code = clusterctl.run(args, out, err)
    return code, out.getvalue(), err.getvalue()


async def draledger(url: str, *argv: str) -> tuple[int, str, str]:
    return await asyncio.to_thread(command, *argv, "--server", url)


def spec(emulator: ClusterEmulator, node: str) -> dict[str, Any]:
    obj = emulator.get_object(LEDGERS, node)
    assert obj is not None
    return obj["spec"]  # type: ignore[no-any-return]


def frozen(emulator: ClusterEmulator) -> list[str]:
    return [n for n in NODES if spec(emulator, n).get("frozen")]


def repair(emulator: ClusterEmulator, node: str) -> None:
    """The operator's view after a driver fix: the node's mappingVersion moves on."""
    emulator.patch_object(LEDGERS, node, {"status": {"mappingVersion": 4}}, subresource="status")


class TestUsage:
    @pytest.mark.parametrize(
        "argv",
        [
            pytest.param(["freeze"], id="bare-freeze"),
            pytest.param(["freeze", "--reason", "x"], id="freeze-with-only-a-reason"),
            pytest.param(["resume"], id="bare-resume"),
            pytest.param(["resume", "--since-export", "ledgers.yaml"], id="resume-with-only-an-export"),
            pytest.param(["resume", "--all", "--node", "n1"], id="all-and-a-node"),
        ],
    )
    def test_refused_without_nodes(self, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
        """freeze and resume name their nodes or say --all: a bare command is a usage error (exit 2)."""
        with pytest.raises(SystemExit) as exit_info:
            cli.build_parser().parse_args(argv)
        assert 2 == exit_info.value.code
        assert "--node" in capsys.readouterr().err


class TestFreezeAndResume:
    async def test_freeze_writes_the_reason(self) -> None:
        """freeze --node N --reason R writes spec.frozen and spec.reason (the operator quotes it in Events)."""
        async with cluster(frozen=False) as (emulator, url):
            assert (0, "nodeallocatableledger/n2 frozen\n", "") == await draledger(
                url, "freeze", "--node", "n2", "--reason", "repairing the cpu driver")
            assert {"frozen": True, "reason": "repairing the cpu driver"} == spec(emulator, "n2")
            assert ["n2"] == frozen(emulator)

    async def test_freezing_again_without_a_reason_keeps_it(self) -> None:
        """A second freeze without --reason keeps the reason written before; --reason '' removes it."""
        async with cluster(frozen=False) as (emulator, url):
            assert 0 == (await draledger(url, "freeze", "--node", "n1", "--reason", "driver upgrade"))[0]
            assert 0 == (await draledger(url, "freeze", "--node", "n1"))[0]
            assert {"frozen": True, "reason": "driver upgrade"} == spec(emulator, "n1")
            assert 0 == (await draledger(url, "freeze", "--node", "n1", "--reason", ""))[0]
            assert {"frozen": True} == spec(emulator, "n1")

    async def test_freeze_all_and_resume_all(self) -> None:
        """freeze --all freezes every ledger; resume --all resumes every frozen one and clears the reason."""
        async with cluster(frozen=False) as (emulator, url):
            assert 0 == (await draledger(url, "freeze", "--all", "--reason", "drill"))[0]
            assert list(NODES) == frozen(emulator)
            code, out, _ = await draledger(url, "resume", "--all")
            assert (0, 3) == (code, out.count(" resumed\n"))
            assert [{"frozen": False}] * 3 == [spec(emulator, n) for n in NODES]

    async def test_a_node_without_a_ledger(self) -> None:
        """A named node without a ledger is an error on stderr (exit 1); the other nodes are still frozen."""
        async with cluster(frozen=False) as (emulator, url):
            code, out, err = await draledger(url, "freeze", "--node", "n9", "--node", "n1")
            assert (1, "nodeallocatableledger/n1 frozen\n") == (code, out)
            assert "error: nodeallocatableledger/n9: not found (no such node, or no ledger for it yet)\n" == err
            assert ["n1"] == frozen(emulator)


class TestExport:
    async def test_from_the_cluster_identifies_itself(self, tmp_path: Path) -> None:
        """An export names its source, the cluster (kube-system's UID), the server, the time and its ledgers."""
        async with cluster() as (emulator, url):
            path = tmp_path / "ledgers.yaml"
            assert (0, f"wrote {path} (3 ledgers)\n", "") == await draledger(
                url, "export", "--from-cluster", "--to", str(path))
            document = yaml.safe_load(path.read_text(encoding="utf-8"))
            block = document["draledgerExport"]
            uid = emulator.get_object(NAMESPACES, "kube-system")["metadata"]["uid"]  # type: ignore[index]
            assert {"formatVersion": 1, "source": "cluster", "cluster": uid, "server": url,
                    "ledgers": list(NODES)} == {k: v for k, v in block.items() if k != "exportedAt"}
            assert ("v1", "List", list(NODES)) == (
                document["apiVersion"], document["kind"], [i["metadata"]["name"] for i in document["items"]])
            assert block["exportedAt"].endswith("Z")

    async def test_as_a_table(self) -> None:
        """-o table prints one line per exported ledger, for people: phase, frozen, versions, the Node's UID."""
        async with cluster() as (emulator, url):
            emulator.patch_object(LEDGERS, "n2", {"spec": {"frozen": False}})
            code, out, err = await draledger(url, "export", "--from-cluster", "-o", "table")
            uids = {n: emulator.get_object("v1/nodes", n)["metadata"]["uid"] for n in NODES}  # type: ignore[index]
        assert (0, "") == (code, err)
        assert [["NAME", "PHASE", "FROZEN", "MAPPING VERSION", "LEDGER VERSION", "NODE UID"],
                ["n1", "Frozen", "yes", "3", "-", uids["n1"]],
                ["n2", "Frozen", "no", "3", "-", uids["n2"]],
                ["n3", "Frozen", "yes", "3", "-", uids["n3"]]] == [
            re.split(r"\s{3,}", line) for line in out.splitlines()]

    def test_from_a_dump_as_a_table(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """export -f DUMP -o table: the ledgers computed from the dump, one line each."""
        dump = tmp_path / "dump.json"
        dump.write_text(json.dumps(json.loads((CONFORMANCE / "v08-multi-node.json").read_text())["dump"]))
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["export", "-f", str(dump), "-o", "table"])
        rows = [re.split(r"\s{3,}", line)[:5] for line in capsys.readouterr().out.splitlines()]
        assert (0, ["n1", "n2", "n3"]) == (exit_info.value.code, [row[0] for row in rows[1:]])
        assert {("no", "1", "1")} == {tuple(row[2:5]) for row in rows[1:]}

    async def test_without_a_readable_kube_system(self, tmp_path: Path) -> None:
        """When kube-system cannot be read, the export names no cluster and says so on stderr (exit 0)."""
        async with cluster(kube_system=False) as (_, url):
            path = tmp_path / "ledgers.json"
            code, _, err = await draledger(url, "export", "--from-cluster", "--to", str(path), "-o", "json")
            assert (0, "") == (code, json.loads(path.read_text(encoding="utf-8"))["draledgerExport"]["cluster"])
            assert err.startswith("warning: the kube-system Namespace cannot be read: the export names no cluster")

    async def test_to_a_file_that_cannot_be_written(self, tmp_path: Path) -> None:
        """An export to a folder that does not exist is one line on stderr and exit 2 (once a traceback)."""
        async with cluster() as (_, url):
            path = tmp_path / "missing" / "ledgers.yaml"
            assert (2, "", f"error: {path}: cannot write: the folder {path.parent} does not exist\n") == \
                await draledger(url, "export", "--from-cluster", "--to", str(path))

    def test_from_a_dump_says_so(self, tmp_path: Path) -> None:
        """An export computed from a dump is marked as such (source: dump, the files)."""
        dump = tmp_path / "dump.json"
        dump.write_text(json.dumps(json.loads((CONFORMANCE / "v08-multi-node.json").read_text())["dump"]))
        path = tmp_path / "computed.yaml"
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["export", "-f", str(dump), "--to", str(path)])
        assert 0 == exit_info.value.code
        block = yaml.safe_load(path.read_text(encoding="utf-8"))["draledgerExport"]
        assert ("dump", [str(dump)], ["n1", "n2", "n3"]) == (block["source"], block["files"], block["ledgers"])


class TestResumeSinceExport:
    async def export(self, url: str, folder: Path) -> Path:
        path = folder / "ledgers.yaml"
        assert 0 == (await draledger(url, "export", "--from-cluster", "--to", str(path)))[0]
        return path

    async def test_resumes_only_repaired_nodes(self, tmp_path: Path) -> None:
        """Only nodes whose mappingVersion moved resume; the others stay frozen, named, and the exit code is 1
        until they have moved too."""
        async with cluster() as (emulator, url):
            path = await self.export(url, tmp_path)
            repair(emulator, "n2")
            code, out, err = await draledger(url, "resume", "--all", "--since-export", str(path))
            assert (1, "") == (code, err)
            assert ["nodeallocatableledger/n1 stays frozen: mappingVersion 3 unchanged since export",
                    "nodeallocatableledger/n3 stays frozen: mappingVersion 3 unchanged since export",
                    "nodeallocatableledger/n2 resumed"] == out.splitlines()
            assert ["n1", "n3"] == frozen(emulator)
            repair(emulator, "n1")
            repair(emulator, "n3")
            assert 0 == (await draledger(url, "resume", "--all", "--since-export", str(path)))[0]
            assert [] == frozen(emulator)

    async def test_named_node_that_stays_frozen(self, tmp_path: Path) -> None:
        """resume --node N --since-export exits 1 while N stays frozen."""
        async with cluster() as (emulator, url):
            path = await self.export(url, tmp_path)
            code, out, _ = await draledger(url, "resume", "--node", "n1", "--since-export", str(path))
            assert (1, ["n1", "n2", "n3"]) == (code, frozen(emulator))
            assert "nodeallocatableledger/n1 stays frozen: mappingVersion 3 unchanged since export\n" == out

    async def test_a_replaced_node_stays_frozen(self, tmp_path: Path) -> None:
        """A node whose Node object changed since the export (another UID) is not judged by the old versions."""
        async with cluster() as (emulator, url):
            path = await self.export(url, tmp_path)
            repair(emulator, "n1")
            owner = {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "another-node"}
            emulator.patch_object(LEDGERS, "n1", {"metadata": {"ownerReferences": [owner]}})
            code, out, _ = await draledger(url, "resume", "--node", "n1", "--since-export", str(path))
            assert (1, ["n1", "n2", "n3"]) == (code, frozen(emulator))
            assert "its Node was replaced since the export" in out

    async def test_an_export_without_a_cluster_checks_node_uids(self, tmp_path: Path) -> None:
        """An export that names no cluster (kube-system unreadable) still resumes repaired nodes by Node UID."""
        async with cluster(kube_system=False) as (emulator, url):
            path = await self.export(url, tmp_path)
            repair(emulator, "n3")
            assert (1, ["n1", "n2"]) == ((await draledger(url, "resume", "--all", "--since-export", str(path)))[0],
                                         frozen(emulator))

    async def test_a_node_not_frozen_is_left_alone(self, tmp_path: Path) -> None:
        """resume --all considers frozen nodes only; a named node that is not frozen is said to be so."""
        async with cluster() as (emulator, url):
            path = await self.export(url, tmp_path)
            emulator.patch_object(LEDGERS, "n1", {"spec": {"frozen": False}})
            code, out, _ = await draledger(url, "resume", "--node", "n1", "--since-export", str(path))
            assert (0, "nodeallocatableledger/n1 is not frozen\n") == (code, out)

    @pytest.mark.parametrize(
        ("make", "reason"),
        [
            pytest.param(lambda export: "", "empty input", id="empty"),
            pytest.param(lambda export: "{}", "not a draledger export (no draledgerExport block)", id="empty-map"),
            pytest.param(lambda export: json.dumps(as_list([node_obj("n1")])),
                         "not a draledger export (no draledgerExport block)", id="a-dump"),
            pytest.param(lambda export: json.dumps({**export, "draledgerExport": None}),
                         "not a draledger export (no draledgerExport block)", id="an-old-export"),
            pytest.param(lambda export: "kind: List\nitems: [\n", "not valid JSON or YAML", id="broken-yaml"),
            pytest.param(lambda export: json.dumps({**export, "draledgerExport": {
                **export["draledgerExport"], "source": "dump"}}), "an export computed from a dump", id="from-a-dump"),
            pytest.param(lambda export: json.dumps({**export, "draledgerExport": {
                **export["draledgerExport"], "cluster": "5a7e-other"}}), "an export of another cluster",
                         id="another-cluster"),
            pytest.param(lambda export: json.dumps({**export, "items": export["items"][:2]}),
                         "its items are not the ledgers its draledgerExport lists", id="cut-short"),
            pytest.param(lambda export: json.dumps({**export, "draledgerExport": {
                **export["draledgerExport"], "cluster": 7}}), "a malformed export", id="cluster-not-a-string"),
            pytest.param(lambda export: json.dumps({**export, "draledgerExport": {
                **export["draledgerExport"], "formatVersion": 9}}), "an export of format 9", id="newer-format"),
        ],
    )
    async def test_refused(self, tmp_path: Path, make: Callable[[dict[str, Any]], str], reason: str) -> None:
        """A file that is not a valid export of this cluster, taken from it, is refused: exit 2, one line naming
        the file and the reason, and no node resumed (every node repaired, so a mistake would show)."""
        async with cluster() as (emulator, url):
            export = yaml.safe_load((await self.export(url, tmp_path)).read_text(encoding="utf-8"))
            path = tmp_path / "suspect.yaml"
            path.write_text(make(export), encoding="utf-8")
            for node in NODES:
                repair(emulator, node)
            code, out, err = await draledger(url, "resume", "--all", "--since-export", str(path))
            assert (2, "", 1) == (code, out, len(err.splitlines()))
            assert err.startswith(f"error: {path}: ")
            assert reason in err
            assert list(NODES) == frozen(emulator)

    async def test_a_missing_file(self, tmp_path: Path) -> None:
        """An export file that cannot be read is refused (exit 2)."""
        async with cluster() as (emulator, url):
            code, _, err = await draledger(url, "resume", "--all", "--since-export", str(tmp_path / "nope.yaml"))
            assert (2, list(NODES)) == (code, frozen(emulator))
            assert err.startswith(f"error: {tmp_path / 'nope.yaml'}: cannot read")

    async def test_a_node_the_export_lacks(self, tmp_path: Path) -> None:
        """Naming a node the export holds no ledger for is refused, naming the node; nothing is resumed."""
        async with cluster() as (emulator, url):
            path = await self.export(url, tmp_path)
            for node in NODES:
                repair(emulator, node)
            code, _, err = await draledger(url, "resume", "--node", "n1", "--node", "n7", "--since-export", str(path))
            assert (2, f"error: {path}: the export holds no ledger for n7\n", list(NODES)) == (
                code, err, frozen(emulator))

    async def test_a_cluster_that_cannot_be_verified(self, tmp_path: Path) -> None:
        """An export that names a cluster is refused where kube-system cannot be read (no way to compare)."""
        async with cluster() as (emulator, url):
            path = await self.export(url, tmp_path)
            emulator.delete_object(NAMESPACES, "kube-system")
            repair(emulator, "n1")
            code, _, err = await draledger(url, "resume", "--all", "--since-export", str(path))
            assert (2, list(NODES)) == (code, frozen(emulator))
            assert f"error: {path}: cannot verify that it is an export of this cluster" in err


# ------------------------------------------------------------------ failing fast (item 10)


def closed_port() -> int:
    """A local port that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def draledger_process(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real command, as a process that must end within 15 s (a generous bound: it takes about one)."""
    return subprocess.run([sys.executable, "-m", "draledger", *argv], capture_output=True, text=True,
                          timeout=15, check=False, env=env, stdin=subprocess.DEVNULL)


COMMANDS = [
    pytest.param(("freeze", "--all"), id="freeze"),
    pytest.param(("resume", "--all"), id="resume"),
    pytest.param(("export", "--from-cluster"), id="export"),
    pytest.param(("report", "--svg", "unused.svg"), id="report"),
]


class TestUnreachableServer:
    @pytest.mark.parametrize("argv", COMMANDS)
    def test_closed_port(self, argv: tuple[str, ...], tmp_path: Path) -> None:
        """Nothing listens: one line naming the server and the cause, exit 1, within seconds (once: 33 s of
        silence, then a 72-line traceback)."""
        url = f"http://127.0.0.1:{closed_port()}"
        done = draledger_process(*argv, "--server", url)
        assert (1, "", [f"error: cannot reach the API server {url}: connection refused"]) == (
            done.returncode, done.stdout, done.stderr.splitlines())
        assert not (tmp_path / "unused.svg").exists()

    async def test_tls_to_a_plain_http_server(self) -> None:
        """https:// to a server that speaks plain HTTP is a TLS failure, in one line."""
        async with serve_emulator() as (_, url):
            url = url.replace("http://", "https://")
            done = await asyncio.to_thread(draledger_process, "freeze", "--all", "--server", url)
        assert (1, 1) == (done.returncode, len(done.stderr.splitlines()))
        assert done.stderr.startswith(f"error: cannot reach the API server {url}: TLS: ")

    @pytest.mark.parametrize(
        ("status", "body", "line"),
        [
            pytest.param(403, {"kind": "Status", "message": "nodeallocatableledgers is forbidden"},
                         "error: the API server {url} refused the request: GET /apis/draledger.dev/v1alpha1/"
                         "nodeallocatableledgers: HTTP 403: nodeallocatableledgers is forbidden", id="forbidden"),
            pytest.param(401, {"kind": "Status", "message": "Unauthorized"},
                         "error: the API server {url} refused the request: GET /apis/draledger.dev/v1alpha1/"
                         "nodeallocatableledgers: HTTP 401: Unauthorized", id="unauthorized"),
            pytest.param(200, "<html>a login page</html>",
                         "error: cannot reach the API server {url}: the answer is not JSON: is this a Kubernetes API "
                         "server?", id="not-kubernetes"),
        ],
    )
    async def test_a_server_that_refuses(self, status: int, body: Any, line: str) -> None:
        """401, 403, or a server that is no Kubernetes API: one line naming the server and the cause, exit 1."""

        async def answer(request: aiohttp.web.Request) -> aiohttp.web.Response:
            text = body if isinstance(body, str) else json.dumps(body)
            return aiohttp.web.Response(status=status, text=text, content_type="application/json")

        app = aiohttp.web.Application()
        app.router.add_route("*", "/{tail:.*}", answer)
        runner = aiohttp.web.AppRunner(app)
        await runner.setup()
        await aiohttp.web.TCPSite(runner, "127.0.0.1", 0).start()
        try:
            url = f"http://127.0.0.1:{runner.addresses[0][1]}"
            done = await asyncio.to_thread(draledger_process, "resume", "--all", "--server", url)
        finally:
            await runner.cleanup()
        assert (1, "", [line.format(url=url)]) == (done.returncode, done.stdout, done.stderr.splitlines())

    @pytest.mark.parametrize(
        ("kubeconfig", "cause"),
        [
            pytest.param(None, "no such file", id="missing"),
            pytest.param("garbage: [\n", "cannot use the kubeconfig", id="not-yaml"),
            pytest.param("apiVersion: v1\nkind: Config\ncurrent-context: nope\ncontexts: []\nclusters: []\n"
                         "users: []\n", "Expected object with name nope", id="unknown-context"),
        ],
    )
    @pytest.mark.parametrize("argv", COMMANDS)
    def test_an_unusable_kubeconfig(self, tmp_path: Path, argv: tuple[str, ...], kubeconfig: str | None,
                                    cause: str) -> None:
        """A kubeconfig that is missing, not YAML or names a context it lacks: exit 2 in one line naming it."""
        path = tmp_path / "kubeconfig"
        if kubeconfig is not None:
            path.write_text(kubeconfig, encoding="utf-8")
        done = draledger_process(*argv, "--kubeconfig", str(path))
        assert (2, "", 1) == (done.returncode, done.stdout, len(done.stderr.splitlines()))
        assert done.stderr.startswith(f"error: cannot use the kubeconfig {path}: ")
        assert cause in done.stderr
