"""The mutating admission webhook over real HTTPS: AdmissionReview in, JSON patch out."""

from __future__ import annotations

import base64
import json
import pathlib
import socket
import ssl
from typing import Any

import aiohttp
import pytest

from draledger.demo.emulator import serve_emulator
from tests.integration.harness import eventually, running

GATE = {"name": "draledger.dev/ledger-ready"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def review(pod: dict[str, Any], namespace: str = "team-a", operation: str = "CREATE") -> dict[str, Any]:
    pod = {**pod, "metadata": {**pod["metadata"], "namespace": namespace}}  # the API server sets it so
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": namespace,
            "operation": operation,
            "userInfo": {"username": "alice"},
            "object": pod,
            "oldObject": None,
            "dryRun": False,
            "options": {},
        },
    }


def pod(claims: bool = True, gates: list[dict[str, str]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
    if claims:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]
        spec["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    if gates is not None:
        spec["schedulingGates"] = gates
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a"}, "spec": spec}


def applied(response: dict[str, Any], original: dict[str, Any]) -> dict[str, Any]:
    import jsonpatch

    answer = response["response"]
    assert answer["allowed"] is True
    if "patch" not in answer:
        return original
    assert "JSONPatch" == answer["patchType"]
    ops = json.loads(base64.b64decode(answer["patch"]))
    return jsonpatch.apply_patch(original, ops)  # type: ignore[no-any-return]


class TestWebhook:
    @pytest.mark.parametrize(
        ("namespace", "body", "gates", "result"),
        [
            pytest.param("team-a", pod(), [GATE], "gated", id="claims-get-the-gate"),
            pytest.param("team-a", pod(claims=False), None, "no-claims", id="no-claims-untouched"),
            pytest.param("team-a", pod(gates=[{"name": "other.io/x"}]), [{"name": "other.io/x"}, GATE], "gated",
                         id="existing-gates-kept"),
            pytest.param("team-a", pod(gates=[GATE]), [GATE], "already-gated", id="already-gated-once"),
            pytest.param("kube-system", pod(), None, "excluded-namespace", id="excluded-namespace"),
            pytest.param("team-a", {**pod(), "spec": {**pod()["spec"], "nodeName": "n1"}}, None, "already-bound",
                         id="created-bound"),
        ],
    )
    async def test_admission(
        self, cert_dir: pathlib.Path, namespace: str, body: dict[str, Any], gates: list[dict[str, str]] | None,
        result: str,
    ) -> None:
        """Pods with claims get our gate appended once; others and excluded namespaces are untouched; each
        answer is counted by what was done (``draledger_webhook_admissions_total``)."""
        port = free_port()
        context = ssl.create_default_context(cafile=str(cert_dir / "tls.crt"))
        async with (
            serve_emulator() as (_, url),
            running(url, webhook=True, webhook_host="127.0.0.1", webhook_port=port,
                    webhook_cert_dir=str(cert_dir)) as operator,
            aiohttp.ClientSession() as session,
        ):

            async def call() -> Any:
                try:
                    async with session.post(
                        f"https://127.0.0.1:{port}/gate-pods", ssl=context, json=review(body, namespace)
                    ) as answer:
                        return await answer.json() if answer.status == 200 else None
                except aiohttp.ClientConnectionError:
                    return None

            response = await eventually(call, what="the webhook to answer")
            counted = operator.metrics.registry.get_sample_value(
                "draledger_webhook_admissions_total", {"result": result})
        assert gates == applied(response, body)["spec"].get("schedulingGates")
        assert 1 == counted

    @pytest.mark.parametrize(
        "payload",
        [
            pytest.param(b"{not json", id="truncated"),
            pytest.param(b'"a string"', id="not-an-object"),
            pytest.param(b"{}", id="no-request"),
        ],
    )
    async def test_malformed_requests_get_a_4xx_and_the_server_survives(
        self, cert_dir: pathlib.Path, payload: bytes
    ) -> None:
        """A malformed AdmissionReview gets a 400-class answer, and the next valid one still works."""
        port = free_port()
        context = ssl.create_default_context(cafile=str(cert_dir / "tls.crt"))
        async with (
            serve_emulator() as (_, url),
            running(url, webhook=True, webhook_host="127.0.0.1", webhook_port=port, webhook_cert_dir=str(cert_dir)),
            aiohttp.ClientSession() as session,
        ):

            async def bad() -> int | None:
                try:
                    async with session.post(
                        f"https://127.0.0.1:{port}/gate-pods",
                        ssl=context,
                        data=payload,
                        headers={"Content-Type": "application/json"},
                    ) as answer:
                        return answer.status
                except aiohttp.ClientConnectionError:
                    return None

            status = await eventually(bad, what="the webhook to answer")
            assert 400 <= status < 500
            async with session.post(f"https://127.0.0.1:{port}/gate-pods", ssl=context, json=review(pod())) as answer:
                assert 200 == answer.status
                assert [GATE] == applied(await answer.json(), pod())["spec"]["schedulingGates"]
