"""Issue 53: ESA system scores, annotator z-scores, rankings, clusters and error breakdowns,
each checked against an independent computation (plain Python, statistics, scipy called directly)."""

from __future__ import annotations

import random
import statistics

import pandas as pd
import pytest
from scipy import stats

from services.esa import analysis as A
from services.esa.spans import Span
from services.esa.taxonomy import load_taxonomy

TEXT = "Das ist ein Satz mit einigen Fehlern darin."


def make(seed=1, systems=None, annotators=6, segments=40):
    """Synthetic ESA judgments: each annotator scores every system on a share of the segments,
    with their own offset and spread (what z-scores remove)."""
    systems = systems or {"A": 85, "B": 70, "C": 69, "D": 40}
    rng = random.Random(seed)
    rows = []
    for a in range(annotators):
        offset, spread = rng.uniform(-10, 10), rng.uniform(0.6, 1.4)
        for seg in range(segments):
            if (seg + a) % 2:
                continue
            for s, q in systems.items():
                x = min(100, max(0, round(q + offset + spread * rng.gauss(0, 12))))
                n_minor = rng.randint(0, 2) if x < 90 else 0
                n_major = 1 if x < 50 else 0
                spans = [Span.over(TEXT, 4 * k, 4 * k + 3, "minor") for k in range(n_minor)]
                spans += [Span.over(TEXT, 20, 26, "major")] * n_major
                if x < 30:
                    spans.append(Span.omission(TEXT, "major"))
                rows.append(dict(annotator=f"r{a}", system=s, segment_id=f"s{seg}", score=x, spans=spans))
    return pd.DataFrame(rows)


def expected_z(df):
    by = {}
    for r in df.itertuples():
        by.setdefault(r.annotator, []).append(r.score)
    out = []
    for r in df.itertuples():
        xs = by[r.annotator]
        sd = statistics.stdev(xs) if len(xs) > 1 else 0
        out.append((r.score - statistics.fmean(xs)) / sd if sd > 0 else float("nan"))
    return out


def test_z_scores_per_annotator_with_sample_sd():
    df = make()
    df.loc[len(df)] = dict(annotator="once", system="A", segment_id="s0", score=50, spans=[])
    for i in range(3):
        df.loc[len(df)] = dict(annotator="flat", system="B", segment_id=f"s{i}", score=70, spans=[])
    res = A.analyze(df)
    z = res.judgments["z"].tolist()
    for got, exp in zip(z, expected_z(df)):
        if exp != exp:  # NaN: one judgment or sd 0
            assert got != got
        else:
            assert got == pytest.approx(exp, rel=1e-12, abs=1e-12)
    assert res.judgments.loc[res.judgments.annotator == "flat", "z"].isna().all()


def test_system_means_over_segments_and_ranking():
    df = make()
    res = A.analyze(df)
    z = expected_z(df)
    per_seg = {}
    for r, zi in zip(df.itertuples(), z):
        per_seg.setdefault((r.system, r.segment_id), []).append((r.score, zi))
    expected = {}
    for (s, _), v in per_seg.items():
        expected.setdefault(s, []).append(
            (statistics.fmean(x for x, _ in v), statistics.fmean(zz for _, zz in v), len(v))
        )
    for row in res.systems.itertuples():
        segs = expected[row.system]
        assert row.mean == pytest.approx(statistics.fmean(m for m, _, _ in segs), rel=1e-12)
        assert row.z_mean == pytest.approx(statistics.fmean(zz for _, zz, _ in segs), rel=1e-9)
        assert (row.n_segments, row.n_judgments) == (len(segs), sum(n for _, _, n in segs))
    means = {r.system: r.mean for r in res.systems.itertuples()}
    assert res.systems["system"].tolist() == sorted(means, key=lambda s: -means[s])
    assert res.systems["rank"].tolist() == list(range(1, 5))
    zmeans = {r.system: r.z_mean for r in res.systems.itertuples()}
    by_z = A.analyze(df, by="z").systems
    assert by_z["system"].tolist() == sorted(zmeans, key=lambda s: -zmeans[s])


def brute_clusters(order, p, alpha):
    """A boundary between ranks i and i+1 exactly where every pair across it is significant."""
    boundaries = [all(p[(a, b)] < alpha for a in order[: i + 1] for b in order[i + 1 :]) for i in range(len(order) - 1)]
    return [1 + sum(boundaries[:i]) for i in range(len(order))]


