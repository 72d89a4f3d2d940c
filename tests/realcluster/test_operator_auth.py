"""Authentication as users have it, for real (issue 12, item 8): certificates, tokens and an exec plugin.

``draledger run`` and the cluster commands (``freeze``, ``resume``, ``export --from-cluster``) get a kubeconfig
with two contexts, the current one wrong (a closed port, a bogus token), and ``--context`` naming the right one;
their ``$KUBECONFIG`` names a missing file, so only the flags can work. The right context's user holds the
admin's client certificate (inline data, or file paths), the operator's ServiceAccount token (inline, or a token
file), or an ``exec`` credential plugin: a Python script written by the test that prints an ExecCredential with
the token of a file the test controls, and logs each of its runs.

Rotation: the plugin hands out a token bound (TokenRequest ``boundObjectRef``) to a Secret; the test writes a
second token into the plugin's file and deletes the first one's Secret, which revokes it. The operator's Kopf
watches (Kopf's re-authentication, through our login handler) and its own writes (``KubeApi``'s re-login) each get
401s and go on with the new token, which the plugin hands out when it runs again.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.realcluster.cluster import Api, ApiError, Credentials, wait_until
from tests.realcluster.launcher import ControlPlane, free_port
from tests.realcluster.operating import (
    LEDGERS,
    NAMESPACE,
    SERVICE_ACCOUNT,
    Installation,
    Operators,
    Site,
    audit_events,
    audit_offset,
    from_operator,
    ledger,
    refusals,
)
from tests.realcluster.releases import ROOT

WITHIN = 60.0
CONTEXT = "realcluster"
KINDS = ("client-certificate-data", "client-certificate-files", "token", "token-file", "exec-plugin")
WATCHED = {"nodes", "pods", "resourceslices", "resourceclaims", "nodeallocatableledgers"}
REAUTHENTICATING = "Re-authentication has been initiated."  # Kopf's log line when a 401 emptied its vault
CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"
OPENED = ("ResponseStarted", "ResponseComplete")  # a watch still open has only its ResponseStarted event


# ------------------------------------------------------------------ credentials


@dataclass
class ExecPlugin:
    """An executable script printing an ExecCredential with the token in ``token_file``; each run is logged."""

    script: Path
    token_file: Path
    log: Path

    @classmethod
    def write(cls, directory: Path, token: str, lifetime: int = 0) -> ExecPlugin:
        """``token``: one per line, each run hands out the first and drops it while more follow (one token: the
        same at every run). ``lifetime``: each run's ExecCredential says it expires that many seconds later
        (0: it never says)."""
        plugin = cls(directory / "credential-plugin", directory / "plugin-token", directory / "plugin.log")
        plugin.token_file.write_text(token, encoding="utf-8")
        plugin.script.write_text(textwrap.dedent(f"""\
            #!{sys.executable}
            import datetime, json
            tokens = open({str(plugin.token_file)!r}).read().split()
            token = tokens[0]
            if len(tokens) > 1:
                open({str(plugin.token_file)!r}, "w").write("\\n".join(tokens[1:]))
            with open({str(plugin.log)!r}, "a") as log:
                log.write(token + "\\n")
            status = {{"token": token}}
            if {lifetime}:
                expiry = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds={lifetime})
                status["expirationTimestamp"] = expiry.strftime("%Y-%m-%dT%H:%M:%SZ")
            print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                              "status": status}}))
            """), encoding="utf-8")
        plugin.script.chmod(plugin.script.stat().st_mode | stat.S_IXUSR)
        return plugin

    @property
    def user(self) -> dict[str, Any]:
        return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(self.script),
                         "interactiveMode": "Never"}}

    def runs(self) -> list[str]:
        """The token handed out by each run so far."""
        return self.log.read_text(encoding="utf-8").split() if self.log.exists() else []


def two_contexts(path: Path, plane: ControlPlane, user: dict[str, Any], *, inline: bool = False) -> Path:
    """A kubeconfig whose current context is wrong (a closed port, a bogus token) and whose ``CONTEXT`` has
    ``user`` on the control plane (its CA inline with ``inline``, else as a path)."""
    assert plane.pki is not None
    ca = ({"certificate-authority-data": base64.b64encode(plane.pki.ca_cert.read_bytes()).decode()} if inline
          else {"certificate-authority": str(plane.pki.ca_cert)})
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "elsewhere", "cluster": {"server": f"https://127.0.0.1:{free_port()}", **ca}},
                     {"name": CONTEXT, "cluster": {"server": plane.server, **ca}}],
        "users": [{"name": "nobody", "user": {"token": "not-a-token"}}, {"name": "someone", "user": user}],
        "contexts": [{"name": "wrong", "context": {"cluster": "elsewhere", "user": "nobody"}},
                     {"name": CONTEXT, "context": {"cluster": CONTEXT, "user": "someone"}}],
        "current-context": "wrong",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    path.chmod(0o600)
    return path


def user_of(kind: str, plane: ControlPlane, installation: Installation, directory: Path) -> dict[str, Any]:
    """The kubeconfig user of one kind of credentials: the admin's certificate, or the operator's token."""
    assert plane.pki is not None
    if kind == "client-certificate-data":
        return {"client-certificate-data": base64.b64encode(plane.pki.admin.cert.read_bytes()).decode(),
                "client-key-data": base64.b64encode(plane.pki.admin.key.read_bytes()).decode()}
    if kind == "client-certificate-files":
        return {"client-certificate": str(plane.pki.admin.cert), "client-key": str(plane.pki.admin.key)}
    if kind == "token":
        return {"token": installation.token}
    if kind == "token-file":
        token = directory / "token"
        token.write_text(installation.token, encoding="utf-8")
        return {"tokenFile": str(token)}
    return ExecPlugin.write(directory, installation.token).user


def bound_token(admin: Api, site: Site, name: str) -> tuple[str, str]:
    """A token of the operator's ServiceAccount bound to a new Secret ``name`` (deleting it revokes the token);
    the token and the Secret's path (deleted with the site)."""
    secrets = f"/api/v1/namespaces/{NAMESPACE}/secrets"
    secret = admin.create(secrets, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}})
    site.cleanup.append(f"{secrets}/{name}")
    answer = admin.create(f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{SERVICE_ACCOUNT}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600, "boundObjectRef": {
            "apiVersion": "v1", "kind": "Secret", "name": name, "uid": secret["metadata"]["uid"]}}})
    return str(answer["status"]["token"]), f"{secrets}/{name}"


