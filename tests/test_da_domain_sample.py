"""Paper 001 section 2.1 (issue 50, point 6): "to ensure balanced domain representation while
preserving document order, a subset of documents was randomly sampled from each domain", as the
DA campaign's [da] segments_per_domain. Checked against the definition: whole documents, every
system's outputs of a kept document, each domain filled to the target by the fewest documents
its seeded order gives, the corpus order kept, the same sample on every import."""

from __future__ import annotations

import csv
import shutil
from collections import defaultdict

import pytest

from harness.demo import DEMO_ASSETS
from services.da.hits import sample_documents
from services.setup.importer import import_study
from services.study.files import StudyValidationError
from storage import open_database

# (domain, doc, segments): documents of very different lengths, as Table 1's domains
DOCS = [("news", f"n{i}", 3 + i % 5) for i in range(12)] + [("social", f"s{i}", 10 + 3 * (i % 3)) for i in range(8)]
DOCS += [("ecommerce", "e0", 4)]  # a domain smaller than the target: taken whole
SYSTEMS = ("sysA", "sysB")


def items() -> list[dict]:
    out = []
    for domain, doc, n in DOCS:
        for k in range(1, n + 1):
            for system in SYSTEMS:
                out.append(
                    {"segment_id": f"{doc}-{k}", "doc_id": doc, "position": k, "domain": domain, "system": system}
                )
    return out


def test_whole_documents_per_domain_in_corpus_order():
    corpus = items()
    kept, report = sample_documents(corpus, 20, seed=7)
    docs = defaultdict(set)
    for it in kept:
        docs[it["domain"]].add(it["doc_id"])
    size = {doc: n for _, doc, n in DOCS}
    for domain in ("news", "social"):
        n = sum(size[d] for d in docs[domain])
        assert n >= 20  # filled to the target ...
        assert min(n - size[d] for d in docs[domain]) < 20  # ... and no document more than it needed
        assert report[domain]["segments_kept"] == n and report[domain]["documents_kept"] == len(docs[domain])
    assert docs["ecommerce"] == {"e0"} and report["ecommerce"]["segments_kept"] == 4
    # whole documents, every system's outputs, the corpus order kept
    for it in kept:
        assert sum(1 for x in kept if x["doc_id"] == it["doc_id"]) == size[it["doc_id"]] * len(SYSTEMS)
    assert kept == [it for it in corpus if it["doc_id"] in set().union(*docs.values())]
    # seeded: the same sample again, another with another seed
    assert sample_documents(corpus, 20, seed=7)[0] == kept
    assert any(sample_documents(corpus, 20, seed=s)[0] != kept for s in range(8, 12))


def test_the_campaign_is_built_from_the_sample_and_a_corpus_without_domains_is_refused(tmp_path):
    folder = shutil.copytree(DEMO_ASSETS, tmp_path / "study")
    toml = (folder / "study.toml").read_text()
    (folder / "study.toml").write_text(toml.replace("[da]\n", "[da]\nsegments_per_domain = 20\n", 1))
    path = folder / "da_segments.csv"
    with path.open() as f:
        demo = list(csv.DictReader(f))
    text = {r["segment_id"]: r for r in demo}  # reuse the demo's texts for the generated documents
    first = next(iter(text.values()))
    with path.open("w", newline="") as f:
        w = csv.DictWriter(
            f, fieldnames=["segment_id", "doc_id", "position", "source", "reference", "system", "output", "domain"]
        )
        w.writeheader()
        for it in items():
            w.writerow(
                {
                    **it,
                    "source": first["source"],
                    "reference": first["reference"],
                    "output": f"{it['segment_id']} {it['system']} {first['output']}",
                }
            )
    db = open_database(tmp_path / "s.db")
    res = import_study(db, folder)
    kept, report = sample_documents(items(), 20, seed=20261130)  # the demo study's seed
    in_hits = {
        r["segment_id"]
        for r in db.query(
            "SELECT DISTINCT s.segment_id FROM da_hit_items i JOIN da_segments s ON s.id = i.segment_row "
            "WHERE i.type = 'system'"
        )
    }
    assert res.counts["da_segments_sampled"] == sum(d["segments_kept"] for d in report.values()) == len(in_hits)
    assert in_hits == {it["segment_id"] for it in kept}
    # without a domain column the setting cannot sample: refused, naming it
    with path.open("w", newline="") as f:
        w = csv.DictWriter(
            f, fieldnames=["segment_id", "doc_id", "position", "source", "reference", "system", "output"]
        )
        w.writeheader()
        w.writerows({k: v for k, v in r.items() if k != "domain"} for r in demo)
    with pytest.raises(StudyValidationError, match="da.segments_per_domain.*no domain column"):
        import_study(open_database(tmp_path / "t.db"), folder)
