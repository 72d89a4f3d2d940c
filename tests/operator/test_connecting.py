"""Credentials as users have them (operator/connecting.py) and KubeApi's one re-login after a 401, without a cluster.

The kubeconfigs here are written by the tests; the exec plugin is a real executable script; the API server is a
tiny aiohttp application on 127.0.0.1 that checks the bearer token and records every request it answers.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import stat
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp.web
import kopf
import kubernetes.config.incluster_config
import pytest
import yaml

from draledger import __version__
from draledger.operator.connecting import CredentialsError, Source, credentials
from draledger.operator.kubeapi import ApiError, KubeApi, NotFound

CA = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"  # read by nothing here, only copied


def kubeconfig(path: Path, users: dict[str, dict[str, Any]], *, servers: dict[str, str] | None = None,
               current: str = "") -> Path:
    """A kubeconfig with one context per user (context, cluster and user share the name)."""
    servers = servers or {}
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": servers.get(name, f"https://{name}.example:6443"),
                                                "certificate-authority-data": base64.b64encode(CA.encode()).decode()}}
                     for name in users],
        "users": [{"name": name, "user": user} for name, user in users.items()],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}} for name in users],
        "current-context": current or next(iter(users)),
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@dataclass
class ExecPlugin:
    """An executable script printing an ExecCredential with the token in ``token_file``; each run is logged."""

    script: Path
    token_file: Path
    log: Path

    @classmethod
    def write(cls, directory: Path, token: str, exit_code: int = 0, expires: str = "") -> ExecPlugin:
        """``expires``: the ``expirationTimestamp`` the plugin prints (none when empty)."""
        plugin = cls(directory / "credential-plugin", directory / "plugin-token", directory / "plugin.log")
        status = {"expirationTimestamp": expires} if expires else {}
        plugin.token_file.write_text(token, encoding="utf-8")
        plugin.script.write_text(textwrap.dedent(f"""\
            #!{sys.executable}
            import json, sys
            token = open({str(plugin.token_file)!r}).read().strip()
            with open({str(plugin.log)!r}, "a") as log:
                log.write(token + "\\n")
            if {exit_code}:
                print("the identity provider is down", file=sys.stderr)
                sys.exit({exit_code})
            print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                              "status": {{"token": token, **{status!r}}}}}))
            """), encoding="utf-8")
        plugin.script.chmod(plugin.script.stat().st_mode | stat.S_IXUSR)
        return plugin

    @property
    def user(self) -> dict[str, Any]:
        return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(self.script),
                         "interactiveMode": "Never"}}

    def runs(self) -> list[str]:
        """The token printed by each run so far."""
        return self.log.read_text(encoding="utf-8").split() if self.log.exists() else []


@pytest.fixture(autouse=True)
def no_ambient_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Neither the machine's kubeconfig nor a pod's environment leaks into a test."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


class TestServerFlag:
    @pytest.mark.parametrize(("server", "insecure"), [
        pytest.param("http://127.0.0.1:8001", True, id="http"),
        pytest.param("https://10.0.0.1:6443", None, id="https"),
    ])
    def test_the_url_wins(self, tmp_path: Path, server: str, insecure: bool | None) -> None:
        """--server is used as given, even with a kubeconfig named: no authentication, TLS off only for http."""
        named = kubeconfig(tmp_path / "config", {"admin": {"token": "t"}})
        info = credentials(Source(server=server, kubeconfig=str(named)))
        assert (server, insecure, None) == (info.server, info.insecure, info.token)


class TestKubeconfig:
    def test_a_token(self, tmp_path: Path) -> None:
        """``token:`` becomes a Bearer token; the cluster's server and inline CA are used."""
        info = credentials(Source(kubeconfig=str(kubeconfig(tmp_path / "config", {"admin": {"token": "abc"}}))))
        assert ("https://admin.example:6443", "Bearer", "abc") == (info.server, info.scheme, info.token)
        assert info.ca_path is not None
        assert CA == Path(info.ca_path).read_text(encoding="utf-8")

    def test_a_token_file_is_read_at_each_login(self, tmp_path: Path) -> None:
        """``tokenFile:`` is read again by every call: a rotated token is picked up."""
        token = tmp_path / "token"
        token.write_text("first", encoding="utf-8")
        source = Source(kubeconfig=str(kubeconfig(tmp_path / "config", {"admin": {"tokenFile": str(token)}})))
        before = credentials(source).token
        token.write_text("second", encoding="utf-8")
        assert ("first", "second") == (before, credentials(source).token)

    def test_client_certificate_files(self, tmp_path: Path) -> None:
        """``client-certificate``/``client-key`` paths are passed on as they are; no token."""
        cert, key = tmp_path / "admin.crt", tmp_path / "admin.key"
        cert.write_text("cert", encoding="utf-8")
        key.write_text("key", encoding="utf-8")
        user = {"client-certificate": str(cert), "client-key": str(key)}
        info = credentials(Source(kubeconfig=str(kubeconfig(tmp_path / "config", {"admin": user}))))
        assert (str(cert), str(key), None) == (info.certificate_path, info.private_key_path, info.token)

    def test_inline_client_certificate_data(self, tmp_path: Path) -> None:
        """``client-certificate-data``/``client-key-data`` are written to files holding the decoded data."""
        user = {"client-certificate-data": base64.b64encode(b"the cert").decode(),
                "client-key-data": base64.b64encode(b"the key").decode()}
        info = credentials(Source(kubeconfig=str(kubeconfig(tmp_path / "config", {"admin": user}))))
        assert info.certificate_path is not None
        assert info.private_key_path is not None
        assert (b"the cert", b"the key") == (Path(info.certificate_path).read_bytes(),
                                             Path(info.private_key_path).read_bytes())

    def test_context_picks_a_context_other_than_the_current_one(self, tmp_path: Path) -> None:
        """With two contexts, --context selects its cluster and user; without it, the current one is used."""
        path = kubeconfig(tmp_path / "config", {"wrong": {"token": "w"}, "right": {"token": "r"}}, current="wrong")
        chosen = credentials(Source(kubeconfig=str(path), context="right"))
        current = credentials(Source(kubeconfig=str(path)))
        assert (("https://right.example:6443", "r"), ("https://wrong.example:6443", "w")) == (
            (chosen.server, chosen.token), (current.server, current.token))

    def test_an_exec_plugin_runs_at_each_login(self, tmp_path: Path) -> None:
        """An ``exec`` plugin's ExecCredential token is used, and the plugin runs again at every call."""
        plugin = ExecPlugin.write(tmp_path, "one")
        source = Source(kubeconfig=str(kubeconfig(tmp_path / "config", {"sso": plugin.user})))
        first = credentials(source)
        plugin.token_file.write_text("two", encoding="utf-8")
        second = credentials(source)
        assert (("Bearer", "one"), ("Bearer", "two")) == ((first.scheme, first.token), (second.scheme, second.token))
        assert ["one", "two"] == plugin.runs()

    def test_an_exec_plugins_expiry_is_the_credentials_expiration(self, tmp_path: Path) -> None:
        """``expirationTimestamp`` less 30 s (rule 6): Kopf and KubeApi log in again before it; none, none."""
        plugin = ExecPlugin.write(tmp_path, "one", expires="2026-12-04T12:00:00Z")
        info = credentials(Source(kubeconfig=str(kubeconfig(tmp_path / "config", {"sso": plugin.user}))))
        assert datetime.datetime(2026, 12, 4, 11, 59, 30, tzinfo=datetime.UTC) == info.expiration
        (tmp_path / "forever").mkdir()
        forever = ExecPlugin.write(tmp_path / "forever", "two")
        info = credentials(Source(kubeconfig=str(kubeconfig(tmp_path / "config2", {"sso": forever.user}))))
        assert ("two", None) == (info.token, info.expiration)

    def test_a_failing_exec_plugin_is_an_error(self, tmp_path: Path) -> None:
        """A plugin that exits non-zero is a CredentialsError with its stderr (the package only logs it and
        carries on without credentials: every request would go out anonymous)."""
        plugin = ExecPlugin.write(tmp_path, "one", exit_code=3)
        path = kubeconfig(tmp_path / "config", {"sso": plugin.user})
        with pytest.raises(CredentialsError) as raised:
            credentials(Source(kubeconfig=str(path)))
        assert (f"cannot use the kubeconfig {path}: exec: process returned 3. the identity provider is down"
                == str(raised.value))

    def test_kubeconfig_environment_variable(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """$KUBECONFIG, set after the package was imported, names the kubeconfig when --kubeconfig does not."""
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "env-config", {"from-env": {"token": "e"}})))
        info = credentials(Source())
        assert ("https://from-env.example:6443", "e") == (info.server, info.token)

    def test_the_flag_beats_the_environment_variable(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """--kubeconfig wins over $KUBECONFIG."""
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "env-config", {"from-env": {"token": "e"}})))
        flag = kubeconfig(tmp_path / "flag-config", {"from-flag": {"token": "f"}})
        assert "f" == credentials(Source(kubeconfig=str(flag))).token

    def test_home_kubeconfig_is_the_default(self, tmp_path: Path) -> None:
        """Without --kubeconfig and $KUBECONFIG, ~/.kube/config is read."""
        (tmp_path / "home" / ".kube").mkdir(parents=True)
        kubeconfig(tmp_path / "home" / ".kube" / "config", {"home": {"token": "h"}})
        assert "h" == credentials(Source()).token