def jti(token: str) -> str:
    """The token's ID, as the audit log names it (``JTI=<jti>`` in the user's extra)."""
    payload = token.split(".")[1]
    return f"JTI={json.loads(base64.urlsafe_b64decode(payload + '=' * (-len(payload) % 4)))['jti']}"


def credential_of(event: dict[str, Any]) -> str:
    return str(((event.get("user") or {}).get("extra") or {}).get(CREDENTIAL_ID, [""])[0])


def target(event: dict[str, Any]) -> tuple[str, str, str]:
    """(verb, resource, subresource) of an audit event; a non-resource request (discovery) has no resource."""
    ref = event.get("objectRef") or {}
    return str(event["verb"]), str(ref.get("resource", "")), str(ref.get("subresource", ""))


def answer_to(plane: ControlPlane, token: str) -> int:
    """The HTTP status kube-apiserver answers a GET with ``token`` (SelfSubjectReview needs no permission)."""
    assert plane.pki is not None
    try:
        Api(Credentials(plane.server, plane.pki.ca_cert, None, None, token=token)).create(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    except ApiError as error:
        return error.status
    return 200


def failed_authentications(plane: ControlPlane) -> float:
    """kube-apiserver's count of requests it answered 401 (``authentication_attempts`` that were no success)."""
    text = plane.api().request("GET", "/metrics", accept="text/plain")
    return sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
               if sample.name.removesuffix("_total") == "authentication_attempts"  # the parser adds _total
               and sample.labels.get("result") in ("error", "failure"))


# ------------------------------------------------------------------ the operator and the commands


def phase(api: Api, node: str) -> str:
    return str(((ledger(api, node) or {}).get("status") or {}).get("phase", ""))


