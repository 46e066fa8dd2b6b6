"""services.da.analysis against direct computations with scipy/pandas on seeded generated data.

The expected values are computed here with plain loops over the rows, independently of the
module's groupby/merge code; only the statistical tests themselves come from scipy.
"""

from __future__ import annotations

import importlib.util
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from services.da import analysis as A
from tests.helpers.da import make_judgments

ROOT = Path(__file__).resolve().parent.parent
WMT_DIR = ROOT.parent / "shared" / "data" / "wmt22-deen-da"


# ---------------------------------------------------------------------------------------------
# generated data


# ---------------------------------------------------------------------------------------------
# independent reference computations


def expected_pairs(df):
    """{(modality, run, worker): {'bad': [...], 'rep': [...]}} by looping over rows."""
    originals = defaultdict(list)
    for row in df.itertuples():
        if row.item_type == "system":
            originals[(row.modality, row.run, row.worker_id, row.system, row.segment_id)].append(row.score)
    pairs = defaultdict(lambda: {"bad": [], "rep": []})
    for row in df.itertuples():
        if row.item_type in ("bad_reference", "ask_again"):
            key = (row.modality, row.run, row.worker_id, row.system, row.segment_id)
            if key in originals:
                orig = sum(originals[key]) / len(originals[key])
                pairs[key[:3]]["bad" if row.item_type == "bad_reference" else "rep"].append(orig - row.score)
    return pairs


def expected_reliability(df, alpha=0.05):
    pairs = expected_pairs(df)
    out = {}
    for key in {(r.modality, r.run, r.worker_id) for r in df.itertuples()}:
        p = pairs.get(key, {"bad": [], "rep": []})
        if p["bad"] and p["rep"]:
            pv = stats.mannwhitneyu(p["rep"], p["bad"], alternative="less").pvalue
        else:
            pv = math.nan
        out[key] = (len(p["bad"]), len(p["rep"]), pv, bool(pv < alpha))
    return out


def expected_z(df, reliable_keys):
    """Row-aligned z (NaN for dropped workers): mean/sd over all of the worker's scores."""
    by_worker = defaultdict(list)
    for row in df.itertuples():
        by_worker[(row.modality, row.run, row.worker_id)].append(row.score)
    z = []
    for row in df.itertuples():
        key = (row.modality, row.run, row.worker_id)
        xs = np.array(by_worker[key], dtype=float)
        if key not in reliable_keys or len(xs) < 2 or np.std(xs, ddof=1) == 0:
            z.append(math.nan)
        else:
            z.append((row.score - xs.mean()) / np.std(xs, ddof=1))
    return np.array(z)


def expected_systems(df, z, types=("system",)):
    seg = defaultdict(lambda: ([], []))
    for row, zi in zip(df.itertuples(), z):
        if row.item_type in types and not math.isnan(zi):
            raw_l, z_l = seg[(row.modality, row.run, row.system, row.segment_id)]
            raw_l.append(row.score)
            z_l.append(zi)
    sysd = defaultdict(lambda: {"raw": [], "z": [], "n": 0, "zs": []})
    for (m, r, s, _), (raw_l, z_l) in seg.items():
        e = sysd[(m, r, s)]
        e["raw"].append(np.mean(raw_l))
        e["z"].append(np.mean(z_l))
        e["n"] += len(raw_l)
        e["zs"].extend(z_l)
    return {
        k: {"raw_mean": np.mean(v["raw"]), "z_mean": np.mean(v["z"]), "n": v["n"], "zs": v["zs"]}
        for k, v in sysd.items()
    }


def by_key(df, cols):
    return {tuple(k) if isinstance(k, tuple) else (k,): g.iloc[0] for k, g in df.groupby(cols)}


# ---------------------------------------------------------------------------------------------
# definitions


@pytest.fixture(scope="module")
def data():
    return make_judgments(seed=1, modalities=("text", "audio"), runs=(1, 2))


@pytest.fixture(scope="module")
def result(data):
    return A.analyze(data)


