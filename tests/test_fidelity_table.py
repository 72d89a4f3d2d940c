"""The agreement table of docs/accounting.md against the generator it reports on (no control plane needed)."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.realcluster.fidelity import table
from tests.realcluster.fidelity.features import FEATURES, RELEASES_OF, occurs_in
from tests.realcluster.fidelity.generating import generate
from tests.realcluster.releases import RELEASES
from tests.realcluster.test_realcluster_fidelity import SEEDS


def made(release: str) -> Counter[str]:
    """The features the generator gives the seeds a run covers."""
    counts: Counter[str] = Counter()
    for seed in range(SEEDS):
        counts.update(generate(seed, RELEASES[release]).features)
    return counts


class TestTheTableInTheDocs:
    def test_names_exactly_the_generators_features(self) -> None:
        """Its rows are all cases, then every feature of features.FEATURES in order; its columns the releases."""
        cells = table.cells(table.block(table.DOC.read_text(encoding="utf-8")))
        assert [table.ALL, *FEATURES] == list(cells)
        assert all(list(table.RELEASES) == list(row) for row in cells.values())

    def test_every_filled_cell_reads_agreeing_over_cases(self) -> None:
        """A cell is ``agreeing/cases`` with agreeing <= cases, ``n/a`` exactly where a release cannot have the
        feature, or ``-`` before a run filled it."""
        cells = table.cells(table.block(table.DOC.read_text(encoding="utf-8")))
        for row, by_release in cells.items():
            for release, cell in by_release.items():
                if cell == "-":
                    continue
                if row != table.ALL and not occurs_in(row, release):
                    assert (row, release, "n/a") == (row, release, cell)
                    continue
                agreeing, cases = (int(n) for n in cell.split("/"))
                assert agreeing <= cases, (row, release, cell)


class TestTheGenerator:
    @pytest.mark.parametrize("release", list(RELEASES))
    def test_makes_only_listed_features_and_every_one_that_applies(self, release: str) -> None:
        """Over the seeds of a run, every feature the generator names is a row of the table, and every row that
        applies to the release is made at least once (a row of zeros would claim nothing)."""
        counts = made(release)
        assert set() == set(counts) - set(FEATURES)
        assert [] == [f for f in FEATURES if occurs_in(f, release) and not counts[f]]

    def test_releases_of_names_only_features(self) -> None:
        """A feature limited to some releases is a feature."""
        assert set() == set(RELEASES_OF) - set(FEATURES)


class TestUpdate:
    def test_replaces_one_release_and_keeps_the_others(self) -> None:
        """Writing v1.37's column leaves v1.36's cells and seeds as they were."""
        page = "intro\n<!-- agreement:begin -->\nold\n<!-- agreement:end -->\nrest\n"
        first = table.update(page, "v1.36", {table.ALL: (3, 3), FEATURES[0]: (2, 2)}, "0-2")
        second = table.update(first, "v1.37", {table.ALL: (3, 2), FEATURES[0]: (3, 2)}, "0-2")
        cells = table.cells(table.block(second))
        assert ({"v1.36": "3/3", "v1.37": "2/3", "v1.38": "-"}, {"v1.36": "2/2", "v1.37": "2/3", "v1.38": "-"}) == (
            cells[table.ALL], cells[FEATURES[0]])
        assert "Seeds: v1.36 0-2; v1.37 0-2\n" in second
        assert (second.startswith("intro\n"), second.endswith("rest\n")) == (True, True)

    def test_a_feature_without_cases_reads_na_where_it_cannot_occur(self) -> None:
        """v1.36 has no overhead: its cell says n/a, not 0/0."""
        updated = table.update("<!-- agreement:begin -->\n<!-- agreement:end -->", "v1.36", {table.ALL: (1, 1)}, "0")
        assert "n/a" == table.cells(table.block(updated))["overhead-only devices"]["v1.36"]
