"""Issue 53, point 6 for MQM: the results (services/esa/mqm_analysis.py) checked against
independent computations on hand-made answers (the paper's weights written out, pandas and scipy
for the scores, z and clusters, scikit-learn's f1_score for the span agreement, Krippendorff's
alpha from its pairwise definition), and the Analysis tab's MQM panel, the study report's MQM part
and `app.py analyze mqm` (on the export and on the stored study) printing the same figures for
one study with two annotators per HIT; without answers, without a second annotator, or for a
study without MQM, each says so."""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import f1_score

from services.common import protocols
from services.esa import mqm_analysis, results
from services.esa.taxonomy import load_taxonomy
from services.participation.items import get_view
from services.participation.submissions import submit
from services.report import mqm as mqm_report
from services.report.build import build_report
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.study.export import export_study
from storage import open_database
from tabs.analysis_esa import shown

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "mqm"
STUDY = "mqm-example"
TAXONOMY = load_taxonomy()
T = {"d/1": "a" * 20, "d/2": "b" * 12, "d/3": "c" * 15}  # the outputs, by document/segment


def weight(category: str, severity: str) -> float:
    """Freitag et al. (2021), section 3, written out: major 5, minor 1, neutral 0, a minor
    Fluency/Punctuation 0.1, Non-translation 25."""
    if category == "Non-translation":
        return 25.0
    if category == "Fluency/Punctuation" and severity == "minor":
        return 0.1
    return {"major": 5.0, "minor": 1.0, "neutral": 0.0}[severity]


def e(start, end, severity, category):
    return {"start": start, "end": end, "severity": severity, "category": category, "missing": False}


def om(severity):
    return {"start": None, "end": None, "severity": severity, "category": "Accuracy/Omission", "missing": True}


def row(annotator, system, seg, spans):
    doc, segment = seg.split("/")
    n = len(T[seg])
    spans = [
        {**s, "start": n, "end": n, "text": ""} if s["missing"] else {**s, "text": T[seg][s["start"] : s["end"]]}
        for s in spans
    ]
    return {
        "participant": annotator,
        "system": system,
        "doc_id": doc,
        "segment_id": segment,
        "mqm": sum(weight(s["category"], s["severity"]) for s in spans),
        "spans": json.dumps(spans),
        "target": T[seg],
    }


# three annotators, two systems, three segments; u1 and u2 share four outputs, u3 shares one
ROWS = [
    row("u1", "A", "d/1", [e(0, 5, "minor", "Fluency/Grammar"), e(10, 14, "major", "Accuracy/Mistranslation")]),
    row("u2", "A", "d/1", [e(2, 8, "minor", "Fluency/Grammar"), om("major")]),
    row("u3", "A", "d/1", []),
    row("u1", "A", "d/2", [e(0, 12, "major", "Accuracy/Mistranslation")]),
    row("u2", "A", "d/2", [e(3, 9, "major", "Fluency/Grammar")]),
    row("u1", "B", "d/1", [e(0, 20, "major", "Non-translation")]),
    row("u2", "B", "d/1", [e(5, 20, "minor", "Style/Awkward")]),
    row("u1", "B", "d/2", []),
    row("u2", "B", "d/2", [e(11, 12, "minor", "Fluency/Punctuation")]),
    row("u3", "B", "d/3", [e(1, 4, "minor", "Fluency/Spelling"), om("minor")]),
    row("u1", "A", "d/3", []),
    row("u1", "B", "d/3", [e(2, 6, "major", "Accuracy/Mistranslation"), e(7, 9, "neutral", "Style/Awkward")]),
]


def labels(spans: list[dict], length: int, key) -> list[str]:
    """Per character of the output and the [MISSING] position after it: key(span) or "-"."""
    out = ["-"] * (length + 1)
    for s in spans:
        for i in [length] if s["missing"] else range(s["start"], s["end"]):
            out[i] = key(s)
    return out


def f1(la: list[str], lb: list[str]) -> float:
    present = sorted({x for x in la + lb if x != "-"})
    return f1_score(la, lb, labels=present, average="micro") if present else 1.0


