"""Pure assignment functions (services.assignment): literal data, no database."""
from __future__ import annotations

import copy
import math
from collections import Counter

import pytest

from services.assignment import Candidate, OpenItem, allocate, order_key, sender_design

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
        totals = Counter(CELL_OF[sid] for design in designs[start:start + 4] for sid, _ in design)
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
        totals = Counter(CELL_OF[s] for d in designs[start:start + 4] for s, _ in d)
        assert spread(totals.get(c, 0) for c in CELLS) <= 1, totals
    totals = Counter((CELL_OF[s], sy) for d in designs for s, sy in d)
    assert spread(totals.get((c, s), 0) for c in CELLS for s in SYSTEMS) <= 1


@pytest.mark.parametrize("n", [1, 2, 4, 5, 6, 8, 9, 10])
def test_cells_balanced_across_senders_for_other_n(n):
    designs = [sender_design(CORPUS, SYSTEMS, n, 7, i) for i in range(16)]
    totals = Counter((CELL_OF[s], sy) for d in designs for s, sy in d)
    assert spread(totals.get((c, s), 0) for c in CELLS for s in SYSTEMS) <= 1


# -- allocate ------------------------------------------------------------------------------

def people(n: int, start: int = 1, load: int = 0) -> list[Candidate]:
    return [Candidate(i, load, frozenset({f"u{i}"})) for i in range(start, start + n)]


def items(n: int, prefix: str = "it") -> list[OpenItem]:
    return [OpenItem(f"{prefix}{i:02d}") for i in range(n)]


def apply(pairs, item_list, person_list):
    """Record the new assignments on the items and people, as the caller does."""
    by_item = {it.id: it for it in item_list}
    by_person = {p.id: p for p in person_list}
    for pid, iid in pairs:
        by_item[iid].assigned.add(pid)
        by_person[pid].load += 1


def test_redundancy_is_exactly_honoured():
    its, ps = items(12), people(5)
    pairs = allocate(its, ps, redundancy=2, capacity=100, seed=1)
    per_item = Counter(iid for _, iid in pairs)
    assert per_item == {it.id: 2 for it in its}
    assert len(set(pairs)) == len(pairs), "a person gets an item at most once"


def test_repeated_calls_never_exceed_redundancy():
    its, ps = items(10), people(6)
    for round_ in range(4):
        pairs = allocate(its, ps, redundancy=3, capacity=100, seed=1)
        if round_ > 0:
            assert pairs == []
        apply(pairs, its, ps)
    assert all(len(it.assigned) == 3 for it in its)


def test_partially_assigned_items_are_topped_up():
    ps = people(4)
    its = [OpenItem("a", {1}), OpenItem("b", {1, 2}), OpenItem("c", {1, 2, 3})]
    pairs = allocate(its, ps, redundancy=3, capacity=100, seed=5)
    per_item = Counter(iid for _, iid in pairs)
    assert per_item == {"a": 2, "b": 1}
    assert (1, "a") not in pairs and (1, "b") not in pairs and (2, "b") not in pairs


def test_capacity_is_never_exceeded():
    its, ps = items(10), people(3)
    pairs = allocate(its, ps, redundancy=2, capacity=3, seed=2)
    loads = Counter(pid for pid, _ in pairs)
    assert all(n <= 3 for n in loads.values())
    assert loads == {1: 3, 2: 3, 3: 3}  # all capacity used, some slots left open
    assert all(n <= 2 for n in Counter(iid for _, iid in pairs).values())


def test_existing_load_counts_towards_capacity():
    ps = [Candidate(1, 5), Candidate(2, 4), Candidate(3, 0)]
    pairs = allocate(items(3), ps, redundancy=1, capacity=5, seed=0)
    loads = Counter(pid for pid, _ in pairs)
    assert 1 not in loads
    assert loads[2] <= 1
    assert sum(loads.values()) == 3