def command(kubeconfig: Path, *args: str, missing: Path) -> subprocess.CompletedProcess[str]:
    """``draledger ARGS --kubeconfig K --context CONTEXT``, with ``$KUBECONFIG`` naming a missing file."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("DRALEDGER_")}
    env["KUBECONFIG"] = str(missing)
    return subprocess.run([sys.executable, "-m", "draledger", *args, "--kubeconfig", str(kubeconfig),
                           "--context", CONTEXT], capture_output=True, text=True, timeout=60, check=False, cwd=ROOT,
                          env=env)


class TestCredentials:
    @pytest.mark.parametrize("kind", [pytest.param(kind, id=kind) for kind in KINDS])
    def test_the_operator_and_the_commands_work_with_each_kind_of_credentials(
            self, control_plane: ControlPlane, installation: Installation, operators: Operators, site: Site,
            tmp_path: Path, kind: str) -> None:
        """``run``, ``freeze``, ``export --from-cluster`` and ``resume`` with --kubeconfig and --context: ledgers
        converge through the operator's watches and writes, and each command does its work."""
        api = site.api
        site.setup(1, gated=False)
        kubeconfig = two_contexts(tmp_path / "two-contexts.kubeconfig", control_plane,
                                  user_of(kind, control_plane, installation, tmp_path),
                                  inline=kind == "client-certificate-data")
        missing = tmp_path / "no-such.kubeconfig"
        offset = audit_offset(control_plane)
        operators.start("--kubeconfig", str(kubeconfig), "--context", CONTEXT, "--node-selector", site.label,
                        kubeconfig=missing)
        wait_until(lambda: phase(api, site.nodes[0]) == "Ready", within=WITHIN, what="the first node's ledger")
        node = site.add_node(f"{site.name}-added")  # seen through the operator's nodes watch
        wait_until(lambda: phase(api, node) == "Ready", within=WITHIN, what="the added node's ledger")

        frozen = command(kubeconfig, "freeze", "--node", node, "--reason", "auth test", missing=missing)
        wait_until(lambda: phase(api, node) == "Frozen", within=WITHIN, what="the operator to see the freeze")
        exported = command(kubeconfig, "export", "--from-cluster", "-o", "json", missing=missing)
        resumed = command(kubeconfig, "resume", "--node", node, missing=missing)
        wait_until(lambda: phase(api, node) == "Ready", within=WITHIN, what="the operator to see the resume")

        assert (0, f"nodeallocatableledger/{node} frozen\n", "") == (frozen.returncode, frozen.stdout, frozen.stderr)
        assert (0, "") == (exported.returncode, exported.stderr)
        document = json.loads(exported.stdout)
        mine = {item["metadata"]["name"]: item for item in document["items"] if item["metadata"]["name"] in site.nodes}
        assert {"frozen": True, "reason": "auth test"} == mine[node]["spec"]
        assert set(site.nodes) == set(mine)
        assert (control_plane.server, api.get("/api/v1/namespaces/kube-system")["metadata"]["uid"]) == (
            document["draledgerExport"]["server"], document["draledgerExport"]["cluster"])
        assert (0, f"nodeallocatableledger/{node} resumed\n", "") == (
            resumed.returncode, resumed.stdout, resumed.stderr)
        assert not (ledger(api, node) or {})["spec"].get("frozen")
        seen = from_operator(audit_events(control_plane, offset, OPENED))
        if kind.startswith("client-certificate"):
            assert [] == seen  # the admin's certificate, not the installation's token
        else:  # the ServiceAccount, with the manifests' RBAC: watches, ledger writes and the commands' requests
            done = {target(event) for event in seen}
            assert {("watch", resource, "") for resource in WATCHED} <= done
            assert {("create", "nodeallocatableledgers", ""), ("patch", "nodeallocatableledgers", "status"),
                    ("patch", "nodeallocatableledgers", ""), ("list", "nodeallocatableledgers", "")} <= done
            assert [] == refusals(seen)


