"""Direct-assessment HITs (paper 001): pure functions, no I/O.

- span_length / degrade: the Graham et al. degradation behind bad_reference items. A span of
  the MT output is replaced by a phrase of the same length taken from another segment; the
  span length depends on the output length n in words (whitespace tokens):
      n = 1 -> 1 (the word)      2 -> 1 (2nd word)     3 -> 1 (middle)     4 -> 2 (middle two)
      5 -> 2    6-7 -> 3    8-14 -> 4    15-19 -> 5    >= 20 -> floor(n / 4)
  For n >= 5 the span starts at a random position that keeps the first and the last word.
- sample_documents: paper 001 section 2.1's subset, whole documents drawn at random within each
  domain until the domain has `per_domain` segments, in their corpus order (every system's
  outputs of a drawn document come along).
- build_hits: HITs of hit_size items: hit_size - n_controls system outputs in document order
  and n_controls quality controls at random positions, each control at least min_gap
  positions after its original (never before it):
      bad_reference  a degraded copy of a system item of the same HIT (donor: another segment)
      ask_again      an exact repeat of a system item of the same HIT
      reference      (optional, reference_controls of the n_controls slots) the human
                     reference shown as the candidate, as WMT does
  The remaining controls are split evenly, bad_reference getting the odd one.

Words are whitespace tokens (str.split) and a degraded output is re-joined with single spaces.
Scripts written without spaces (Chinese, Japanese, Thai) therefore have n = 1 and their whole
output is replaced by one donor "word": tokenise them before calling these functions if that
matters for a study.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Hashable

from services.common.degradation import span_length, span_start
from services.common.seeded import seeded_rng

SYSTEM, BAD_REFERENCE, ASK_AGAIN, REFERENCE = "system", "bad_reference", "ask_again", "reference"
CONTROL_TYPES = (BAD_REFERENCE, ASK_AGAIN, REFERENCE)
REFERENCE_SYSTEM = "reference"  # the "system" of a reference control item
_LAYOUT_TRIES = 200  # random control layouts tried before the always-valid one
_DONOR_TRIES = 30  # random donors tried for a degradation that changes the text


# -- paper 001's domain-balanced sample ------------------------------------------------------
def sample_documents(items: list[dict], per_domain: int, seed) -> tuple[list[dict], dict[str, dict]]:
    """The items of whole documents drawn at random (seeded) within each domain until the
    domain holds at least `per_domain` segments ("to ensure balanced domain representation while
    preserving document order, a subset of documents was randomly sampled from each domain",
    paper 001 section 2.1; its Table 1: 462-515 segments a domain). A segment is a segment_id
    (its outputs by every system count once); a document is drawn whole, so a domain may end a
    little above the target, and a domain smaller than it is taken whole. Returns the kept items
    in their original order and, per domain, the documents and segments it had and kept."""
    segments: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))  # domain -> doc -> segment ids
    for it in items:
        segments[str(it.get("domain") or "")][str(it["doc_id"])].add(str(it["segment_id"]))
    kept_docs: set[tuple[str, str]] = set()
    report = {}
    for domain in sorted(segments):
        docs = sorted(segments[domain])
        seeded_rng("da-sample", seed, domain).shuffle(docs)
        n = 0
        for doc in docs:
            if n >= per_domain:
                break
            kept_docs.add((domain, doc))
            n += len(segments[domain][doc])
        report[domain] = {
            "documents": len(docs),
            "segments": sum(len(v) for v in segments[domain].values()),
            "documents_kept": sum(1 for d, _ in kept_docs if d == domain),
            "segments_kept": n,
        }
    kept = [it for it in items if (str(it.get("domain") or ""), str(it["doc_id"])) in kept_docs]
    return kept, report


# -- the Graham et al. degradation (span_length, span_start: services/common/degradation.py) ------
def degrade(words: list[str], donor: list[str], rng) -> tuple[list[str], int, int]:
    """(degraded words, start, length): words[start:start+length] replaced by a contiguous run of
    the same length from donor (the words of another segment), at a random donor position.

    rng is a random.Random (randint/randrange). A donor shorter than the span is cycled
    (wrap-around) to the span length; build_hits never relies on that (it picks a donor long
    enough, or concatenates several other segments when none is).
    """
    words = list(words)
    donor = list(donor)
    n = len(words)
    length = span_length(n)
    if not donor:
        raise ValueError("the donor segment has no words")
    start = span_start(n, rng)
    if len(donor) >= length:
        d = rng.randrange(len(donor) - length + 1)
        phrase = donor[d : d + length]
    else:
        d = rng.randrange(len(donor))
        phrase = [donor[(d + i) % len(donor)] for i in range(length)]
    return words[:start] + phrase + words[start + length :], start, length


# -- HITs ------------------------------------------------------------------------------------
def _sort_key(v) -> tuple:
    """Numbers before strings, numbers numerically: positions may arrive as "10" or 10."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (0, v, "")
    s = str(v)
    try:
        return (0, float(s), "")
    except ValueError:
        return (1, 0, s)


