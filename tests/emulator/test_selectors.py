"""Label and field selectors on lists and watches, including DELETED when an object stops matching."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from draledger.demo.emulator import ApiError, parse_selector

PODS = "/api/v1/namespaces/ns1/pods"


def pod(labels: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": fields.pop("name", "p"), "namespace": "ns1", "labels": labels or {}},
        "spec": {"nodeName": fields.pop("node", "")},
        "status": {"phase": fields.pop("phase", "Pending")},
    }


class TestLabelSelectorParsing:
    @pytest.mark.parametrize(
        ("selector", "labels", "expected"),
        [
            pytest.param("a=b", {"a": "b"}, True, id="equal"),
            pytest.param("a==b", {"a": "c"}, False, id="double-equal-mismatch"),
            pytest.param("a!=b", {}, True, id="not-equal-matches-absent"),
            pytest.param("a!=b", {"a": "b"}, False, id="not-equal"),
            pytest.param("a", {"a": ""}, True, id="exists"),
            pytest.param("!a", {"a": "x"}, False, id="not-exists"),
            pytest.param("a in (x, y)", {"a": "y"}, True, id="in"),
            pytest.param("a notin (x,y)", {}, True, id="notin-matches-absent"),
            pytest.param("a notin (x,y)", {"a": "x"}, False, id="notin"),
            pytest.param("a=b,c in (d),!e", {"a": "b", "c": "d"}, True, id="conjunction"),
            pytest.param("a=b,c in (d),!e", {"a": "b", "c": "d", "e": "1"}, False, id="conjunction-fails"),
        ],
    )
    async def test_matching(self, selector: str, labels: dict[str, str], expected: bool) -> None:
        """Each label requirement matches like k8s.io/apimachinery/pkg/labels."""
        assert expected == parse_selector("pods", selector, None).matches(pod(labels))

    @pytest.mark.parametrize(
        "selector", [pytest.param("a in (x", id="unbalanced"), pytest.param("=b", id="no-key")]
    )
    async def test_garbage_is_400(self, selector: str) -> None:
        """A selector that does not parse is a 400 BadRequest."""
        with pytest.raises(ApiError) as info:
            parse_selector("pods", selector, None)
        assert info.value.status == 400


class TestFieldSelectorParsing:
    @pytest.mark.parametrize(
        ("selector", "obj", "expected"),
        [
            pytest.param("metadata.name=p1", pod(name="p1"), True, id="name"),
            pytest.param("metadata.namespace!=ns1", pod(), False, id="namespace"),
            pytest.param(
                "spec.nodeName=n1,status.phase==Running", pod(node="n1", phase="Running"), True, id="and"
            ),
            pytest.param("spec.nodeName=", pod(), True, id="absent-is-empty"),
            pytest.param(
                "status.phase!=Succeeded,status.phase!=Failed", pod(phase="Failed"), False, id="not-terminal"
            ),
        ],
    )
    async def test_matching(self, selector: str, obj: dict[str, Any], expected: bool) -> None:
        """Field requirements compare the field's string value."""
        assert expected == parse_selector("pods", None, selector).matches(obj)

    async def test_unsupported_field_is_400(self) -> None:
        """Fields outside the resource's table are rejected like the apiserver does."""
        with pytest.raises(ApiError) as info:
            parse_selector("nodes", None, "spec.nodeName=n1")
        assert (info.value.status, info.value.message) == (400, "field label not supported: spec.nodeName")


class TestSelectorsOverHttp:
    async def test_list_with_selectors(self, api: Any, pod_body: Callable[..., dict[str, Any]]) -> None:
        """labelSelector and fieldSelector filter lists server-side."""
        await api.create(PODS, pod_body("a", labels={"app": "x"}, nodeName="n1"))
        await api.create(PODS, pod_body("b", labels={"app": "x"}, nodeName="n2"))
        await api.create(PODS, pod_body("c", labels={"app": "y"}, nodeName="n1"))
        by_label = await api.get("/api/v1/pods", labelSelector="app=x")
        by_both = await api.get(
            "/api/v1/pods", labelSelector="app in (x,y)", fieldSelector="spec.nodeName=n1"
        )
        assert [i["metadata"]["name"] for i in by_label["items"]] == ["a", "b"]
        assert [i["metadata"]["name"] for i in by_both["items"]] == ["a", "c"]

    async def test_bad_field_selector_over_http_is_400(self, api: Any) -> None:
        """An unsupported field selector answers 400 on list."""
        status, body = await api.call("GET", "/api/v1/nodes", params={"fieldSelector": "status.phase=x"})
        assert (status, body["reason"]) == (400, "BadRequest")

    async def test_watch_turns_leaving_into_deleted(
        self, api: Any, open_watch: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """A selector watch sees ADDED when an object starts matching and DELETED when it stops."""
        await api.create(PODS, pod_body("p1", labels={"app": "x"}))
        await api.create(PODS, pod_body("p2", labels={"app": "y"}))
        async with open_watch("/api/v1/pods", {"labelSelector": "app=x", "resourceVersion": "2"}) as stream:
            await api.merge(f"{PODS}/p2", {"metadata": {"labels": {"app": "x"}}})  # starts matching
            await api.merge(f"{PODS}/p1", {"metadata": {"labels": {"app": "z"}}})  # stops matching
            await api.merge(f"{PODS}/p1", {"metadata": {"labels": {"other": "1"}}})  # invisible
            await api.merge(f"{PODS}/p2", {"metadata": {"labels": {"more": "1"}}})  # still matching
            events = await stream.take(3)
        summary = [
            (e["type"], e["object"]["metadata"]["name"], e["object"]["metadata"]["resourceVersion"])
            for e in events
        ]
        assert summary == [("ADDED", "p2", "3"), ("DELETED", "p1", "4"), ("MODIFIED", "p2", "6")]
        assert events[1]["object"]["metadata"]["labels"]["app"] == "x"  # the last state that matched

    async def test_watch_with_field_selector(
        self, api: Any, open_watch: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """A fieldSelector watch (as kubectl uses for one name) filters the initial state and the changes."""
        await api.create(PODS, pod_body("p1"))
        await api.create(PODS, pod_body("p2"))
        async with open_watch(PODS, {"fieldSelector": "metadata.name=p2"}) as stream:
            initial = await stream.take(1)
            await api.merge(f"{PODS}/p1", {"metadata": {"labels": {"x": "1"}}})
            await api.merge(f"{PODS}/p2", {"metadata": {"labels": {"x": "1"}}})
            live = await stream.take(1)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in initial + live] == [
            ("ADDED", "p2"),
            ("MODIFIED", "p2"),
        ]