def test_inputs_are_not_mutated():
    ps, its = people(3), items(4)
    allocate(its, ps, redundancy=2, capacity=10, seed=0)
    assert all(p.load == 0 for p in ps)
    assert all(not it.assigned for it in its)


def test_nobody_judges_their_own_work():
    ps = people(6)
    # item k was produced by person k (and person 6 took part in every even one)
    its = [OpenItem(f"x{k}", produced_by=frozenset({f"u{k}"} | ({"u6"} if k % 2 == 0 else set())))
           for k in range(1, 7)]
    pairs = allocate(its, ps, redundancy=3, capacity=100, seed=11)
    identities = {p.id: p.identities for p in ps}
    produced = {it.id: it.produced_by for it in its}
    for pid, iid in pairs:
        assert not (identities[pid] & produced[iid]), (pid, iid)
    assert Counter(iid for _, iid in pairs) == {it.id: 3 for it in its}


def test_shared_identities_block_assignment():
    # a person known under two identities (e.g. a Prolific id) cannot judge work of either
    ps = [Candidate(1, 0, frozenset({"u1", "prolific:abc"})), Candidate(2, 0, frozenset({"u2"}))]
    its = [OpenItem("x", produced_by=frozenset({"prolific:abc"}))]
    assert allocate(its, ps, redundancy=2, capacity=10, seed=0) == [(2, "x")]


def test_loads_are_balanced_when_everyone_is_eligible():
    for n_items, n_people, r in [(10, 4, 1), (10, 4, 2), (17, 5, 3), (7, 7, 7), (30, 8, 2)]:
        its, ps = items(n_items), people(n_people)
        pairs = allocate(its, ps, redundancy=r, capacity=1000, seed=3)
        loads = Counter(pid for pid, _ in pairs)
        assert spread(loads.get(p.id, 0) for p in ps) <= 1, (n_items, n_people, r, loads)
        assert sum(loads.values()) == n_items * r


def test_least_loaded_people_are_served_first():
    ps = [Candidate(1, 4), Candidate(2, 0), Candidate(3, 2)]
    pairs = allocate(items(2), ps, redundancy=1, capacity=100, seed=0)
    assert Counter(pid for pid, _ in pairs) == {2: 2}


def test_unfilled_items_keep_open_slots_for_newcomers():
    its, ps = items(6), people(2)
    pairs = allocate(its, ps, redundancy=2, capacity=3, seed=4)
    apply(pairs, its, ps)
    assert sum(len(it.assigned) for it in its) == 6  # 2 people x capacity 3
    assert any(len(it.assigned) < 2 for it in its)

    newcomers = people(2, start=10)
    everyone = ps + newcomers
    pairs = allocate(its, everyone, redundancy=2, capacity=3, seed=4)
    assert all(pid in (10, 11) for pid, _ in pairs), "the old people are full"
    apply(pairs, its, everyone)
    assert all(len(it.assigned) == 2 for it in its)
    assert all(p.load <= 3 for p in everyone)
    assert allocate(its, everyone, redundancy=2, capacity=3, seed=4) == []


def test_item_only_its_producer_could_take_stays_open():
    ps = people(1)
    its = [OpenItem("mine", produced_by=frozenset({"u1"})), OpenItem("other")]
    pairs = allocate(its, ps, redundancy=1, capacity=10, seed=0)
    assert pairs == [(1, "other")]
    later = allocate(its, ps + people(1, start=2), redundancy=1, capacity=10, seed=0)
    assert (2, "mine") in later


def test_allocate_is_deterministic_for_a_seed():
    def run(seed):
        return allocate(items(20), people(7), redundancy=2, capacity=6, seed=seed)
    assert run(9) == run(9)
    assert len({tuple(run(s)) for s in range(8)}) > 1, "the seed breaks ties"


def test_allocate_with_nothing_to_do():
    assert allocate([], people(3), 2, 5, 0) == []
    assert allocate(items(3), [], 2, 5, 0) == []


# -- order_key -----------------------------------------------------------------------------

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