def alpha_interval(units: dict[str, list[float]]) -> float:
    """Krippendorff's alpha, interval metric, by its pairwise definition (Krippendorff 2011):
    1 - (n - 1) * sum over units of the within-unit squared differences / (m_u - 1), over the sum
    of squared differences between all pairable values; units with one value left out."""
    pairable = [v for v in units.values() if len(v) >= 2]
    values = np.array([x for v in pairable for x in v])
    n = len(values)
    within = sum(sum((a - b) ** 2 for a, b in combinations(v, 2)) / (len(v) - 1) for v in pairable)
    total = sum((a - b) ** 2 for a, b in combinations(values, 2))
    return 1 - (n - 1) * within / total


def test_scores_z_and_clusters_match_pandas_and_scipy():
    res = mqm_analysis.mqm_results(ROWS, TAXONOMY)
    df = pd.DataFrame(ROWS)
    assert df.loc[5, "mqm"] == 25 and df.loc[8, "mqm"] == pytest.approx(0.1)  # the weights, as written
    df["z"] = df.groupby("participant")["mqm"].transform(lambda s: stats.zscore(s, ddof=1))
    seg = df.groupby(["system", "doc_id", "segment_id"]).agg(mqm=("mqm", "mean"), z=("z", "mean"))
    by_system = seg.groupby("system").mean()
    got = res.systems.set_index("system")
    for system in ("A", "B"):
        assert got.loc[system, "mqm"] == pytest.approx(by_system.loc[system, "mqm"])
        assert got.loc[system, "z_mean"] == pytest.approx(by_system.loc[system, "z"])
        assert got.loc[system, "n_judgments"] == (df["system"] == system).sum()
        assert got.loc[system, "n_segments"] == 3
    assert list(res.systems["system"]) == list(by_system["mqm"].sort_values().index) == ["A", "B"]  # lower first
    # the clusters' test: that A's segment scores are lower than B's
    a, b = (seg.loc[s, "mqm"].to_numpy() for s in ("A", "B"))
    p = stats.mannwhitneyu(a, b, alternative="less").pvalue
    h2h = res.head_to_head.set_index(["system_a", "system_b"])
    assert h2h.loc[("A", "B"), "p_value"] == pytest.approx(p)
    assert list(res.systems["cluster"]) == ([1, 2] if p < 0.05 else [1, 1])
    annotators = res.annotators.set_index("annotator")
    for who, g in df.groupby("participant"):
        assert annotators.loc[who, "mean"] == pytest.approx(g["mqm"].mean())
        assert annotators.loc[who, "n_judgments"] == len(g)
        assert annotators.loc[who, "std"] == pytest.approx(g["mqm"].std(ddof=1))


def test_the_category_by_severity_breakdown_counts_each_error():
    cats = mqm_analysis.mqm_results(ROWS, TAXONOMY).categories
    assert list(cats.columns) == ["system", "category", "major", "minor", "neutral", "n_errors", "penalty_per_judgment"]
    counted = Counter((r["system"], s["category"], s["severity"]) for r in ROWS for s in json.loads(r["spans"]))
    judgments = Counter(r["system"] for r in ROWS)
    got = cats.set_index(["system", "category"])
    assert sorted(got.index) == sorted({(sy, c) for sy, c, _ in counted})
    for (system, category), r in got.iterrows():
        for sev in ("major", "minor", "neutral"):
            assert r[sev] == counted[(system, category, sev)], (system, category, sev)
        penalty = sum(n * weight(category, sev) for (sy, c, sev), n in counted.items() if (sy, c) == (system, category))
        assert r["penalty_per_judgment"] == pytest.approx(penalty / judgments[system])
    # the penalties add up to the mean MQM per judgment of each system
    per_system = cats.groupby("system")["penalty_per_judgment"].sum()
    assert per_system["B"] == pytest.approx(np.mean([r["mqm"] for r in ROWS if r["system"] == "B"]))


