"""Pure assignment functions (services.participation.assignment): literal data, no database."""

from __future__ import annotations

import copy
import math
from collections import Counter

import pytest

from services.common.seeded import order_key
from services.participation.assignment import sender_design

DOMAINS = ("health", "everyday")
SOURCES = ("natural", "synthetic")
CELLS = [(d, s) for d in DOMAINS for s in SOURCES]


def synthetic_corpus(per_cell: int = 10) -> list[dict]:
    """per_cell starters in every (domain, source) cell, ids st001..."""
    out, i = [], 0
    for d, s in CELLS:
        for _ in range(per_cell):
            i += 1
            out.append({"id": f"st{i:03d}", "domain": d, "source": s, "corpus": "c", "text": "t"})
    return out


# The demo study's corpus (assets/demo_study/starters.csv): 3 starters per cell.
DEMO_CORPUS = [
    {"id": "s01", "domain": "health", "source": "natural"},
    {"id": "s02", "domain": "health", "source": "natural"},
    {"id": "s03", "domain": "health", "source": "natural"},
    {"id": "s04", "domain": "health", "source": "synthetic"},
    {"id": "s05", "domain": "health", "source": "synthetic"},
    {"id": "s06", "domain": "health", "source": "synthetic"},
    {"id": "s07", "domain": "everyday", "source": "natural"},
    {"id": "s08", "domain": "everyday", "source": "natural"},
    {"id": "s09", "domain": "everyday", "source": "natural"},
    {"id": "s10", "domain": "everyday", "source": "synthetic"},
    {"id": "s11", "domain": "everyday", "source": "synthetic"},
    {"id": "s12", "domain": "everyday", "source": "synthetic"},
]

SYSTEMS = ["sysA", "sysB", "sysC", "sysD"]
CORPUS = synthetic_corpus()
CELL_OF = {s["id"]: (s["domain"], s["source"]) for s in CORPUS}


def spread(values) -> int:
    values = list(values)
    return max(values) - min(values)


@pytest.fixture(scope="module")
def designs() -> list[list[tuple[str, str]]]:
    return [sender_design(CORPUS, SYSTEMS, 10, 7, i) for i in range(32)]


# -- sender_design: each sender ----------------------------------------------------------


@pytest.mark.parametrize("index", range(30))
def test_each_sender_gets_distinct_balanced_starters(designs, index):
    design = designs[index]
    ids = [sid for sid, _ in design]
    assert len(design) == 10
    assert len(set(ids)) == 10
    assert set(ids) <= set(CELL_OF)
    assert all(system in SYSTEMS for _, system in design)
    domains = Counter(CELL_OF[s][0] for s in ids)
    sources = Counter(CELL_OF[s][1] for s in ids)
    assert domains == {"health": 5, "everyday": 5}
    assert sources == {"natural": 5, "synthetic": 5}
    cells = Counter(CELL_OF[s] for s in ids)
    assert spread(cells.get(c, 0) for c in CELLS) <= 1
    systems = Counter(system for _, system in design)
    assert spread(systems.get(s, 0) for s in SYSTEMS) <= 1


def test_starter_use_is_even_within_each_cell(designs):
    use = Counter(sid for design in designs[:30] for sid, _ in design)
    for cell in CELLS:
        ids = [s for s, c in CELL_OF.items() if c == cell]
        counts = [use[s] for s in ids]
        mean = sum(counts) / len(counts)
        assert all(math.floor(mean) <= n <= math.ceil(mean) for n in counts), (cell, counts)


def test_cell_system_totals_are_balanced_over_32_senders(designs):
    totals = Counter((CELL_OF[sid], system) for design in designs[:32] for sid, system in design)
    values = [totals.get((c, s), 0) for c in CELLS for s in SYSTEMS]
    assert spread(values) <= 1, values
    assert sum(values) == 320


def test_cell_totals_are_balanced_over_a_full_rotation(designs):
    for start in (0, 4, 8, 28):
        totals = Counter(CELL_OF[sid] for design in designs[start : start + 4] for sid, _ in design)
        assert spread(totals.get(c, 0) for c in CELLS) <= 1, (start, totals)


def test_same_seed_same_design_and_other_seed_differs(designs):
    again = [sender_design(CORPUS, SYSTEMS, 10, 7, i) for i in range(30)]
    assert again == designs[:30]
    other = [sender_design(CORPUS, SYSTEMS, 10, 8, i) for i in range(30)]
    assert other != designs[:30]


def test_design_index_is_a_pure_function():
    corpus = copy.deepcopy(CORPUS)
    first = sender_design(corpus, SYSTEMS, 10, 7, 17)
    for i in (0, 5, 29, 3):
        sender_design(corpus, SYSTEMS, 10, 7, i)
    assert sender_design(corpus, SYSTEMS, 10, 7, 17) == first
    assert corpus == CORPUS, "sender_design must not modify its input"
    # the order of the corpus rows does not matter
    assert sender_design(list(reversed(corpus)), SYSTEMS, 10, 7, 17) == first


