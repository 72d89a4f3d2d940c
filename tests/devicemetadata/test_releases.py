"""Upstream release profiles: the versions each Go helper writes and how it fills in CDI specs."""

from __future__ import annotations

import json

import pytest

from draledger.devicemetadata import V1ALPHA1, V1BETA1, MetadataInvalidError
from draledger.devicemetadata.codec import decode_stream, go_json
from draledger.devicemetadata.releases import LATEST, RELEASES, V0_36, V0_37, V0_38, UpstreamRelease
from tests.devicemetadata.streams import obj, stream
from tests.devicemetadata.upstream import GO_DIR, module_dir


class TestUpstreamRelease:
    """`UpstreamRelease` records, one per pinned k8s.io/dynamic-resource-allocation release."""

    @pytest.mark.parametrize("release", RELEASES, ids=[r.module_version for r in RELEASES])
    def test_each_release_has_a_go_module_pinned_to_it(self, release: UpstreamRelease) -> None:
        """go/v<major>.<minor>/go.mod requires exactly this release, and its program says so too."""
        directory = module_dir(release)
        assert f"\tk8s.io/dynamic-resource-allocation {release.module_version}\n" in (directory / "go.mod").read_text()
        assert f'const module = "{release.name}"' in (directory / "release.go").read_text()
        assert (directory / "go.sum").is_file()
        assert (directory / "vectors.go").resolve() == (GO_DIR / "shared" / "vectors.go").resolve()

    def test_the_newest_release_is_the_default(self) -> None:
        """v0.37.2, the newest final release, is the default; v0.38 (a pre-release) has a module and writes the same."""
        assert V0_37 is LATEST
        assert ("v0.36.3", "v0.37.2", "v0.38.0-beta.0") == tuple(r.module_version for r in RELEASES)
        assert (V0_37.known_versions, V0_37.default_versions) == (V0_38.known_versions, V0_38.default_versions)

    @pytest.mark.parametrize(
        ("release", "versions", "expected"),
        [
            pytest.param(V0_36, None, (V1ALPHA1,), id="v0.36-default"),
            pytest.param(V0_36, [V1BETA1, V1ALPHA1], (V1ALPHA1,), id="v0.36-skips-v1beta1"),
            pytest.param(V0_37, None, (V1BETA1, V1ALPHA1), id="v0.37-default"),
            pytest.param(V0_37, [V1BETA1], (V1BETA1,), id="v0.37-v1beta1-only"),
        ],
    )
    def test_selected_versions(
        self, release: UpstreamRelease, versions: list[str] | None, expected: tuple[str, ...]
    ) -> None:
        """The versions a helper of the release would encode, in order."""
        assert expected == release.select_versions(versions)

    @pytest.mark.parametrize(
        ("release", "device_name", "expected"),
        [
            pytest.param(V0_36, "c7e7b22e-5a1d_gpu", "0.5.0", id="v0.36-always-0.5.0"),
            pytest.param(V0_36, "4d1c2b3a-9f8e_gpu", "0.5.0", id="v0.36-digit"),
            pytest.param(V0_37, "c7e7b22e-5a1d_gpu", "0.3.0", id="v0.37-letter-0.3.0"),
            pytest.param(V0_37, "4d1c2b3a-9f8e_gpu", "0.5.0", id="v0.37-digit-0.5.0"),
        ],
    )
    def test_cdi_version(self, release: UpstreamRelease, device_name: str, expected: str) -> None:
        """v0.37 uses the CDI minimum: 0.5.0 only when the device name (the claim UID) starts with a digit."""
        assert expected == release.cdi_version(device_name)


class TestGoJson:
    """`go_json`: Go's json.MarshalIndent(v, "", "  ") for plain data."""

    def test_html_and_line_separators_are_escaped(self) -> None:
        """<, >, &, U+2028 and U+2029 are escaped as Go does; other non-ASCII text stays as is."""
        assert '{\n  "s": "\\u003ca\\u003e \\u0026 café\\u2028\\u2029"\n}' == go_json({"s": "<a> & café\u2028\u2029"})

    def test_output_is_still_the_same_json(self) -> None:
        """The escaping changes bytes, never the value."""
        value = {"s": "<a> & café\u2028\b\f\x01", "l": [], "d": {}, "n": -(2**63)}
        assert value == json.loads(go_json(value))

    def test_empty_containers_stay_on_one_line(self) -> None:
        """`[]` and `{}` are not expanded, and there is no trailing newline."""
        assert '{\n  "a": [],\n  "b": {}\n}' == go_json({"a": [], "b": {}})


class TestReleaseVersionSets:
    """Which versions each release decodes."""

    def test_v0_36_does_not_know_v1beta1(self) -> None:
        """A v0.36 reader skips v1beta1, so a v1beta1-only stream is unsupported there."""
        assert (V1ALPHA1,) == V0_36.known_versions
        with pytest.raises(MetadataInvalidError, match="no known apiVersion"):
            decode_stream(stream(obj(V1BETA1)), "metadata.json", known=V0_36.known_versions)