def test_span_agreement_is_scikit_learns_f1_per_character_and_alpha_the_pairwise_formula():
    agr = mqm_analysis.mqm_results(ROWS, TAXONOMY).agreement
    groups: dict[tuple, list[dict]] = {}
    for r in ROWS:
        groups.setdefault((r["system"], f"{r['doc_id']}/{r['segment_id']}"), []).append(r)
    plain, by_sev, by_cat = [], [], []
    for (_, seg), rs in groups.items():
        for x, y in combinations(rs, 2):
            sa, sb, n = json.loads(x["spans"]), json.loads(y["spans"]), len(T[seg])
            keys = ((plain, lambda s: "err"), (by_sev, lambda s: s["severity"]), (by_cat, lambda s: s["category"]))
            for out, key in keys:
                out.append(f1(labels(sa, n, key), labels(sb, n, key)))
    assert agr.shared_segments == 5 and len(agr.pairs) == len(plain) == 7
    assert agr.f1 == pytest.approx(np.mean(plain))
    assert agr.f1_severity == pytest.approx(np.mean(by_sev))
    assert agr.f1_category == pytest.approx(np.mean(by_cat))
    assert agr.f1_category != pytest.approx(agr.f1)  # the categories do change the figure here
    units: dict[str, list[float]] = {}
    for r in ROWS:
        units.setdefault(f"{r['system']}|{r['doc_id']}/{r['segment_id']}", []).append(r["mqm"])
    assert agr.alpha == pytest.approx(alpha_interval(units))
    table = agr.table().set_index("measure")
    assert list(table["value"]) == pytest.approx([agr.f1, agr.f1_severity, agr.f1_category, agr.alpha])
    assert "with categories" in table.index[2] and "MQM scores" in table.index[3]
    assert "with categories" in agr.line() and "MQM scores" in agr.line()
    # ESA's agreement is unchanged: no category row
    j = mqm_analysis.mqm_results(ROWS, TAXONOMY).judgments
    assert len(results.agreement(j.assign(score=j["mqm"])).table()) == 3


def test_without_targets_or_a_second_annotator():
    bare = [{k: v for k, v in r.items() if k != "target"} for r in ROWS]
    full, without = mqm_analysis.mqm_results(ROWS, TAXONOMY), mqm_analysis.mqm_results(bare, TAXONOMY)
    assert without.agreement.f1 == pytest.approx(full.agreement.f1)
    assert without.agreement.f1_category == pytest.approx(full.agreement.f1_category)
    alone = mqm_analysis.mqm_results([r for r in ROWS if r["participant"] == "u1"], TAXONOMY)
    assert alone.agreement.why == results.NO_SHARED and math.isnan(alone.agreement.alpha)
    assert alone.lines()[-1] == "Agreement: n" + results.NO_SHARED[1:]
    with pytest.raises(ValueError, match="no MQM answers"):
        mqm_analysis.mqm_results([], TAXONOMY)


# -- one study: the panel, the report and the command line ---------------------------------------


@pytest.fixture
def db(tmp_path):
    database = open_database(tmp_path / "mqm.db", schemas=protocols.schemas())
    import_study(database, EXAMPLE)
    return database


ERRORS = [("Accuracy/Mistranslation", "major"), ("Fluency/Grammar", "minor"), ("Fluency/Punctuation", "minor")]


