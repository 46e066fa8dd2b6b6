"""DA HITs (paper 001, PROTOCOLS.md section 2): the Graham et al. degradation and HIT layout."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from services.da.hits import _Donors, build_hits, degrade, span_length, span_start

WORD = re.compile(r"s\d+d(\d+)p(\d+)w\d+")

EXPECTED = {1: 1, 2: 1, 3: 1, 4: 2, 5: 2, 6: 3, 7: 3, **{n: 4 for n in range(8, 15)}, **{n: 5 for n in range(15, 20)}}


@pytest.mark.parametrize("n", list(range(1, 26)) + [39, 40, 41, 100, 203])
def test_span_length_bins(n):
    assert span_length(n) == EXPECTED.get(n, n // 4)


def test_span_length_rejects_empty():
    with pytest.raises(ValueError):
        span_length(0)


@pytest.mark.parametrize("n,start", [(1, 0), (2, 1), (3, 1), (4, 1)])
def test_fixed_spans_for_short_outputs(n, start):
    # 1: the word; 2: the 2nd word; 3: the middle one; 4: the middle two
    for seed in range(20):
        assert span_start(n, random.Random(seed)) == start


@pytest.mark.parametrize("n", list(range(1, 26)) + [40, 101])
def test_degrade_replaces_one_span_with_donor_words(n):
    words = [f"w{i}" for i in range(n)]
    donor = [f"d{i}" for i in range(60)]  # another segment: no word in common
    starts = set()
    for seed in range(40):
        new, start, length = degrade(words, donor, random.Random(seed))
        assert length == span_length(n)
        assert len(new) == n
        assert new[:start] == words[:start] and new[start + length :] == words[start + length :]
        phrase = new[start : start + length]
        assert all(w.startswith("d") for w in phrase)
        d0 = donor.index(phrase[0])
        assert phrase == donor[d0 : d0 + length]  # a contiguous run of the donor
        if n >= 5:
            assert start >= 1 and start + length <= n - 1  # first and last word kept
            assert new[0] == words[0] and new[-1] == words[-1]
        starts.add(start)
    if n >= 8:
        assert len(starts) > 1  # the position is random
    assert degrade(words, donor, random.Random(3)) == degrade(words, donor, random.Random(3))


def test_degrade_short_donor_is_cycled():
    new, start, length = degrade([f"w{i}" for i in range(40)], ["a", "b"], random.Random(1))
    assert length == 10 and set(new[start : start + length]) <= {"a", "b"}


# -- HITs ----------------------------------------------------------------------------------
def corpus(docs=12, systems=4, seg_per_doc=9, seed=0):
    rng = random.Random(seed)
    items = []
    for d in range(docs):
        for p in range(1, seg_per_doc + 1):
            n = rng.randint(1, 30)
            for s in range(systems):
                items.append(
                    {
                        "row": len(items),
                        "doc_id": f"doc{d:02d}",
                        "position": p,
                        "segment_id": f"doc{d:02d}-{p}",
                        "system": f"sys{s}",
                        "source": f"src {d} {p}",
                        "reference": f"reference {d} {p}",
                        "output": " ".join(f"s{s}d{d}p{p}w{k}" for k in range(n)),
                    }
                )
    return items


@pytest.fixture(scope="module")
def items():
    return corpus()  # 432 items: 5 HITs of 80 + a padded 6th


@pytest.fixture(scope="module")
def hits(items):
    return build_hits(items, seed=11)


def test_hit_composition(items, hits):
    assert len(hits) == 6
    for hit in hits:
        assert [it["pos"] for it in hit] == list(range(1, 101))
        assert Counter(it["type"] for it in hit) == {"system": 80, "bad_reference": 10, "ask_again": 10}
        assert set(hit[0]) >= {
            "pos",
            "type",
            "row",
            "of_pos",
            "candidate",
            "reference",
            "system",
            "segment_id",
            "doc_id",
        }


def test_controls_follow_their_originals_by_min_gap(items, hits):
    by_row = {it["row"]: it for it in items}
    for hit in hits:
        originals = []
        for it in hit:
            if it["type"] in ("system", "reference"):
                assert it["of_pos"] is None
                continue
            orig = hit[it["of_pos"] - 1]
            assert orig["type"] == "system" and orig["row"] == it["row"]
            assert it["pos"] - it["of_pos"] >= 30
            assert (it["segment_id"], it["system"], it["doc_id"], it["reference"]) == (
                orig["segment_id"],
                orig["system"],
                orig["doc_id"],
                orig["reference"],
            )
            originals.append(it["of_pos"])
            if it["type"] == "ask_again":
                assert it["candidate"] == orig["candidate"] == by_row[it["row"]]["output"]
            else:
                old, new = orig["candidate"].split(), it["candidate"].split()
                start, length = it["span"]
                assert length == span_length(len(old)) and len(new) == len(old)
                assert new[:start] == old[:start] and new[start + length :] == old[start + length :]
                assert new[start : start + length] != old[start : start + length]
                doc, pos = by_row[it["row"]]["segment_id"][3:].split("-")
                for w in new[start : start + length]:  # words encode their doc and position
                    m = WORD.fullmatch(w)
                    assert m and (int(m[1]), int(m[2])) != (int(doc), int(pos))  # another segment
        assert len(originals) == len(set(originals))  # one control per original


def test_system_items_in_document_order(hits):
    for hit in hits:
        sys_items = [it for it in hit if it["type"] == "system" and not it["padding"]]
        # consecutive items of one (doc, system) run keep their positions increasing
        for a, b in zip(sys_items, sys_items[1:]):
            if (a["doc_id"], a["system"]) == (b["doc_id"], b["system"]):
                assert int(a["segment_id"].split("-")[1]) < int(b["segment_id"].split("-")[1])
        runs = [(it["doc_id"], it["system"]) for it in sys_items]
        blocks = [k for i, k in enumerate(runs) if i == 0 or runs[i - 1] != k]
        assert len(blocks) == len(set(blocks))  # each run in one block, not scattered


def test_every_item_used_once_before_reuse(items, hits):
    flat = [it["row"] for hit in hits for it in hit if it["type"] == "system"]
    assert sorted(flat[: len(items)]) == [it["row"] for it in items]
    last = hits[-1]
    pads = [it for it in last if it.get("padding")]
    assert len(pads) == 6 * 80 - len(items)
    rows_last = [it["row"] for it in last if it["type"] == "system"]
    assert len(rows_last) == len(set(rows_last))  # no system item twice in a HIT


def test_reproducible_and_seed_dependent(items, hits):
    assert build_hits(items, seed=11) == hits
    shuffled = list(items)
    random.Random(5).shuffle(shuffled)
    assert build_hits(shuffled, seed=11) == hits  # input order does not matter
    assert build_hits(items, seed=12) != hits


def test_reference_controls_take_control_slots(items):
    hits = build_hits(items, seed=3, reference_controls=4)
    for hit in hits:
        c = Counter(it["type"] for it in hit)
        assert c == {"system": 80, "bad_reference": 8, "ask_again": 8, "reference": 4}
        for it in hit:
            if it["type"] == "reference":
                assert it["candidate"] == it["reference"] and it["of_pos"] is None


def test_small_hits_and_odd_controls():
    items = corpus(docs=3, systems=3, seg_per_doc=4)  # 36 items, like the demo study
    hits = build_hits(items, seed=1, hit_size=24, n_controls=5, min_gap=8)
    assert len(hits) == 2
    for hit in hits:
        assert Counter(it["type"] for it in hit) == {"system": 19, "bad_reference": 3, "ask_again": 2}
        assert all(it["pos"] - it["of_pos"] >= 8 for it in hit if it["of_pos"])


def test_too_few_items_says_how_many():
    with pytest.raises(ValueError, match="got 40, need at least 80 distinct system outputs"):
        build_hits(corpus(docs=10, systems=1, seg_per_doc=4), seed=1)
    with pytest.raises(ValueError, match="at least 30 system items"):
        build_hits(corpus(), seed=1, hit_size=40, n_controls=20, min_gap=30)
    with pytest.raises(ValueError, match="reference_controls"):
        build_hits(corpus(), seed=1, n_controls=2, reference_controls=3)


def test_bad_reference_needs_two_segments():
    items = [
        {
            "row": i,
            "doc_id": "d",
            "position": 1,
            "segment_id": "only",
            "system": f"s{i}",
            "source": "x",
            "reference": "r",
            "output": "one two three",
        }
        for i in range(30)
    ]
    with pytest.raises(ValueError, match="two different segments"):
        build_hits(items, seed=1, hit_size=30, n_controls=4, min_gap=10)
    hits = build_hits(items, seed=1, hit_size=30, n_controls=2, min_gap=10, reference_controls=2)
    assert Counter(it["type"] for it in hits[0])["reference"] == 2


def test_donor_fallback_when_no_segment_is_long_enough():
    items = [
        {
            "row": i,
            "segment_id": "long" if i < 3 else f"seg{i}",
            "output": ("long " * 40).strip() if i < 3 else f"a{i} b{i}",
        }
        for i in range(30)
    ]
    donors = _Donors(items)
    words = donors.pick(random.Random(4), "long", 10)  # only "long" has 10 words: concatenate others
    assert len(words) >= 10 and "long" not in words
    assert donors.pick(random.Random(4), "seg5", 10) == ["long"] * 40
    hits = build_hits(
        [{**it, "doc_id": "d", "position": it["row"], "system": "s", "source": "x", "reference": "r"} for it in items],
        seed=2,
        hit_size=30,
        n_controls=6,
        min_gap=10,
    )
    for it in hits[0]:
        if it["type"] == "bad_reference" and it["segment_id"] == "long":
            start, length = it["span"]
            assert "long" not in it["candidate"].split()[start : start + length]