def test_consecutive_senders_get_different_starters(designs):
    assert {s for s, _ in designs[0]} != {s for s, _ in designs[1]}


def test_n_larger_than_corpus_raises():
    with pytest.raises(ValueError):
        sender_design(CORPUS, SYSTEMS, 41, 7, 0)
    with pytest.raises(ValueError):
        sender_design(DEMO_CORPUS, ["a"], 13, 7, 0)


def test_whole_corpus_per_sender_is_allowed():
    design = sender_design(DEMO_CORPUS, ["a", "b"], 12, 7, 3)
    assert sorted(s for s, _ in design) == sorted(s["id"] for s in DEMO_CORPUS)


def test_empty_systems_raises():
    with pytest.raises(ValueError):
        sender_design(CORPUS, [], 10, 7, 0)


def test_unequal_cells_lend_their_shortfall():
    # one cell has a single starter: the others make up its quota
    corpus = [s for s in CORPUS if CELL_OF[s["id"]] != ("everyday", "synthetic")]
    corpus.append({"id": "lonely", "domain": "everyday", "source": "synthetic"})
    for i in range(12):
        design = sender_design(corpus, SYSTEMS, 12, 3, i)
        ids = [s for s, _ in design]
        assert len(ids) == 12 and len(set(ids)) == 12
        assert "lonely" in ids


# -- sender_design: the demo corpus -------------------------------------------------------

DEMO_CELL = {s["id"]: (s["domain"], s["source"]) for s in DEMO_CORPUS}


@pytest.mark.parametrize("index", range(8))
def test_demo_corpus_each_sender(index):
    design = sender_design(DEMO_CORPUS, ["cascade-beam", "cascade-greedy"], 4, 20261130, index)
    ids = [s for s, _ in design]
    assert len(set(ids)) == 4
    assert Counter(DEMO_CELL[s] for s in ids) == {c: 1 for c in CELLS}
    assert Counter(system for _, system in design) == {"cascade-beam": 2, "cascade-greedy": 2}


def test_demo_corpus_across_senders():
    systems = ["cascade-beam", "cascade-greedy"]
    designs = [sender_design(DEMO_CORPUS, systems, 4, 20261130, i) for i in range(24)]
    use = Counter(s for d in designs for s, _ in d)
    assert set(use.values()) == {8}  # 24 senders x 4 items over 12 starters
    totals = Counter((DEMO_CELL[s], sy) for d in designs[:8] for s, sy in d)
    assert [totals[(c, s)] for c in CELLS for s in systems] == [4] * 8
    assert designs == [sender_design(DEMO_CORPUS, systems, 4, 20261130, i) for i in range(24)]


@pytest.mark.parametrize("n", [3, 7])
def test_cells_balanced_across_senders_when_n_leaves_remainder_3(n):
    designs = [sender_design(CORPUS, SYSTEMS, n, 7, i) for i in range(16)]
    for start in range(0, 16, 4):
        totals = Counter(CELL_OF[s] for d in designs[start : start + 4] for s, _ in d)
        assert spread(totals.get(c, 0) for c in CELLS) <= 1, totals
    totals = Counter((CELL_OF[s], sy) for d in designs for s, sy in d)
    assert spread(totals.get((c, s), 0) for c in CELLS for s in SYSTEMS) <= 1


@pytest.mark.parametrize("n", [1, 2, 4, 5, 6, 8, 9, 10])
def test_cells_balanced_across_senders_for_other_n(n):
    designs = [sender_design(CORPUS, SYSTEMS, n, 7, i) for i in range(16)]
    totals = Counter((CELL_OF[s], sy) for d in designs for s, sy in d)
    assert spread(totals.get((c, s), 0) for c in CELLS for s in SYSTEMS) <= 1


# -- order ---------------------------------------------------------------------------------


def test_order_key_is_stable_and_in_unit_interval():
    a = order_key(7, 1, "item")
    assert a == order_key(7, 1, "item")
    assert 0.0 <= a < 1.0
    assert order_key(7, 1, "item") != order_key(8, 1, "item")


def test_order_key_shuffles_differently_per_participant():
    item_ids = [f"e{i}" for i in range(10)]
    orders = {pid: tuple(sorted(item_ids, key=lambda it: order_key(7, pid, it))) for pid in range(1, 6)}
    assert len(set(orders.values())) == len(orders)
    for pid in orders:  # reproducible
        assert tuple(sorted(item_ids, key=lambda it: order_key(7, pid, it))) == orders[pid]
    assert orders[1] != tuple(item_ids) or orders[2] != tuple(item_ids)
