"""Issue 53, point 6 for ESA and two gaps of its page: the results (services/esa/results.py) checked
against independent computations on hand-made answers (pandas and scipy for the scores, z and
clusters, scikit-learn's f1_score for the span agreement, Krippendorff's alpha computed here from
its coincidence matrix); the Analysis tab's panel, the study report's part and `app.py analyze esa`
on an export printing the same figures; the welcome counting the annotator's own HIT; a leaving
annotator's unfinished HIT handed to the next annotator, their answers kept."""

from __future__ import annotations

import argparse
import json
import math
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import f1_score

from services.admin import participants as admin_participants
from services.common import protocols
from services.esa import results, study_analysis
from services.esa.protocol import held_items
from services.participation.items import get_view
from services.participation.submissions import submit
from services.participation.welcome import page_welcome
from services.report import esa as esa_report
from services.report.build import build_report
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.study.export import export_study
from storage import open_database, participants, studies
from tabs.analysis_esa import shown

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "esa"
STUDY = "esa-example"


def sp(start, end, severity="minor", target_len=None):
    if start == "missing":
        return {"start": target_len, "end": target_len, "text": "", "severity": severity, "missing": True}
    return {"start": start, "end": end, "text": "x" * (end - start), "severity": severity, "missing": False}


T = {"d/1": "a" * 20, "d/2": "b" * 12, "d/3": "c" * 15}  # the outputs, by document/segment


def row(annotator, system, seg, score, spans):
    doc, segment = seg.split("/")
    # the text of a span is its target's characters (Span checks nothing here; the offsets count)
    spans = [{**s, "text": T[seg][s["start"] : s["end"]]} for s in spans]
    return {
        "participant": annotator,
        "system": system,
        "doc_id": doc,
        "segment_id": segment,
        "score": score,
        "spans": json.dumps(spans),
        "target": T[seg],
    }


# three annotators, two systems, three segments; u1 and u2 share four outputs, u3 shares one
ROWS = [
    row("u1", "A", "d/1", 80, [sp(0, 5, "minor"), sp(10, 14, "major")]),
    row("u2", "A", "d/1", 70, [sp(2, 8, "minor"), sp("missing", None, "major", 20)]),
    row("u3", "A", "d/1", 95, []),
    row("u1", "A", "d/2", 60, [sp(0, 12, "major")]),
    row("u2", "A", "d/2", 40, [sp(3, 9, "major")]),
    row("u1", "B", "d/1", 30, [sp(0, 20, "major")]),
    row("u2", "B", "d/1", 45, [sp(5, 20, "minor")]),
    row("u1", "B", "d/2", 50, []),
    row("u2", "B", "d/2", 55, []),
    row("u3", "B", "d/3", 20, [sp(1, 4, "minor"), sp("missing", None, "minor", 15)]),
    row("u1", "A", "d/3", 90, []),
    row("u1", "B", "d/3", 35, [sp(2, 6, "major")]),
]


def labels(spans: list[dict], length: int, severity: bool) -> list[str]:
    """Per character of the output and the [MISSING] position after it: the span's label or "-"."""
    out = ["-"] * (length + 1)
    for s in spans:
        for i in [length] if s["missing"] else range(s["start"], s["end"]):
            out[i] = s["severity"] if severity else "err"
    return out


def alpha_interval(units: dict[str, list[float]]) -> float:
    """Krippendorff's alpha, interval metric, from the coincidence of pairable values (Krippendorff
    2011, section C): D_o over the pairs within units, weighted 1/(m_u - 1), D_e over all pairable
    values."""
    pairable = {u: v for u, v in units.items() if len(v) >= 2}
    values = [x for v in pairable.values() for x in v]
    n = len(values)
    d_o = sum(sum((a - b) ** 2 for i, a in enumerate(v) for j, b in enumerate(v) if i != j) / (len(v) - 1)
              for v in pairable.values()) / n  # fmt: skip
    d_e = sum((a - b) ** 2 for i, a in enumerate(values) for j, b in enumerate(values) if i != j) / (n * (n - 1))
    return 1 - d_o / d_e


def test_scores_z_and_clusters_match_pandas_and_scipy():
    res = results.results(ROWS)
    df = pd.DataFrame(ROWS)
    df["z"] = df.groupby("participant")["score"].transform(lambda s: stats.zscore(s, ddof=1))
    seg = df.groupby(["system", "doc_id", "segment_id"]).agg(mean=("score", "mean"), z=("z", "mean"))
    by_system = seg.groupby("system").mean()
    got = res.systems.set_index("system")
    for system in ("A", "B"):
        assert got.loc[system, "mean"] == pytest.approx(by_system.loc[system, "mean"])
        assert got.loc[system, "z_mean"] == pytest.approx(by_system.loc[system, "z"])
        assert got.loc[system, "n_judgments"] == (df["system"] == system).sum()
    assert list(res.systems["system"]) == ["A", "B"]  # A's mean is the higher
    p = stats.mannwhitneyu(df[df.system == "A"].score, df[df.system == "B"].score, alternative="greater").pvalue
    h2h = res.result.head_to_head.set_index(["system_a", "system_b"])
    assert h2h.loc[("A", "B"), "p_value"] == pytest.approx(p)
    assert list(res.systems["cluster"]) == ([1, 2] if p < 0.05 else [1, 1])


