"""Paper 003 appendix B.5 (issue 50, point 6): MT-GenEval's counterfactual pairs made of a
system's translations, filtered by gender accuracy and BLEU quality bucket, with Table 7.

The expected figures are worked here: which translations are correctly gendered (by the words
that tell the two references apart), their BLEU from sacrebleu's sentence_bleu, the buckets from
Lavie's cut-offs written out below, and the Wilcoxon test from scipy on the kept lines."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from sacrebleu import sentence_bleu
from scipy import stats

from services.qe import audit as Q
from services.qe import mtgeneval as G
from services.qe import paper_figures as P
from tests.helpers.app import run_cli

SRC_F = [
    "She is a nurse.",
    "The actress herself sang.",
    "She became the new director of the school.",
    "The queen opened the bridge.",
    "Her sister is a famous painter in the city.",
]
SRC_M = [
    "He is a nurse.",
    "The actor himself sang.",
    "He became the new director of the school.",
    "The king opened the bridge.",
    "His brother is a famous painter in the city.",
]
REF_F = [
    "Ela é enfermeira.",
    "A própria atriz cantou.",
    "Ela tornou-se a nova diretora da escola.",
    "A rainha abriu a ponte.",
    "A irmã dela é uma pintora famosa na cidade.",
]
REF_M = [
    "Ele é enfermeiro.",
    "O próprio ator cantou.",
    "Ele tornou-se o novo diretor da escola.",
    "O rei abriu a ponte.",
    "O irmão dele é um pintor famoso na cidade.",
]
MT_F = [
    "Ela é enfermeira.",  # 1: both right, both exact: kept
    "O próprio ator cantou.",  # 2: the masculine form for a woman: wrong, the line goes
    "Ela tornou-se a nova diretora da escola.",  # 3: both right, exact ...
    "A rainha abriu a ponte.",  # 4: both right, close, same bucket: kept
    "A irmã dela é uma pintora famosa na cidade.",  # 5: both right, one much worse: other bucket
]
MT_M = [
    "Ele é enfermeiro.",
    "O próprio ator cantou.",
    "Ele virou o novo chefe do colégio.",  # 3: ... but this one is poor: another bucket, dropped
    "O rei abriu a ponte nova.",  # 4: 64 BLEU against 100, both Excellent
    "O irmão dele pinta.",
]
# Lavie (2011) as Table 7 labels it
CUTS = [
    (50, "Excellent (50+)"),
    (40, "Very Good (40-50)"),
    (30, "Good (30-40)"),
    (20, "Fair (20-30)"),
    (0, "Poor (<20)"),
]


def _bucket(score):
    return next(name for low, name in CUTS if score >= low)


def write(path: Path, lines) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def root(tmp_path):
    s = tmp_path / "data" / "sentences" / "test"
    write(s / "geneval-sentences-feminine-test.en_pt.en", SRC_F)
    write(s / "geneval-sentences-masculine-test.en_pt.en", SRC_M)
    write(s / "geneval-sentences-feminine-test.en_pt.pt", REF_F)
    write(s / "geneval-sentences-masculine-test.en_pt.pt", REF_M)
    return tmp_path


def test_the_two_stage_filter_and_table7(root):
    frame, info = G.machine_pairs(G.counterfactual_lines(root, "pt"), MT_F, MT_M, "pt")
    bf = [sentence_bleu(h, [r]).score for h, r in zip(MT_F, REF_F)]
    bm = [sentence_bleu(h, [r]).score for h, r in zip(MT_M, REF_M)]
    right_f = [True, False, True, True, True]  # line 2's feminine translation is the masculine one
    kept = [i for i in range(5) if right_f[i] and _bucket(bf[i]) == _bucket(bm[i])]
    assert kept == [0, 3] and _bucket(bf[2]) != _bucket(bm[2]) and _bucket(bf[4]) != _bucket(bm[4])
    assert sorted(set(frame["line"])) == [1, 4] and len(frame) == 4
    assert set(frame.groupby("line")["gold"].agg("".join)) == {"FM"}  # a feminine and a masculine source a line
    line4 = frame[frame["line"] == 4].set_index("gold")
    assert line4.loc["F", "source"] == SRC_F[3] and line4.loc["M", "source"] == SRC_M[3]
    assert (line4["hyp_f"] == MT_F[3]).all() and (line4["hyp_m"] == MT_M[3]).all()
    table = pd.DataFrame(info["table7"]).set_index("quality")
    for name in [n for _, n in CUTS]:
        assert table.loc[name, "stage1_f"] == sum(1 for i in range(5) if right_f[i] and _bucket(bf[i]) == name)
        assert table.loc[name, "stage1_m"] == sum(1 for i in range(5) if _bucket(bm[i]) == name)
        assert table.loc[name, "stage2"] == sum(1 for i in kept if _bucket(bf[i]) == name)
    assert table.loc["Total"].tolist() == [4, 5, 2]
    expected = stats.wilcoxon([bf[i] for i in kept], [bm[i] for i in kept])
    assert info["wilcoxon_bleu"]["p_value"] == pytest.approx(expected.pvalue)
    # the kept pairs are a counterfactual run for the audit and the paper's tables
    assert P.run_kind(Q.read_pairs(frame)) == "counterfactual"


def test_the_cli_writes_the_pairs_and_table7_and_refuses_misaligned_files(root, tmp_path):
    f, m = write(tmp_path / "mt.f.txt", MT_F), write(tmp_path / "mt.m.txt", MT_M)
    out = tmp_path / "out" / "pairs.csv"
    args = ["data", "mt-geneval", "--root", root, "--lang", "pt", "--subset", "counterfactual"]
    res = run_cli(*args, "--mt-f", f, "--mt-m", m, "--out", out)
    assert res.returncode == 0, res.stderr
    assert "4 instances from 2 of 5 lines" in res.stdout and "Excellent (50+)" in res.stdout
    assert len(pd.read_csv(out)) == 4 and (tmp_path / "out" / "pairs-table7.csv").is_file()
    short = write(tmp_path / "short.txt", MT_M[:3])
    res = run_cli(*args, "--mt-f", f, "--mt-m", short, "--out", tmp_path / "x.csv")
    assert res.returncode != 0 and "5 lines, 5 feminine and 3 masculine translations" in res.stderr
    res = run_cli(*args, "--mt-f", f, "--out", tmp_path / "y.csv")
    assert res.returncode != 0 and "--mt-f and --mt-m" in res.stderr
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "y.csv").exists()
