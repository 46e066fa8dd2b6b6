"""Check services.da.analysis against WMT22's published German->English crowd DA results.

    .venv/bin/python benchmarks/da/wmt22_validate.py [FOLDER]

FOLDER defaults to ../shared/data/wmt22-deen-da next to the repository. The script converts
ad-deen-good-raw-reconstructed.tsv, runs analyze(wmt=True) and compares every system's z_mean
with Z.SCR in ad-sys-scores-de-en.csv, and our ranking with the official one. It exits 1 when
any |diff| > 0.001 or the ranking differs, 0 when all agree or when the folder is absent.

Also printed, for information only (they do not change the exit status):
* head-to-head significance on segment mean z (h2h_level="segment", WMT's unit) against
  adwilcox-deen.csv, and the clusters against clusters.csv;
* the worker check: WMT's paired t-test (reliability="paired_t") against ad-trk-stats.csv for
  the workers whose pooled test used exactly their de-en pairs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from services.da.analysis import analyze  # noqa: E402
from services.da.importer import from_wmt_tsv, wmt_system_name  # noqa: E402

DEFAULT = ROOT.parent / "shared" / "data" / "wmt22-deen-da"
TOLERANCE = 0.001
JUDGMENTS = "ad-deen-good-raw-reconstructed.tsv"


def _square(path: Path) -> dict[tuple[str, str], float]:
    """adwilcox-deen.csv: a whitespace-separated matrix of p-values (row beats column)."""
    lines = [ln.split() for ln in path.read_text().splitlines() if ln.strip()]
    cols = [wmt_system_name(c) for c in lines[0]]
    return {(wmt_system_name(row[0]), b): float(v) for row in lines[1:] for b, v in zip(cols, row[1:])}


def validate(folder: Path) -> dict:
    """Compare with the official files; returns the tables and verdicts (see module doc)."""
    folder = Path(folder)
    df = from_wmt_tsv(folder / JUDGMENTS)
    res = analyze(df, wmt=True, source=str(folder / JUDGMENTS))
    official = pd.read_csv(folder / "ad-sys-scores-de-en.csv", sep=r"\s+")
    official["system"] = official["SYS"].map(wmt_system_name)
    ours = res.systems[["system", "z_mean", "raw_mean", "rank"]]
    table = ours.merge(official[["system", "Z.SCR", "RAW.SCR"]], on="system", how="outer")
    table = table.rename(columns={"z_mean": "ours", "Z.SCR": "official"})
    table["diff"] = table["ours"] - table["official"]
    table["official_rank"] = table["official"].rank(ascending=False, method="first")
    table = table.sort_values("official", ascending=False).reset_index(drop=True)
    ranking_ours = ours.sort_values("rank")["system"].tolist()
    ranking_official = table["system"].tolist()
    max_diff = float(table["diff"].abs().max())
    ok = bool(table["diff"].notna().all() and max_diff <= TOLERANCE and ranking_ours == ranking_official)
    out = {
        "table": table,
        "max_abs_diff": max_diff,
        "ranking_ours": ranking_ours,
        "ranking_official": ranking_official,
        "ranking_identical": ranking_ours == ranking_official,
        "ok": ok,
        "result": res,
    }

    wilcox = folder / "adwilcox-deen.csv"
    if wilcox.exists():
        seg = analyze(df, wmt=True, h2h_level="segment")
        p_off = _square(wilcox)  # non-significant cells are written as 0.12
        h = seg.head_to_head
        agree = sum((p < 0.05) == (p_off[(a, b)] < 0.05) for a, b, p in zip(h["system_a"], h["system_b"], h["p_value"]))
        sig = [
            (a, b, p, p_off[(a, b)])
            for a, b, p in zip(h["system_a"], h["system_b"], h["p_value"])
            if p_off[(a, b)] < 0.05
        ]
        out["significance"] = {
            "pairs": len(h),
            "agree": agree,
            "max_abs_p_diff_where_official_significant": max((abs(p - q) for _, _, p, q in sig), default=0.0),
        }
        out["judgment_level_agree"] = sum(
            (p < 0.05) == (p_off[(a, b)] < 0.05)
            for a, b, p in zip(res.head_to_head["system_a"], res.head_to_head["system_b"], res.head_to_head["p_value"])
        )
        clusters = folder / "clusters.csv"
        if clusters.exists():
            c = pd.read_csv(clusters, sep=r"\s+")
            c = c[(c["SRC"] == "de") & (c["TRG"] == "en")]
            starts = sorted(c["CLUSTER_START"].unique())
            off_cluster = {wmt_system_name(s): starts.index(st) + 1 for s, st in zip(c["SYSTEM"], c["CLUSTER_START"])}
            ours_cluster = dict(zip(seg.systems["system"], seg.systems["cluster"]))
            out["clusters"] = {
                "official": off_cluster,
                "ours_segment_level": ours_cluster,
                "ours_judgment_level": dict(zip(res.systems["system"], res.systems["cluster"])),
                "identical": all(ours_cluster.get(s) == k for s, k in off_cluster.items()),
            }

    trk = folder / "ad-trk-stats.csv"
    if trk.exists():
        t = pd.read_csv(trk, sep=r"\s+", header=None, names=["worker_id", "p", "t", "n"])
        w = analyze(df, wmt=True, reliability="paired_t").workers.merge(t, on="worker_id")
        alone = w[w["n"] == w["n_bad_pairs"]]  # the pooled test used only de-en pairs
        out["workers"] = {
            "matched": len(w),
            "de_en_only": len(alone),
            "p_equal_1e-6": int(((alone["p_value"] - alone["p"]).abs() < 1e-6).sum()),
            "rank_sum_reliable": int(res.workers["reliable"].sum()),
            "paired_t_reliable": int((w["p_value"] < 0.05).sum()),
        }
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", default=str(DEFAULT))
    args = ap.parse_args(argv)
    folder = Path(args.folder)
    if not (folder / JUDGMENTS).exists():
        print(f"WMT22 data not found at {folder}: nothing to validate (skipped).")
        return 0
    v = validate(folder)
    t = v["table"]
    print(f"{'system':<18} {'ours':>10} {'official':>10} {'diff':>11}  rank ours/official")
    for r in t.itertuples():
        print(
            f"{r.system:<18} {r.ours:>10.6f} {r.official:>10.6f} {r.diff:>+11.2e}  {r.rank:.0f}/{r.official_rank:.0f}"
        )
    print(f"max |diff| = {v['max_abs_diff']:.6f} (tolerance {TOLERANCE}); ranking identical: {v['ranking_identical']}")
    if "significance" in v:
        s = v["significance"]
        print(
            f"[info] head-to-head p < 0.05 on segment mean z agrees with adwilcox-deen.csv for {s['agree']}/"
            f"{s['pairs']} ordered pairs (max |p diff| where official is significant "
            f"{s['max_abs_p_diff_where_official_significant']:.4f}); on judgments (the default) "
            f"{v['judgment_level_agree']}/{s['pairs']}"
        )
    if "clusters" in v:
        c = v["clusters"]
        print(
            f"[info] clusters (segment level) identical to clusters.csv: {c['identical']}; "
            f"judgment-level clusters: {sorted(set(c['ours_judgment_level'].values()))}"
        )
    if "workers" in v:
        w = v["workers"]
        print(
            f"[info] worker check: WMT's paired t-test p equals ad-trk-stats.csv for {w['p_equal_1e-6']}/"
            f"{w['de_en_only']} workers whose pooled test used only de-en pairs; of the 151 workers "
            f"WMT kept, {w['rank_sum_reliable']} pass the paper's rank-sum test and "
            f"{w['paired_t_reliable']} the paired t-test at p < 0.05 on de-en alone"
        )
    if not v["ok"]:
        print("FAIL: WMT22 official system scores or ranking not reproduced")
        return 1
    print("OK: WMT22 de-en system z-scores and ranking reproduced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