def _check_params(hit_size: int, n_controls: int, min_gap: int, reference_controls: int) -> tuple[int, int, int, int]:
    for name, v in (
        ("hit_size", hit_size),
        ("n_controls", n_controls),
        ("min_gap", min_gap),
        ("reference_controls", reference_controls),
    ):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
    if hit_size < 1:
        raise ValueError("hit_size must be at least 1")
    if reference_controls > n_controls:
        raise ValueError(
            f"reference_controls ({reference_controls}) take slots from the controls, "
            f"so they cannot exceed n_controls ({n_controls})"
        )
    if n_controls >= hit_size:
        raise ValueError(f"n_controls ({n_controls}) must leave room for system items in a HIT of {hit_size}")
    rest = n_controls - reference_controls
    n_bad, n_ask = (rest + 1) // 2, rest // 2
    n_sys = hit_size - n_controls
    n_gap = n_bad + n_ask
    if n_gap:
        need = max(min_gap, n_gap)
        if n_sys < need:
            raise ValueError(
                f"a HIT of {hit_size} items with {n_controls} controls has {n_sys} system items, but "
                f"{n_gap} bad_reference/ask_again controls each at least min_gap={min_gap} positions after "
                f"a distinct original need at least {need} system items per HIT "
                f"(hit_size >= {need + n_controls}, fewer controls or a smaller min_gap)"
            )
    return n_sys, n_bad, n_ask, reference_controls


def _validate_items(items: list[dict]) -> None:
    seen = set()
    for it in items:
        missing = [
            k for k in ("row", "doc_id", "position", "segment_id", "system", "reference", "output") if k not in it
        ]
        if missing:
            raise ValueError(f"DA item {it.get('row', '?')!r} lacks {', '.join(missing)}")
        if it["row"] in seen:
            raise ValueError(f"DA items repeat row {it['row']!r}: rows must be unique")
        seen.add(it["row"])
        if not str(it["output"] or "").strip():
            raise ValueError(
                f"DA item row {it['row']!r} (segment {it['segment_id']!r}, system "
                f"{it['system']!r}) has an empty output: there is nothing to show or degrade"
            )