def test_severities_are_counted_per_system():
    sev = results.results(ROWS).severities.set_index("system")
    spans = [(r["system"], s) for r in ROWS for s in json.loads(r["spans"])]
    for system in ("A", "B"):
        mine = [s for sy, s in spans if sy == system]
        assert sev.loc[system, "minor"] == sum(s["severity"] == "minor" for s in mine)
        assert sev.loc[system, "major"] == sum(s["severity"] == "major" for s in mine)
        assert sev.loc[system, "missing"] == sum(s["missing"] for s in mine)
    assert sev.loc["A", "missing"] == 1 and sev.loc["B", "missing"] == 1


def test_span_agreement_is_scikit_learns_f1_per_character_and_alpha_the_coincidence_formula():
    agr = results.results(ROWS).agreement
    groups: dict[tuple, list[dict]] = {}
    for r in ROWS:
        groups.setdefault((r["system"], f"{r['doc_id']}/{r['segment_id']}"), []).append(r)
    f1s, f1_sev = [], []
    for (_, seg), rs in groups.items():
        for a, b in combinations(rs, 2):
            sa, sb, n = json.loads(a["spans"]), json.loads(b["spans"]), len(T[seg])
            la, lb = labels(sa, n, False), labels(sb, n, False)
            if "err" in la + lb:
                f1s.append(f1_score(la, lb, pos_label="err", average="binary"))
            else:
                f1s.append(1.0)  # neither marks anything: full agreement (services/esa/agreement.py)
            la, lb = labels(sa, n, True), labels(sb, n, True)
            present = sorted({x for x in la + lb if x != "-"})
            f1_sev.append(f1_score(la, lb, labels=present, average="micro") if present else 1.0)
    assert agr.shared_segments == 5 and len(agr.pairs) == len(f1s) == 7
    assert agr.f1 == pytest.approx(np.mean(f1s))
    assert agr.f1_severity == pytest.approx(np.mean(f1_sev))
    units: dict[str, list[float]] = {}
    for r in ROWS:
        units.setdefault(f"{r['system']}|{r['doc_id']}/{r['segment_id']}", []).append(float(r["score"]))
    assert agr.alpha == pytest.approx(alpha_interval(units))
    table = agr.table().set_index("measure")
    assert list(table["value"]) == pytest.approx([agr.f1, agr.f1_severity, agr.alpha])


def test_without_targets_the_span_agreement_is_the_same():
    # an export read without esa_segments: the length comes from the spans, the F1 is unchanged
    bare = [{k: v for k, v in r.items() if k != "target"} for r in ROWS]
    assert results.results(bare).agreement.f1 == pytest.approx(results.results(ROWS).agreement.f1)
    assert results.results(bare).agreement.f1_severity == pytest.approx(results.results(ROWS).agreement.f1_severity)


def test_no_segment_with_two_annotators_is_said_plainly():
    alone = [r for r in ROWS if r["participant"] == "u1"]
    res = results.results(alone)
    assert res.agreement.why == results.NO_SHARED and math.isnan(res.agreement.alpha)
    assert res.lines()[-1] == "Agreement: n" + results.NO_SHARED[1:]
    with pytest.raises(ValueError, match="no ESA answers"):
        results.results([])


def test_answers_without_any_span_have_zero_counts():
    # no span marked anywhere: the breakdown counts zeros (it once failed on an empty span table)
    bare = [{**r, "spans": "[]"} for r in ROWS]
    sev = results.results(bare).severities
    assert list(sev["system"]) == ["A", "B"] and sev[["minor", "major", "missing", "n_spans"]].sum().sum() == 0
    assert results.results(bare).agreement.f1 == 1.0  # nobody marks anything: full agreement


# -- one study: the panel, the report and the command line on its export ------------------------


@pytest.fixture
def db(tmp_path):
    database = open_database(tmp_path / "esa.db", schemas=protocols.schemas())
    import_study(database, EXAMPLE)
    return database