@pytest.mark.slow
def test_pairing_and_reliability_p_values(data, result):
    exp = expected_reliability(data)
    w = result.workers
    assert len(w) == len(exp)
    for row in w.itertuples():
        n_bad, n_rep, p, reliable = exp[(row.modality, row.run, row.worker_id)]
        assert (row.n_bad_pairs, row.n_repeat_pairs) == (n_bad, n_rep)
        assert (math.isnan(p) and math.isnan(row.p_value)) or row.p_value == pytest.approx(p, rel=1e-12)
        assert row.reliable == reliable
    # the generator makes w0 and w1 random: some reliable, some not, in every group
    assert w["reliable"].any() and not w["reliable"].all()
    # the unpaired control is ignored: exactly n//8 bad pairs for the reliable workers' HITs
    assert set(w["n_bad_pairs"]) == {60 // 8}


def test_worker_without_both_kinds_of_pair_is_not_reliable():
    df = make_judgments(seed=2)
    df = df[~((df.worker_id == "w5") & (df.item_type == "ask_again"))]
    w = A.analyze(df).workers.set_index("worker_id")
    assert w.loc["w5", "n_repeat_pairs"] == 0 and w.loc["w5", "n_bad_pairs"] > 0
    assert math.isnan(w.loc["w5", "p_value"]) and not w.loc["w5", "reliable"]


def test_z_scores_and_system_scores(data, result):
    rel = {k for k, v in expected_reliability(data).items() if v[3]}
    z = expected_z(data, rel)
    exp = expected_systems(data, z)
    s = result.systems
    assert len(s) == len(exp)
    for row in s.itertuples():
        e = exp[(row.modality, row.run, row.system)]
        assert row.raw_mean == pytest.approx(e["raw_mean"], rel=1e-12)
        assert row.z_mean == pytest.approx(e["z_mean"], rel=1e-9, abs=1e-12)
        assert row.n_judgments == e["n"]


@pytest.mark.slow
def test_z_drops_single_judgment_and_constant_workers_wmt_mode():
    df = make_judgments(seed=3, unreliable=0)
    extra = pd.DataFrame(
        [
            dict(
                worker_id="const",
                hit_id="h",
                modality="text",
                system=s,
                segment_id=f"s{g:03d}",
                item_type="system",
                score=50.0,
                run=1,
                duration_s=10.0,
            )
            for s in "AB"
            for g in range(5)
        ]
        + [
            dict(
                worker_id="single",
                hit_id="h2",
                modality="text",
                system="A",
                segment_id="s000",
                item_type="system",
                score=99.0,
                run=1,
                duration_s=10.0,
            )
        ]
    )
    df = pd.concat([df, extra], ignore_index=True)
    res = A.analyze(df, wmt=True)
    w = res.workers.set_index("worker_id")
    assert not w.loc["const", "kept"] and w.loc["const", "constant"]
    assert not w.loc["single", "kept"] and math.isnan(w.loc["single", "sd"])
    everyone = {(r.modality, r.run, r.worker_id) for r in df.itertuples()}
    z = expected_z(df, everyone)  # drops sd 0 and single judgments itself
    exp = expected_systems(df, z, types=("system", "ask_again"))
    for row in res.systems.itertuples():
        e = exp[(row.modality, row.run, row.system)]
        assert row.z_mean == pytest.approx(e["z_mean"], rel=1e-9, abs=1e-12)
        assert row.raw_mean == pytest.approx(e["raw_mean"], rel=1e-12)
        assert row.n_judgments == e["n"]
    # wmt=False scores system items only, reliable workers only
    plain = A.analyze(df)
    rel = {k for k, v in expected_reliability(df).items() if v[3]}
    exp = expected_systems(df, expected_z(df, rel))
    for row in plain.systems.itertuples():
        assert row.z_mean == pytest.approx(exp[(row.modality, row.run, row.system)]["z_mean"], rel=1e-9, abs=1e-12)


def test_rank_by_z_with_two_decimal_ties_broken_by_raw(result):
    for (_, _), g in result.systems.groupby(["modality", "run"]):
        key = sorted(g.itertuples(), key=lambda r: (-(float(f"{r.z_mean:.2f}") + 0.0), -r.raw_mean))
        assert [r.system for r in key] == g.sort_values("rank")["system"].tolist()
        assert sorted(g["rank"]) == list(range(1, len(g) + 1))
    literal = pd.DataFrame({"system": ["X", "Y", "Z"], "z_mean": [0.104, 0.101, 0.2], "raw_mean": [60.0, 70.0, 50.0]})
    ranked = A.rank_systems(literal)
    assert ranked["system"].tolist() == ["Z", "Y", "X"]  # X and Y tie at 0.10: Y has the higher raw
    assert A.rank_systems(literal, None)["system"].tolist() == ["Z", "X", "Y"]


def test_rank_tie_break_in_analyze():
    """Worker P: A=70 among references 30, 50 (z_A = 1.0); worker Q: B=60.1 among 20, 40
    (z_B = 1.0008). Equal to two decimals, so A (raw 70) ranks above B (raw 60.1)."""
    rows = [
        ("P", "A", "system", 70),
        ("P", "A", "reference", 30),
        ("P", "A", "reference", 50),
        ("Q", "B", "system", 60.1),
        ("Q", "B", "reference", 20),
        ("Q", "B", "reference", 40),
    ]
    df = pd.DataFrame(
        [
            dict(worker_id=w, hit_id=w, modality="text", system=s, segment_id="1", item_type=t, score=x)
            for w, s, t, x in rows
        ]
    )
    z_a = (70 - np.mean([70, 30, 50])) / np.std([70, 30, 50], ddof=1)
    z_b = (60.1 - np.mean([60.1, 20, 40])) / np.std([60.1, 20, 40], ddof=1)
    assert f"{z_a:.2f}" == f"{z_b:.2f}" and z_b > z_a  # the premise
    s = A.analyze(df, wmt=True, tie_decimals=2).systems.set_index("system")
    assert s.loc["A", "z_mean"] == pytest.approx(z_a) and s.loc["B", "z_mean"] == pytest.approx(z_b)
    assert (s.loc["A", "rank"], s.loc["B", "rank"]) == (1, 2)
    z_only = A.analyze(df, wmt=True).systems.set_index("system")  # wmt default: z alone, as WMT ranks
    assert (z_only.loc["B", "rank"], z_only.loc["A", "rank"]) == (1, 2)


def test_head_to_head_p_values_and_counts(data, result):
    rel = {k for k, v in expected_reliability(data).items() if v[3]}
    exp = expected_systems(data, expected_z(data, rel))
    h = result.head_to_head
    n_sys = result.systems.groupby(["modality", "run"]).size()
    assert len(h) == sum(k * (k - 1) for k in n_sys)
    for row in h.itertuples():
        ea, eb = exp[(row.modality, row.run, row.system_a)], exp[(row.modality, row.run, row.system_b)]
        assert row.z_diff == pytest.approx(ea["z_mean"] - eb["z_mean"], rel=1e-9, abs=1e-12)
        assert row.p_value == pytest.approx(
            stats.mannwhitneyu(ea["zs"], eb["zs"], alternative="greater").pvalue, rel=1e-9
        )
        assert (row.n_a, row.n_b) == (ea["n"], eb["n"])


def test_head_to_head_segment_level_option(data):
    res = A.analyze(data, h2h_level="segment")
    seg = res.segments
    for row in res.head_to_head.head(12).itertuples():
        za = seg[(seg.modality == row.modality) & (seg.run == row.run) & (seg.system == row.system_a)]["z"]
        zb = seg[(seg.modality == row.modality) & (seg.run == row.run) & (seg.system == row.system_b)]["z"]
        assert row.p_value == pytest.approx(stats.mannwhitneyu(za, zb, alternative="greater").pvalue, rel=1e-9)
        assert (row.n_a, row.n_b) == (len(za), len(zb))


def expected_clusters(order, p, alpha):
    clusters, c = [], 1
    for i in range(len(order)):
        clusters.append(c)
        above, below = order[: i + 1], order[i + 1 :]
        if below and all(p[(a, b)] < alpha for a in above for b in below):
            c += 1
    return clusters


def test_clusters():
    df = make_judgments(
        seed=4, systems={"A": 85, "B": 60, "C": 59, "D": 30}, workers=10, unreliable=1, items_per_worker=100
    )
    res = A.analyze(df)
    for (m, r), g in res.systems.groupby(["modality", "run"]):
        g = g.sort_values("rank")
        h = res.head_to_head
        p = {(a, b): pv for a, b, pv in zip(h.system_a, h.system_b, h.p_value)}
        order = g["system"].tolist()
        assert g["cluster"].tolist() == expected_clusters(order, p, 0.05)
        assert g["cluster"].max() >= 3  # A | B C | D
        assert g["cluster"].tolist() == sorted(g["cluster"])
    # with alpha tiny nothing separates (wmt=True so that workers need not pass the test)
    assert set(A.analyze(df, wmt=True, alpha=1e-300).systems["cluster"]) == {1}


def test_replication(data, result):
    rel = {k for k, v in expected_reliability(data).items() if v[3]}
    exp = expected_systems(data, expected_z(data, rel))
    rep = result.replication
    sysrep = rep[rep.level == "system"].set_index("comparison")
    assert set(sysrep.index) == {
        "text: run 1 vs run 2",
        "audio: run 1 vs run 2",
        "run 1: text vs audio",
        "run 2: text vs audio",
    }

    def r_of(left, right):
        common = sorted({k[2] for k in exp if k[:2] == left} & {k[2] for k in exp if k[:2] == right})
        x = [exp[left + (s,)]["z_mean"] for s in common]
        y = [exp[right + (s,)]["z_mean"] for s in common]
        return stats.pearsonr(x, y).statistic, len(common)

    for comp, left, right in [
        ("text: run 1 vs run 2", ("text", 1), ("text", 2)),
        ("audio: run 1 vs run 2", ("audio", 1), ("audio", 2)),
        ("run 1: text vs audio", ("text", 1), ("audio", 1)),
        ("run 2: text vs audio", ("text", 2), ("audio", 2)),
    ]:
        r, n = r_of(left, right)
        assert sysrep.loc[comp, "r"] == pytest.approx(r, rel=1e-9)
        assert sysrep.loc[comp, "n"] == n == 4
    # segment level: Pearson over segments both sides scored
    segrep = rep[rep.level == "segment"].set_index("comparison")
    seg = result.segments
    a = seg[(seg.modality == "text") & (seg.run == 1)].set_index(["system", "segment_id"])["z"]
    b = seg[(seg.modality == "text") & (seg.run == 2)].set_index(["system", "segment_id"])["z"]
    common = a.index.intersection(b.index)
    assert segrep.loc["text: run 1 vs run 2", "n"] == len(common)
    assert segrep.loc["text: run 1 vs run 2", "r"] == pytest.approx(stats.pearsonr(a[common], b[common]).statistic)


def test_replication_needs_both_sides():
    res = A.analyze(make_judgments(seed=5))
    assert res.replication.empty
    assert list(res.replication.columns)[:3] == ["comparison", "r", "n"]


def test_flags_fast_hits_and_constant_ratings():
    df = make_judgments(seed=6, durations=True)
    df.loc[df.worker_id == "w7", "score"] = 42.0
    w = A.analyze(df).workers.set_index("worker_id")
    exp_median = df[df.worker_id == "w0"]["duration_s"].median()
    assert w.loc["w0", "median_item_s"] == pytest.approx(exp_median)
    assert w.loc["w0", "fast"] and w.loc["w0", "n_fast_hits"] == 1
    assert not w.drop(index="w0")["fast"].any()
    assert w.loc["w7", "constant"] and w.loc["w7", "sd"] == 0 and not w.loc["w7", "reliable"]
    assert w["constant"].sum() == 1
    no_time = A.analyze(df.drop(columns="duration_s")).workers
    assert not no_time["fast"].any() and no_time["median_item_s"].isna().all()


def test_qc_summary(data, result):
    exp = expected_reliability(data)
    q = result.qc_summary.set_index("modality")
    assert list(q.index) == ["text", "audio"]
    for m in ("text", "audio"):
        dm = data[data.modality == m]
        assert q.loc[m, "workers_total"] == dm.worker_id.nunique()
        assert q.loc[m, "judgments_total"] == len(dm)
        rel = {k for k, v in exp.items() if v[3] and k[0] == m}
        assert q.loc[m, "workers_reliable"] == len({k[2] for k in rel})
        kept = dm[[(r.modality, r.run, r.worker_id) in rel for r in dm.itertuples()]]
        assert q.loc[m, "judgments_kept"] == len(kept)
        assert q.loc[m, "judgments_scored"] == (kept.item_type == "system").sum()


def test_defaults_for_run_and_duration():
    df = make_judgments(seed=7).drop(columns=["run", "duration_s"])
    res = A.analyze(df)
    assert set(res.systems["run"]) == {1}
    with_run = A.analyze(df.assign(run=1))
    pd.testing.assert_frame_equal(res.systems, with_run.systems)


# ---------------------------------------------------------------------------------------------
# input errors

HEADER = "worker_id,hit_id,modality,system,segment_id,item_type,score"


def write(tmp_path, text, name="j.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    "body,row,column,words",
    [
        ("worker_id,hit_id,modality,system,segment_id,score\nw,h,text,A,1,50\n", 1, "item_type", "missing column"),
        (HEADER + "\nw,h,text,A,1,system,50\nw,h,video,A,2,system,50\n", 3, "modality", "unknown modality"),
        (HEADER + "\nw,h,text,A,1,system,50\nw,h,text,A,2,repeat,50\n", 3, "item_type", "unknown item_type"),
        (HEADER + "\nw,h,text,A,1,system,fifty\n", 2, "score", "not a number"),
        (HEADER + "\nw,h,text,A,1,system,50\nw,h,text,A,1,system,\n", 3, "score", "not a number"),
        (
            HEADER + "\nw,h,text,A,1,system,50\nw,h,text,A,2,system,100\nw,h,audio,A,3,system,100.5\n",
            4,
            "score",
            "outside 0-100",
        ),
        (HEADER + "\nw,h,text,A,1,system,-1\n", 2, "score", "outside 0-100"),
        (HEADER + ",run\nw,h,text,A,1,system,5,two\n", 2, "run", "run"),
        (HEADER + ",duration_s\nw,h,text,A,1,system,5,-3\n", 2, "duration_s", "duration_s"),
        (HEADER + "\n,h,text,A,1,system,5\n", 2, "worker_id", "empty"),
    ],
)
def test_input_errors_name_file_row_column(tmp_path, body, row, column, words):
    p = write(tmp_path, body)
    with pytest.raises(A.DAInputError) as e:
        A.read_judgments(p)
    assert isinstance(e.value, ValueError)
    msg = str(e.value)
    assert str(p) in msg and f"row {row}" in msg and f"'{column}'" in msg and words in msg
    assert (e.value.row, e.value.column) == (row, column)


def test_read_judgments_reads_a_good_file(tmp_path):
    p = write(
        tmp_path, HEADER + ",run,duration_s\nw1,h1, Text ,A,007,system,50,2,3.5\nw1,h1,text,A,8,bad_reference,20,,\n"
    )
    df = A.read_judgments(p)
    assert df["segment_id"].tolist() == ["007", "8"] and df["modality"].tolist() == ["text", "text"]
    assert df["run"].tolist() == [2, 1] and df["score"].dtype == float
    assert math.isnan(df["duration_s"].iloc[1])
    assert list(df.columns) == A.REQUIRED + ["run", "duration_s"]


# ---------------------------------------------------------------------------------------------
# outputs


def test_write_outputs_files_and_columns(tmp_path, result):
    paths = A.write_outputs(result, tmp_path / "out")
    names = {p.name for p in paths}
    assert {
        "workers.csv",
        "systems.csv",
        "head_to_head.csv",
        "replication.csv",
        "qc_summary.csv",
        "ranking.html",
        "head_to_head.html",
        "replication.html",
    } <= names
    assert all(p.exists() and p.stat().st_size > 0 for p in paths)
    expected = {
        "workers": [
            "modality",
            "run",
            "worker_id",
            "n_judgments",
            "n_bad_pairs",
            "n_repeat_pairs",
            "p_value",
            "reliable",
        ],
        "systems": ["modality", "run", "system", "n_judgments", "raw_mean", "z_mean", "rank", "cluster"],
        "head_to_head": ["modality", "run", "system_a", "system_b", "z_diff", "p_value", "n_a", "n_b"],
        "replication": ["comparison", "r", "n"],
        "qc_summary": ["modality", "workers_total", "workers_reliable", "judgments_total", "judgments_kept"],
    }
    for name, cols in expected.items():
        back = pd.read_csv(tmp_path / "out" / f"{name}.csv")
        assert list(back.columns)[: len(cols)] == cols
        assert len(back) == len(getattr(result, name))
    html = (tmp_path / "out" / "head_to_head.html").read_text()
    assert "<html>" in html and "plotly" in html.lower() and "*" in html


@pytest.mark.slow
def test_figures_stars_and_keys(result):
    figs = A.figures(result)
    assert set(figs) == {"score_distribution", "ranking", "head_to_head", "replication"}
    heat = figs["head_to_head"].data[0]
    h = result.head_to_head
    first = h[(h.modality == "text") & (h.run == 1)]
    cells = [t for row in heat.text for t in row]
    for p, zd in zip(first.p_value, first.z_diff):
        stars = "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""
        assert f"{zd:.2f}{stars}" in cells
    assert "replication" not in A.figures(A.analyze(make_judgments(seed=5)))


@pytest.mark.slow
def test_run_cli_on_project_csv(tmp_path):
    df = make_judgments(seed=8)
    src = tmp_path / "judgments.csv"
    df.to_csv(src, index=False)
    text = A.run_cli(src, tmp_path / "out", alpha=0.05)
    ranked = A.analyze(df).systems.sort_values("rank")
    first = ranked.iloc[0]
    assert f"1. {first.system}" in text and f"{first.z_mean:+.3f}" in text
    assert (tmp_path / "out" / "systems.csv").exists()
    assert A.detect_format(src) == "csv"


def test_run_cli_rejects_unknown_format(tmp_path):
    p = write(tmp_path, "a;b;c\n1;2;3\n")
    with pytest.raises(A.DAInputError, match="unrecognised format"):
        A.run_cli(p, tmp_path / "out")


# ---------------------------------------------------------------------------------------------
# WMT22 official numbers (real data, read in place when present)


@pytest.mark.slow
@pytest.mark.skipif(not (WMT_DIR / "ad-deen-good-raw-reconstructed.tsv").exists(), reason="WMT22 data not present")
def test_wmt22_official_scores_reproduced():
    spec = importlib.util.spec_from_file_location("wmt22_validate", ROOT / "benchmarks" / "da" / "wmt22_validate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    v = mod.validate(WMT_DIR)
    assert len(v["table"]) == 10
    assert (v["table"]["diff"].abs() <= 0.001).all(), v["table"]
    assert v["ranking_identical"], (v["ranking_ours"], v["ranking_official"])
    assert v["ok"]


def test_no_reliable_worker_gives_empty_tables(tmp_path):
    df = make_judgments(seed=9, workers=3, unreliable=3)
    res = A.analyze(df, alpha=1e-12)
    assert res.systems.empty and res.head_to_head.empty and res.replication.empty
    assert res.qc_summary.loc[0, "workers_reliable"] == 0 and res.qc_summary.loc[0, "judgments_kept"] == 0
    paths = A.write_outputs(res, tmp_path)
    assert {p.name for p in paths} >= {"workers.csv", "systems.csv", "qc_summary.csv"}
    assert list(pd.read_csv(tmp_path / "systems.csv").columns)[:8] == A.SYSTEM_COLUMNS[:8]
    assert "no system scores" in A.summary(res)