def _runs(items: list[dict]) -> list[list[dict]]:
    """One run per (document, system): that system's outputs for the document in order."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for it in items:
        groups[(_sort_key(it["doc_id"]), _sort_key(it["system"]))].append(it)
    return [
        sorted(g, key=lambda it: (_sort_key(it["position"]), _sort_key(it["row"]))) for _, g in sorted(groups.items())
    ]


def _layout(rng, hit_size: int, n_sys: int, types: list[str], min_gap: int) -> tuple[dict[int, str], list[int]]:
    """Control slots {pos: type} (1-based) and the system slots, such that the controls needing
    an original (bad_reference, ask_again) can each get a distinct earlier system slot at least
    min_gap before them (checked in position order: the eligible sets are nested, so Hall's
    condition reduces to "the i-th such control sees >= i system slots")."""
    gap_types = [t for t in types if t != REFERENCE]
    ref_types = [t for t in types if t == REFERENCE]
    for attempt in range(_LAYOUT_TRIES + 1):
        if attempt < _LAYOUT_TRIES:
            gap_pos = rng.sample(range(min_gap + 1, hit_size + 1), len(gap_types)) if gap_types else []
            free = sorted(set(range(1, hit_size + 1)) - set(gap_pos))
            ref_pos = rng.sample(free, len(ref_types)) if ref_types else []
        else:  # always valid (_check_params): controls at the end
            gap_pos = list(range(n_sys + 1, n_sys + 1 + len(gap_types)))
            ref_pos = list(range(n_sys + 1 + len(gap_types), hit_size + 1))
        control = set(gap_pos) | set(ref_pos)
        sys_slots = [p for p in range(1, hit_size + 1) if p not in control]
        ok = all(bisect.bisect_right(sys_slots, p - min_gap) >= i for i, p in enumerate(sorted(gap_pos), start=1))
        if ok:
            shuffled = list(gap_types)
            rng.shuffle(shuffled)
            slots = dict(zip(sorted(gap_pos), shuffled))
            slots.update({p: REFERENCE for p in ref_pos})
            return slots, sys_slots
    raise AssertionError("unreachable: the end layout satisfies the gap")  # pragma: no cover


class _Donors:
    """Outputs of the whole campaign by length, to draw degradation donors from."""

    def __init__(self, items: list[dict]):
        pool = sorted(
            ((len(it["output"].split()), _sort_key(it["row"]), it) for it in items), key=lambda t: (t[0], t[1])
        )
        self.lengths = [t[0] for t in pool]
        self.items = [t[2] for t in pool]

    def pick(self, rng, segment_id: Hashable, length: int) -> list[str]:
        """Words of a random output of another segment with >= length words; when no single one
        is long enough, the outputs of other segments concatenated in a random order."""
        lo = bisect.bisect_left(self.lengths, length)
        cand = self.items[lo:]
        for _ in range(_DONOR_TRIES if cand else 0):
            it = rng.choice(cand)
            if it["segment_id"] != segment_id:
                return it["output"].split()
        others = [it for it in cand if it["segment_id"] != segment_id]
        if others:
            return rng.choice(others)["output"].split()
        others = [it for it in self.items if it["segment_id"] != segment_id]
        if not others:
            raise ValueError(
                "bad_reference controls need outputs of at least two different segments "
                "(the replacement phrase comes from another segment)"
            )
        rng.shuffle(others)
        words: list[str] = []
        for it in others:
            words += it["output"].split()
            if len(words) >= length:
                break
        return words


def _degraded(rng, donors: _Donors, item: dict) -> tuple[str, int, int]:
    words = item["output"].split()
    length = span_length(len(words))
    for _ in range(_DONOR_TRIES):
        new, start, length = degrade(words, donors.pick(rng, item["segment_id"], length), rng)
        if new != words:
            break
    return " ".join(new), start, length  # identical only if every donor tried repeated the span


def _entry(pos: int, kind: str, item: dict, of_pos, candidate: str, padding: bool = False, span=None) -> dict:
    return {
        "pos": pos,
        "type": kind,
        "row": item["row"],
        "of_pos": of_pos,
        "candidate": candidate,
        "reference": item["reference"],
        "system": REFERENCE_SYSTEM if kind == REFERENCE else item["system"],
        "segment_id": item["segment_id"],
        "doc_id": item["doc_id"],
        "padding": padding,
        "span": span,
    }


def build_hits(
    items: list[dict], seed, hit_size: int = 100, n_controls: int = 20, min_gap: int = 30, reference_controls: int = 0
) -> list[list[dict]]:
    """HITs of hit_size items from candidate system outputs.

    items: {"row", "doc_id", "position", "segment_id", "system", "source", "reference", "output"}
    (rows unique, outputs non-empty). Returns a list of HITs, each a list of hit_size dicts in
    position order:
        {"pos": 1..hit_size, "type": "system" | "bad_reference" | "ask_again" | "reference",
         "row": the original item's row, "of_pos": the original's pos for bad_reference and
         ask_again (None for system and reference), "candidate": the text shown as the MT output,
         "reference": the reference text, "system" ("reference" for reference items),
         "segment_id", "doc_id", "padding": True for a system item reused to fill the last HIT,
         "span": [start, length] of the replaced words for bad_reference (else None)}

    System items: one run per (document, system) in position order; runs in a seeded random
    order, cut into HITs of hit_size - n_controls (a long run continues at the start of the
    next HIT). Every item is used once before any is reused; the last HIT is filled up with
    runs of items not already in it (padding=True), so every HIT is full.
    The result depends only on the items (not their order) and the seed.
    """
    n_sys, n_bad, n_ask, n_ref = _check_params(hit_size, n_controls, min_gap, reference_controls)
    items = list(items)
    _validate_items(items)
    if len(items) < n_sys:
        raise ValueError(
            f"too few DA items for one HIT: got {len(items)}, need at least {n_sys} distinct system "
            f"outputs (a HIT of {hit_size} items has {n_controls} controls, and every bad_reference or "
            f"ask_again control repeats a system item of the same HIT at least {min_gap} positions earlier)"
        )
    rng = seeded_rng("da-hits", seed, hit_size, n_controls, min_gap, reference_controls)
    runs = _runs(items)
    rng.shuffle(runs)
    sequence = [it for run in runs for it in run]
    chunks = [[(it, False) for it in sequence[i : i + n_sys]] for i in range(0, len(sequence), n_sys)]
    pad_count = n_sys - len(chunks[-1])
    if pad_count:
        in_last = {it["row"] for it, _ in chunks[-1]}
        pad_runs = list(runs)
        rng.shuffle(pad_runs)
        padding = [it for run in pad_runs for it in run if it["row"] not in in_last][:pad_count]
        chunks[-1] += [(it, True) for it in padding]

    donors = _Donors(items) if n_bad else None
    types = [BAD_REFERENCE] * n_bad + [ASK_AGAIN] * n_ask + [REFERENCE] * n_ref
    hits = []
    for chunk in chunks:
        slots, sys_slots = _layout(rng, hit_size, n_sys, types, min_gap)
        hit: dict[int, dict] = {}
        by_row = {it["row"]: it for it, _ in chunk}
        for p, (it, pad) in zip(sys_slots, chunk):
            hit[p] = _entry(p, SYSTEM, it, None, it["output"], padding=pad)
        used: set[int] = set()
        for p in sorted(slots):
            kind = slots[p]
            if kind == REFERENCE:
                continue
            eligible = [q for q in sys_slots[: bisect.bisect_right(sys_slots, p - min_gap)] if q not in used]
            q = rng.choice(eligible)
            used.add(q)
            orig = hit[q]
            src = by_row[orig["row"]]
            if kind == ASK_AGAIN:
                hit[p] = _entry(p, ASK_AGAIN, src, q, orig["candidate"])
            else:
                assert donors is not None  # a bad-reference slot means n_bad > 0
                text, start, length = _degraded(rng, donors, src)
                hit[p] = _entry(p, BAD_REFERENCE, src, q, text, span=[start, length])
        ref_slots = sorted(p for p, k in slots.items() if k == REFERENCE)
        if ref_slots:
            # distinct segments where the HIT has enough of them
            by_segment: dict[str, int] = {}
            for q in sys_slots:
                by_segment.setdefault(hit[q]["segment_id"], q)
            pool = list(by_segment.values())
            rng.shuffle(pool)
            for i, p in enumerate(ref_slots):
                q = pool[i % len(pool)]
                src = by_row[hit[q]["row"]]
                hit[p] = _entry(p, REFERENCE, src, None, src["reference"])
        hits.append([hit[p] for p in range(1, hit_size + 1)])
    return hits


def hit_summary(hit: list[dict]) -> dict:
    """Counts per type and the smallest control-to-original gap (None without such controls)."""
    counts = {t: 0 for t in (SYSTEM, *CONTROL_TYPES)}
    for it in hit:
        counts[it["type"]] += 1
    gaps = [it["pos"] - it["of_pos"] for it in hit if it["of_pos"] is not None]
    return {**counts, "min_gap": min(gaps) if gaps else None, "padding": sum(1 for it in hit if it.get("padding"))}


__all__ = [
    "span_length",
    "span_start",
    "degrade",
    "build_hits",
    "hit_summary",
    "SYSTEM",
    "BAD_REFERENCE",
    "ASK_AGAIN",
    "REFERENCE",
    "CONTROL_TYPES",
]