def annotate(db, p, limit=None, seed=0):
    rng = np.random.default_rng(seed)
    done = 0
    while limit is None or done < limit:
        v = get_view(db, p.token, "esa")
        if v.status != "item":
            break
        t = v.content["target"]
        a = int(rng.integers(0, len(t) - 3))
        spans = [{"start": a, "end": a + 3, "text": t[a : a + 3], "severity": ["minor", "major"][done % 2]}]
        if done % 3 == 0:
            spans.append({"start": len(t), "end": len(t), "text": "", "severity": "minor", "missing": True})
        submit(db, p.token, "esa", v.item_id, {"spans": json.dumps(spans), "score": int(rng.integers(10, 95))})
        done += 1


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_the_panel_the_report_and_the_cli_on_the_export_agree(db, tmp_path, fmt):
    people = add_participants(db, STUDY, "esa", 4)  # two annotators per HIT
    for i, p in enumerate(people):
        annotate(db, p, seed=i)
    rep = build_report(db, STUDY, tmp_path / "report")
    part = next(p for p in rep.parts if p.protocol == "esa")
    res = part.detail
    assert isinstance(res, results.Results) and res.agreement.shared_segments == 10
    out = export_study(db, STUDY, tmp_path / "export", fmt)
    printed = study_analysis.run(
        argparse.Namespace(export=str(out.folder), study=None, out=str(tmp_path / "cli"), alpha=0.05, by="mean"), None
    )
    lines = printed.splitlines()
    assert lines[0].startswith(res.lines()[0]) and lines[1:] == res.lines()[1:]
    assert lines[-1].startswith("Agreement: 10 segment(s)")
    # the report's tables are the command line's files, to the digit
    sections = {s.number: s for s in part.sections}
    for number, name in (("Table 1", "systems.csv"), ("Table 2", "severities.csv"), ("Table 3", "agreement.csv")):
        written = pd.read_csv(tmp_path / "cli" / name)
        pd.testing.assert_frame_equal(
            sections[number].table.reset_index(drop=True), written, check_dtype=False, check_exact=False
        )
    assert sections["Table 4"].table is not None and "Krippendorff" in sections["Table 4"].table.to_string()
    # the panel shows the report's part and, beside it, its lines
    view = shown(part)
    assert view["summary"].count("\n\n") == len(res.lines()) - 1 and "Krippendorff" in view["summary"]
    assert len(view["pairs"]) == len(res.agreement.pairs) == 10
    assert part.summary == res.lines()[0] and res.lines()[-1] in part.notes
    assert (tmp_path / "report" / "esa" / "agreement_pairs.csv").exists()
    html = rep.html.read_text(encoding="utf-8")
    assert "Error span annotation" in html and "Krippendorff" in html


def test_a_study_without_answers_says_so_in_the_panel_and_the_report(db, tmp_path):
    part = esa_report.build(db, STUDY, tmp_path)
    assert part.summary == esa_report.NO_DATA
    assert [s.filled for s in part.sections] == [False, False, False, True]
    assert shown(part)["summary"].startswith("No ESA answers yet")
    other = esa_report.build(db, "no-such-study", tmp_path)
    assert other.summary == esa_report.NOT_LISTED and shown(other)["summary"].startswith("This study has no esa")


# -- the welcome's count, and a leaving annotator's HIT --------------------------------------------


def queue(db, pid):
    return db.query("SELECT item_id FROM assignments WHERE participant_id = ? AND status != 'withdrawn'", [pid])


def test_the_welcome_counts_the_segments_of_the_annotators_own_hit(db):
    study = studies.get_study(db, STUDY)
    sizes = {h["hit"]: h["n_segments"] for h in db.query("SELECT * FROM esa_hits WHERE study_id = ?", [STUDY])}
    assert sorted(sizes.values()) != [4, 4]  # whole documents: a HIT is not hit_size (4)
    people = add_participants(db, STUDY, "esa", 2)
    for p in people:
        row = participants.get(db, p.id)
        n = len(queue(db, p.id))
        hit = db.query("SELECT hit FROM esa_takers WHERE participant_id = ?", [p.id])[0]["hit"]
        assert held_items(db, study, row) == n == sizes[hit]
        assert f"about {n} segments" in page_welcome(db, row, "en")
    # before holding a HIT: the study's mean HIT size
    nobody = {**participants.get(db, people[0].id), "id": -1}
    assert held_items(db, study, nobody) == round(sum(sizes.values()) / len(sizes))


def test_an_unfinished_hit_goes_to_the_next_annotator_and_the_answers_stay(db):
    a, b, c = add_participants(db, STUDY, "esa", 3)  # HITs 0, 1, 0
    hit_of = lambda pid: db.query("SELECT hit FROM esa_takers WHERE participant_id = ?", [pid])  # noqa: E731
    assert [hit_of(p.id)[0]["hit"] for p in (a, b, c)] == [0, 1, 0]
    annotate(db, a, limit=2)
    annotate(db, b)  # b finishes HIT 1
    for p in (a, b):
        admin_participants.deactivate(db, STUDY, p.id, "admin")
    out = admin_participants.reassign_open_items(db, STUDY, a.id, "admin")
    assert len(out.waiting) == len(queue(db, c.id)) - 2 and not out.dropped and "back to the pool" in out.summary()
    assert admin_participants.reassign_open_items(db, STUDY, b.id, "admin").waiting == []
    assert hit_of(a.id) == [] and hit_of(b.id) == [{"hit": 1}]  # a finished HIT stays held
    (d,) = add_participants(db, STUDY, "esa", 1)
    assert hit_of(d.id) == [{"hit": 0}]  # HIT 0 is held by c alone now, as HIT 1 by b: the first
    assert len(queue(db, d.id)) == len(queue(db, c.id))  # the whole HIT, the left one's part too
    kept = [r for r in study_analysis.stored_rows(db, STUDY) if r["participant"] == a.id]
    assert len(kept) == 2  # the leaver's answers stay in the data