def annotate(db, p, seed):
    rng = np.random.default_rng(seed)
    while True:
        v = get_view(db, p.token, "mqm")
        if v.status != "item":
            break
        t = v.content["target"]
        spans = []
        for k in range(int(rng.integers(0, 3))):  # disjoint spans in thirds of the output
            a = k * (len(t) // 3) + int(rng.integers(0, 3))
            cat, sev = ERRORS[int(rng.integers(0, len(ERRORS)))]
            spans.append({"start": a, "end": a + 4, "text": t[a : a + 4], "severity": sev, "category": cat})
        submit(db, p.token, "mqm", v.item_id, {"spans": json.dumps(spans)})


def unnamed(line: str) -> str:
    """An annotator's line of the summary without the annotator's name."""
    return line.split(":", 1)[1] if line.startswith("  ") and "judgments)" in line else line


def test_the_panel_the_report_and_the_cli_agree(db, tmp_path):
    assert protocols.protocol("mqm").report_section == "services.report.mqm:section"
    people = add_participants(db, STUDY, "mqm", 4)  # two annotators per HIT
    for i, p in enumerate(people):
        annotate(db, p, seed=i)
    rep = build_report(db, STUDY, tmp_path / "report")
    part = next(p for p in rep.parts if p.protocol == "mqm")
    res = part.detail
    assert isinstance(res, mqm_analysis.MQMResults) and res.agreement.shared_segments == 6
    out = export_study(db, STUDY, tmp_path / "export")
    args = dict(study=None, alpha=0.05, taxonomy=None)
    printed = mqm_analysis.run(argparse.Namespace(export=str(out.folder), out=str(tmp_path / "cli"), **args), None)
    lines = printed.splitlines()
    # the first line names where the weights came from: the study's stored taxonomy, or the file given
    # and the annotators are the export's pseudonyms there, the team's ids in the stored study
    assert lines[0].split("; weights")[0] == res.lines()[0].split("; weights")[0]
    assert [unnamed(x) for x in lines[1:]] == [unnamed(x) for x in res.lines()[1:]]
    assert "weights mqm.taxonomy" in res.lines()[0] and "mqm_taxonomy.toml" in lines[0]
    assert lines[-1].startswith("Agreement: 6 segment(s) with two or more annotators, 6 pair(s)")
    assert "with categories" in lines[-1] and "Krippendorff's alpha (segments' MQM scores" in lines[-1]
    stored = mqm_analysis.run(
        argparse.Namespace(**{**args, "study": STUDY}, export=None, out=str(tmp_path / "cli2")), lambda: db
    )
    assert stored.splitlines()[1:] == res.lines()[1:]
    # the report's tables are the command line's files, to the digit
    sections = {s.number: s for s in part.sections}
    for number, name in (
        ("Table 1", "systems.csv"),
        ("Table 2", "annotators.csv"),
        ("Table 3", "categories.csv"),
        ("Table 4", "agreement.csv"),
    ):
        folders = ["cli2"] if name == "annotators.csv" else ["cli", "cli2"]  # the export's pseudonyms apart
        for folder in folders:
            written = pd.read_csv(tmp_path / folder / name, dtype={"annotator": str})
            pd.testing.assert_frame_equal(
                sections[number].table.reset_index(drop=True), written, check_dtype=False, check_exact=False
            )
    defaults = sections["Table 5"].table.to_string()
    assert "Freitag et al. 2021, section 3" in defaults and "Krippendorff" in defaults
    # the panel shows the report's part and, beside it, its lines
    view = shown(part)
    assert view["summary"].count("\n\n") == len(res.lines()) - 1 and "Krippendorff" in view["summary"]
    assert len(view["pairs"]) == len(res.agreement.pairs) == 6
    assert len(view["h2h"]) == 2
    assert part.summary == res.lines()[0] and part.notes[0] == res.lines()[-1]
    assert (tmp_path / "report" / "mqm" / "agreement_pairs.csv").exists()
    html = rep.html.read_text(encoding="utf-8")
    assert "Multidimensional Quality Metrics" in html and "with categories" in html


def test_one_annotator_per_hit_and_no_answers_are_said_plainly(db, tmp_path):
    part = mqm_report.build(db, STUDY, tmp_path / "empty")
    assert part.summary == mqm_report.NO_DATA
    assert [s.filled for s in part.sections] == [False, False, False, False, True]
    assert shown(part)["summary"].startswith("No MQM answers yet")
    other = mqm_report.build(db, "no-such-study", tmp_path / "other")
    assert other.summary == mqm_report.NOT_LISTED and shown(other)["summary"].startswith("This study has no mqm")
    for i, p in enumerate(add_participants(db, STUDY, "mqm", 2)):  # one annotator per HIT
        annotate(db, p, seed=10 + i)
    part = mqm_report.build(db, STUDY, tmp_path / "one")
    table4 = next(s for s in part.sections if s.number == "Table 4")
    assert not table4.filled and table4.missing.startswith("No segment has two annotators yet")
    assert part.notes[0].startswith("Agreement: no segment has two annotators")
    assert next(s for s in part.sections if s.number == "Table 1").filled