class TestRotation:
    def test_credentials_that_say_they_expire_are_renewed_before_they_do(
            self, control_plane: ControlPlane, installation: Installation, operators: Operators, site: Site,
            tmp_path: Path) -> None:
        """An exec plugin that hands out a new token at each run, each ExecCredential saying it expires 40 s
        later: Kopf and the writer count it expired 30 s early and run the plugin again before their next
        request. The writer's ledger writes after that carry a later token than the start's, and no request
        is refused (every token stays valid: a 401 could only come from credentials used past their expiry)."""
        api = site.api
        site.setup(1, gated=False)
        tokens = [bound_token(api, site, f"{site.name}-expiring-{index}")[0] for index in range(12)]
        plugin = ExecPlugin.write(tmp_path, "\n".join(tokens), lifetime=40)
        kubeconfig = two_contexts(tmp_path / "exec.kubeconfig", control_plane, plugin.user)

        def writer_tokens(since: int) -> set[str]:
            """The tokens (by ID) of the ledger requests of the operator's own client (not Kopf's) since then."""
            events = from_operator(audit_events(control_plane, since))
            return {credential_of(event) for event in events if event["userAgent"].startswith("draledger/")
                    and (event.get("objectRef") or {}).get("resource") == "nodeallocatableledgers"}

        failures, begin = failed_authentications(control_plane), audit_offset(control_plane)
        operator = operators.start("--kubeconfig", str(kubeconfig), "--context", CONTEXT, "--node-selector",
                                   site.label, "--watch-timeout", "5", kubeconfig=tmp_path / "no-such.kubeconfig")
        wait_until(lambda: phase(api, site.nodes[0]) == "Ready", within=WITHIN, what="the first node's ledger")
        started = writer_tokens(begin)  # the start's: the priming and the first ledger's writes
        # the watches reconnect every 5 s (--watch-timeout): the first reconnect past the expiration logs in
        wait_until(lambda: operator.logged(REAUTHENTICATING), within=60, what="Kopf to log in again")
        offset = audit_offset(control_plane)
        written = site.add_node(f"{site.name}-renewed")  # created and written by the writer's own client
        wait_until(lambda: phase(api, written) == "Ready", within=WITHIN, what="a ledger written after the expiry")
        renewed = writer_tokens(offset)
        assert started
        assert renewed
        assert not started & renewed  # a later plugin run's token: loaded again before the write
        assert len(plugin.runs()) >= 3  # the start's, Kopf's, the writer's: a token each
        assert 0 == failed_authentications(control_plane) - failures  # renewed before, never after a 401

    def test_a_revoked_token_is_replaced_through_the_exec_plugin(
            self, control_plane: ControlPlane, installation: Installation, operators: Operators, site: Site,
            tmp_path: Path) -> None:
        """Old token revoked, new one in the plugin's file: the watches and the writes each get 401, run the
        plugin again and carry on with the new token; a node added afterwards gets its Ready ledger."""
        api = site.api
        site.setup(1, gated=False)
        old, old_secret = bound_token(api, site, f"{site.name}-old")
        new, _ = bound_token(api, site, f"{site.name}-new")
        plugin = ExecPlugin.write(tmp_path, old)
        kubeconfig = two_contexts(tmp_path / "exec.kubeconfig", control_plane, plugin.user)
        operator = operators.start("--kubeconfig", str(kubeconfig), "--context", CONTEXT, "--node-selector",
                                   site.label, "--watch-timeout", "5", kubeconfig=tmp_path / "no-such.kubeconfig")
        wait_until(lambda: phase(api, site.nodes[0]) == "Ready", within=WITHIN, what="the first node's ledger")
        started = len(plugin.runs())

        offset, failures = audit_offset(control_plane), failed_authentications(control_plane)
        plugin.token_file.write_text(new, encoding="utf-8")
        api.delete(old_secret)
        # kube-apiserver caches a token's successful authentication for 10 s: wait until it is refused
        wait_until(lambda: answer_to(control_plane, old) == 401, within=30, what="the old token to be refused")
        ours = 1  # the one 401 answered to the wait above
        written = site.add_node(f"{site.name}-written")  # a ledger to create and write: the operator's own client
        wait_until(lambda: phase(api, written) == "Ready", within=WITHIN, what="the ledger written after the 401")

        def rewatched() -> set[str]:
            events = from_operator(audit_events(control_plane, offset, OPENED))
            return WATCHED - {target(event)[1] for event in events
                              if event["verb"] == "watch" and credential_of(event) == jti(new)}

        wait_until(lambda: not rewatched(), within=WITHIN, what="every watch to be opened again with the new token")
        watched = site.add_node(f"{site.name}-watched")  # seen only by watches opened with the new token
        wait_until(lambda: phase(api, watched) == "Ready", within=WITHIN, what="the ledger of a node added later")

        events = from_operator(audit_events(control_plane, offset, OPENED))
        with_new = [event for event in events if credential_of(event) == jti(new)]
        writes = {target(event) for event in with_new if event["userAgent"].startswith("draledger/")}
        runs = plugin.runs()
        reauthentications = operator.logged(REAUTHENTICATING)
        assert [old] == runs[:started]  # the start: one run, for Kopf's first login and the writer alike
        assert {new} == set(runs[started:])
        assert 1 <= len(reauthentications) < len(runs) - started  # Kopf's re-logins, plus at least the writer's
        assert {("create", "nodeallocatableledgers", ""), ("patch", "nodeallocatableledgers", "status")} <= writes
        assert {"kopf"} == {event["userAgent"].split("/")[0] for event in with_new if event["verb"] == "watch"}
        assert failed_authentications(control_plane) - failures - ours >= 2  # a watch's 401 and a write's 401
        assert [] == refusals(events)  # no 403; a 401 is not audited (it names no user)
        assert {watched, written} <= {item["metadata"]["name"] for item in api.get(LEDGERS)["items"]}