class TestUnusable:
    def test_a_missing_file(self, tmp_path: Path) -> None:
        """--kubeconfig naming no file: one line naming it."""
        missing = tmp_path / "nope"
        with pytest.raises(CredentialsError) as raised:
            credentials(Source(kubeconfig=str(missing)))
        assert f"cannot use the kubeconfig {missing}: no such file" == str(raised.value)

    def test_a_missing_file_named_by_the_environment(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """$KUBECONFIG naming no file: the error names it."""
        monkeypatch.setenv("KUBECONFIG", str(tmp_path / "nope"))
        with pytest.raises(CredentialsError) as raised:
            credentials(Source())
        assert str(raised.value).startswith(f"cannot use the kubeconfig {tmp_path / 'nope'}: ")

    def test_bad_yaml(self, tmp_path: Path) -> None:
        """A file that is not YAML: one line naming it."""
        path = tmp_path / "config"
        path.write_text("garbage: [\n", encoding="utf-8")
        with pytest.raises(CredentialsError) as raised:
            credentials(Source(kubeconfig=str(path)))
        assert str(raised.value).startswith(f"cannot use the kubeconfig {path}: ")
        assert "\n" not in str(raised.value)

    def test_an_unknown_context(self, tmp_path: Path) -> None:
        """--context naming no context: the error names the kubeconfig, the context and the cause."""
        path = kubeconfig(tmp_path / "config", {"admin": {"token": "t"}})
        with pytest.raises(CredentialsError) as raised:
            credentials(Source(kubeconfig=str(path), context="elsewhere"))
        assert str(raised.value).startswith(f"cannot use the kubeconfig {path} (context elsewhere): ")
        assert "elsewhere" in str(raised.value).split(": ", 1)[1]


class TestInCluster:
    @pytest.fixture
    def pod(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        """The environment and files the kubelet gives a pod (the package's own paths, pointed at tmp_path)."""
        token, ca = tmp_path / "sa-token", tmp_path / "sa-ca.crt"
        token.write_text("pod-token", encoding="utf-8")
        ca.write_text(CA, encoding="utf-8")
        monkeypatch.setattr(kubernetes.config.incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
        monkeypatch.setattr(kubernetes.config.incluster_config, "SERVICE_CERT_FILENAME", str(ca))
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
        monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
        return ca

    def test_in_cluster_when_nothing_names_a_kubeconfig(self, pod: Path) -> None:
        """In a pod with no kubeconfig named, the ServiceAccount's token and CA are used."""
        info = credentials(Source())
        assert ("https://10.0.0.1:443", "pod-token", str(pod)) == (info.server, info.token, info.ca_path)
        assert "bearer" == (info.scheme or "").lower()

    @pytest.mark.parametrize("named", ["flag", "environment", "context"])
    def test_a_named_kubeconfig_wins_in_a_pod(self, pod: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              named: str) -> None:
        """--kubeconfig, $KUBECONFIG or --context each mean the kubeconfig, even in a pod."""
        path = kubeconfig(tmp_path / "config", {"admin": {"token": "t"}})
        source = Source(kubeconfig=str(path)) if named == "flag" else Source(context="admin")
        if named != "flag":
            monkeypatch.setenv("KUBECONFIG", str(path))
        assert "t" == credentials(source).token


# ------------------------------------------------------------------ KubeApi's re-login, against a tiny server


@dataclass
class TokenServer:
    """Answers 200 to the bearer ``accepted`` token and 401 to anything else; records every request."""

    accepted: str
    seen: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""

    async def answer(self, request: aiohttp.web.Request) -> aiohttp.web.Response:
        self.seen.append({"method": request.method, "path": request.path, "query": dict(request.query),
                          "authorization": request.headers.get("Authorization", ""),
                          "user_agent": request.headers.get("User-Agent", "")})
        if request.path.startswith(("/apis/not-served", "/apis/draledger.dev")):
            return aiohttp.web.Response(status=404, text="404 page not found\n")  # kube-apiserver's, as text
        if request.headers.get("Authorization") != f"Bearer {self.accepted}":
            return aiohttp.web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                              "message": "Unauthorized", "reason": "Unauthorized", "code": 401},
                                             status=401)
        return aiohttp.web.json_response({"kind": "Namespace", "metadata": {"name": "kube-system"}})


@pytest.fixture
async def token_server() -> AsyncIterator[TokenServer]:
    server = TokenServer(accepted="new")
    app = aiohttp.web.Application()
    app.router.add_route("*", "/{tail:.*}", server.answer)
    runner = aiohttp.web.AppRunner(app)
    await runner.setup()
    await aiohttp.web.TCPSite(runner, "127.0.0.1", 0).start()
    server.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield server
    finally:
        await runner.cleanup()


def logins(server: TokenServer, *tokens: str) -> tuple[Callable[[], kopf.ConnectionInfo], list[str]]:
    """A login function handing out ``tokens`` in turn, and the list of tokens it handed out."""
    handed: list[str] = []
    queue = list(tokens)

    def login() -> kopf.ConnectionInfo:
        handed.append(queue.pop(0))
        return kopf.ConnectionInfo(server=server.url, token=handed[-1], scheme="Bearer")

    return login, handed


async def no_sleep(_: float) -> None:
    return None


class TestRelogin:
    async def test_a_401_logs_in_again_once_and_succeeds(self, token_server: TokenServer) -> None:
        """Old token, 401; ``login`` once; the same request again with the new token succeeds."""
        login, handed = logins(token_server, "new")
        api = KubeApi(kopf.ConnectionInfo(server=token_server.url, token="old", scheme="Bearer"), no_sleep,
                      login=login)
        try:
            answer = await api.get("/api/v1/namespaces/kube-system")
        finally:
            await api.close()
        assert "kube-system" == answer["metadata"]["name"]
        assert ["new"] == handed
        assert ["Bearer old", "Bearer new"] == [seen["authorization"] for seen in token_server.seen]

    async def test_a_second_401_is_an_error_not_a_loop(self, token_server: TokenServer) -> None:
        """Fresh credentials that are refused too: ApiError 401 after exactly two requests and one login."""
        login, handed = logins(token_server, "still-wrong", "never-asked")
        api = KubeApi(kopf.ConnectionInfo(server=token_server.url, token="old", scheme="Bearer"), no_sleep,
                      login=login)
        try:
            with pytest.raises(ApiError) as raised:
                await api.get("/api/v1/namespaces/kube-system")
        finally:
            await api.close()
        assert (401, ["still-wrong"], 2) == (raised.value.status, handed, len(token_server.seen))

    async def test_without_a_login_a_401_is_an_error_at_once(self, token_server: TokenServer) -> None:
        """No way to load credentials again (--server): the 401 is raised after one request."""
        api = KubeApi(kopf.ConnectionInfo(server=token_server.url, token="old", scheme="Bearer"), no_sleep)
        try:
            with pytest.raises(ApiError) as raised:
                await api.get("/api/v1/namespaces/kube-system")
        finally:
            await api.close()
        assert (401, 1) == (raised.value.status, len(token_server.seen))

    @pytest.mark.parametrize(("seconds_left", "tokens"), [
        pytest.param(-1, ["Bearer new"], id="expired: fresh ones first"),
        pytest.param(1, ["Bearer old", "Bearer new"], id="not yet: the 401 path"),
    ])
    async def test_expired_credentials_are_loaded_again_before_the_request(
        self, token_server: TokenServer, seconds_left: int, tokens: list[str]
    ) -> None:
        """Credentials past their ``expiration`` are replaced before the request goes out (one request, not a
        401 first); before it, the old token is sent (here refused, so the 401 path logs in once)."""
        now = datetime.datetime(2026, 12, 4, 12, 0, tzinfo=datetime.UTC)
        login, handed = logins(token_server, "new")
        old = kopf.ConnectionInfo(server=token_server.url, token="old", scheme="Bearer",
                                  expiration=now + datetime.timedelta(seconds=seconds_left))
        api = KubeApi(old, no_sleep, login=login, now=lambda: now)
        try:
            answer = await api.get("/api/v1/namespaces/kube-system")
        finally:
            await api.close()
        assert "kube-system" == answer["metadata"]["name"]
        assert (["new"], tokens) == (handed, [seen["authorization"] for seen in token_server.seen])

    async def test_a_naive_expiration_is_utc(self, token_server: TokenServer) -> None:
        """A ``datetime`` without a zone is read as UTC, as Kopf reads it."""
        now = datetime.datetime(2026, 12, 4, 12, 0, tzinfo=datetime.UTC)
        login, handed = logins(token_server, "new")
        old = kopf.ConnectionInfo(server=token_server.url, token="old", scheme="Bearer",
                                  expiration=datetime.datetime(2026, 12, 4, 11, 59))
        api = KubeApi(old, no_sleep, login=login, now=lambda: now)
        try:
            await api.get("/api/v1/namespaces/kube-system")
        finally:
            await api.close()
        assert (["new"], 1) == (handed, len(token_server.seen))

    async def test_relogin_runs_the_exec_plugin_again(self, token_server: TokenServer, tmp_path: Path) -> None:
        """With a kubeconfig's exec plugin: a rotated token is picked up by the plugin's second run."""
        plugin = ExecPlugin.write(tmp_path, "old")
        path = kubeconfig(tmp_path / "config", {"sso": plugin.user}, servers={"sso": token_server.url})
        source = Source(kubeconfig=str(path))
        api = KubeApi(credentials(source), no_sleep, login=lambda: credentials(source))
        plugin.token_file.write_text("new", encoding="utf-8")
        try:
            await api.get("/api/v1/namespaces/kube-system")
        finally:
            await api.close()
        assert ["old", "new"] == plugin.runs()
        assert ["Bearer old", "Bearer new"] == [seen["authorization"] for seen in token_server.seen]

    async def test_writes_name_the_operator(self, token_server: TokenServer) -> None:
        """Writes carry fieldManager=draledger; every request carries the draledger/<version> User-Agent."""
        api = KubeApi(kopf.ConnectionInfo(server=token_server.url, token="new", scheme="Bearer"), no_sleep)
        try:
            await api.get("/api/v1/namespaces/kube-system")
            await api.create("/api/v1/namespaces", {"metadata": {"name": "x"}})
            await api.merge_patch("/api/v1/namespaces/x", {"metadata": {"labels": {"a": "b"}}})
            await api.json_patch("/api/v1/namespaces/x", [{"op": "add", "path": "/metadata/labels/c", "value": "d"}])
        finally:
            await api.close()
        assert [("GET", {}), ("POST", {"fieldManager": "draledger"}), ("PATCH", {"fieldManager": "draledger"}),
                ("PATCH", {"fieldManager": "draledger"})] == [(s["method"], s["query"]) for s in token_server.seen]
        assert {f"draledger/{__version__}"} == {seen["user_agent"] for seen in token_server.seen}

    async def test_a_plain_text_404_is_not_found_at_once(self, token_server: TokenServer) -> None:
        """kube-apiserver's ``404 page not found`` (text, for an API it does not serve, e.g. a CRD not installed)
        is NotFound after one request (it was a JSON error, retried eight times over half a minute)."""
        api = KubeApi(kopf.ConnectionInfo(server=token_server.url, token="new", scheme="Bearer"), no_sleep)
        try:
            with pytest.raises(NotFound) as raised:
                await api.get("/apis/not-served.example/v1/things")
        finally:
            await api.close()
        assert (404, "404 page not found\n", 1) == (raised.value.status, raised.value.body, len(token_server.seen))

    async def test_a_cluster_without_the_crd_is_named_as_such(self, token_server: TokenServer) -> None:
        """``draledger export --from-cluster`` against kube-apiserver's plain-text 404 for the ledgers' API: one
        line asking whether the CRD is installed, at once (it said "the answer is not JSON")."""
        done = await asyncio.to_thread(subprocess.run, [
            sys.executable, "-m", "draledger", "export", "--from-cluster", "--server", token_server.url],
            capture_output=True, text=True, timeout=30, check=False, stdin=subprocess.DEVNULL)
        assert (1, [f"error: the API server {token_server.url} serves no NodeAllocatableLedger (HTTP 404): is the "
                    "dra-ledger CRD installed?"]) == (done.returncode, done.stderr.splitlines())
        assert 1 == len(token_server.seen)