@pytest.mark.parametrize("by, test", [("mean", "mannwhitneyu"), ("z", "mannwhitneyu"), ("mean", "ranksums")])
def test_head_to_head_and_clusters_match_scipy(by, test):
    df = make(seed=3)
    res = A.analyze(df, by=by, test=test)
    z = pd.Series(expected_z(df))
    col = df["score"] if by == "mean" else z
    p = {}
    for row in res.head_to_head.itertuples():
        xa = col[df["system"] == row.system_a].dropna()
        xb = col[df["system"] == row.system_b].dropna()
        fn = stats.mannwhitneyu if test == "mannwhitneyu" else stats.ranksums
        exp = fn(xa, xb, alternative="greater").pvalue
        assert row.p_value == pytest.approx(exp, rel=1e-9)
        assert (row.n_a, row.n_b) == (len(xa), len(xb))
        p[(row.system_a, row.system_b)] = row.p_value
    order = res.systems["system"].tolist()
    assert res.systems["cluster"].tolist() == brute_clusters(order, p, 0.05)
    # A is far ahead, B and C close, D far behind: three clusters
    assert res.systems["cluster"].tolist() == [1, 2, 2, 3]
    assert order[0] == "A" and order[-1] == "D"


def test_scores_outside_the_scale_are_refused():
    df = make(segments=4)
    df.loc[3, "score"] = 101
    with pytest.raises(ValueError, match=r"scores must be numbers from 0 to 100: row 3 \(101\)"):
        A.analyze(df)
    df["score"] = df["score"].astype(object)
    df.loc[3, "score"] = "good"
    with pytest.raises(ValueError, match=r"row 3 \('good'\)"):
        A.analyze(df)
    with pytest.raises(ValueError, match="need the columns score"):
        A.analyze(df.drop(columns="score"))


def test_severity_breakdown_counts_by_hand():
    rows = [
        ("A", [Span.over(TEXT, 0, 3, "minor"), Span.over(TEXT, 4, 7, "major"), Span.omission(TEXT, "minor")]),
        ("A", []),
        ("B", [Span.over(TEXT, 0, 3, "major"), Span.over(TEXT, 4, 7, "major")]),
    ]
    df = pd.DataFrame(
        [dict(annotator="r", system=s, segment_id=str(i), score=50, spans=sp) for i, (s, sp) in enumerate(rows)]
    )
    b = A.severity_breakdown(df).set_index("system")
    assert b.loc["A", ["n_judgments", "minor", "major", "missing", "n_spans"]].tolist() == [2, 2, 1, 1, 3]
    assert b.loc["A", "spans_per_judgment"] == 1.5
    assert b.loc["B", ["n_judgments", "minor", "major", "missing", "n_spans"]].tolist() == [1, 0, 2, 0, 2]


def test_breakdowns_agree_with_counting_on_synthetic_data():
    df = make(seed=5)
    b = A.severity_breakdown(df).set_index("system")
    for s, g in df.groupby("system"):
        all_spans = [x for sp in g["spans"] for x in sp]
        assert b.loc[s, "minor"] == sum(x.severity == "minor" for x in all_spans)
        assert b.loc[s, "major"] == sum(x.severity == "major" for x in all_spans)
        assert b.loc[s, "missing"] == sum(x.missing for x in all_spans)


def test_category_breakdown_with_mqm_weights():
    w = load_taxonomy().weights
    rows = [
        (
            "A",
            [
                Span.over(TEXT, 0, 3, "minor", "Fluency/Punctuation"),
                Span.over(TEXT, 4, 7, "major", "Fluency/Punctuation"),
            ],
        ),
        ("A", [Span.over(TEXT, 0, 3, "major", "Accuracy/Mistranslation")]),
        ("B", [Span.over(TEXT, 0, len(TEXT), "major", "Non-translation")]),
        ("B", []),
    ]
    df = pd.DataFrame(
        [dict(annotator="r", system=s, segment_id=str(i), score=50, spans=sp) for i, (s, sp) in enumerate(rows)]
    )
    c = A.category_breakdown(df, w).set_index(["system", "category"])
    # A, punctuation: one minor (0.1) and one major (5) over A's 2 judgments: 2.55 per judgment
    assert c.loc[("A", "Fluency/Punctuation"), ["major", "minor", "n_errors"]].tolist() == [1, 1, 2]
    assert c.loc[("A", "Fluency/Punctuation"), "penalty_per_judgment"] == pytest.approx(2.55)
    assert c.loc[("A", "Accuracy/Mistranslation"), "penalty_per_judgment"] == pytest.approx(2.5)
    assert c.loc[("B", "Non-translation"), "penalty_per_judgment"] == pytest.approx(12.5)
    # the penalties per judgment add up to the system's mean MQM score: A (5.1 + 5) / 2, B 25 / 2
    assert c.loc["A", "penalty_per_judgment"].sum() == pytest.approx(5.05)
