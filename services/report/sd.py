"""Paper 002's results from a stored SD study, in the paper's order: the data cleansing (section
4.1, in the text: no table number), the scree plot (4.2, in the text), Table 1 (4.2: the pairs'
loadings on the factors and each factor's share of variance) and Table 2 (the final list of pairs
and those removed during the factor analysis). Loadings to two decimals, shares of variance in
percent to one (as the text: "F1 explains 53.2% of the variance")."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from services.common.vocabulary import count
from services.report.sections import Part, fill
from services.sd import analysis as sd_analysis
from services.sd import study_analysis as sd_study

TITLE = "Semantic differential (paper 002)"
ITEMS = [
    (
        "Section 4.1",
        "Data cleansing per step (too fast, straight-lining, inconsistency), beside the paper's "
        "figure (6,800 of 21,000 ratings removed).",
        "4.1",
    ),
    ("Section 4.2", "Scree plot with the parallel-analysis criterion (K chosen by the rule in the notes).", "4.2"),
    (
        "Table 1",
        "Distribution of the adjective pairs on the factors (pattern loadings after promax rotation, "
        "communality) and the share of variance each factor explains (last row, %).",
        "4.2",
    ),
    (
        "Table 2",
        "Group 1: the final list of adjective pairs loading on the factors; group 2: the pairs removed "
        "during the factor analysis, with the step and reason; group 3: the pairs removed after the "
        "preliminary study (its suitability ratings, section 3.1).",
        "3.1, 4.2",
    ),
]
NO_PRELIMINARY = (
    "Table 2 has no group 3: this study has no suitability ratings (a study run with sd.mode = "
    '"preliminary" has them, and its report lists the pairs they removed: mean suitability under '
    "3.2 or sd over 1.2, section 3.1). Paper 002's Table 2 lists the 18 of its 38 pairs removed after "
    "its preliminary study."
)
DECIMALS = {"Section 4.1": 3}
NO_DATA = "No SD ratings yet: this fills once participants have rated the study's sentences."


def table1(loadings: pd.DataFrame, variance: pd.DataFrame) -> pd.DataFrame:
    kept = loadings[loadings["kept"].astype(bool)].drop(columns=["kept"])
    share = {
        "pair_id": "variance explained (%)",
        **{f: 100 * s for f, s in zip(variance["factor"], variance["rotated_share"])},
    }
    return pd.concat([kept, pd.DataFrame([share])], ignore_index=True)


def table2(efa, suitability: pd.DataFrame | None = None) -> pd.DataFrame:
    """Paper 002's Table 2: group 1 the pairs kept by the factor analysis, group 2 those it removed,
    group 3 those the preliminary study's suitability filter removed (sd_analysis.suitability_filter;
    issue 50, point 6). efa None: group 3 alone."""
    rows = []
    if efa is not None:
        rows += [{"group": "1: final", "pair_id": p, "step": None, "reason": ""} for p in efa.items]
        rows += [
            {"group": "2: removed", "pair_id": s["item"], "step": s["step"], "reason": s["reason"]} for s in efa.pruned
        ]
    if suitability is not None:
        rows += [
            {
                "group": "3: removed after the preliminary study",
                "pair_id": r.pair_id,
                "step": None,
                "reason": f"suitability mean {r.mean:.2f}, sd {r.sd:.2f} over {r.n} ratings (kept: mean >= "
                f"{sd_analysis.SUITABILITY_MIN_MEAN:g} and sd <= {sd_analysis.SUITABILITY_MAX_SD:g})",
            }
            for r in suitability[~suitability["kept"]].itertuples()
        ]
    return pd.DataFrame(rows, columns=["group", "pair_id", "step", "reason"])


def build(
    database,
    study_id: str,
    out_dir: Path,
    n_factors: int | None = None,
    prune: bool = True,
    factor_rule: str | None = None,
) -> Part:
    """Paper 002's part; the defaults are the paper's (as the tab's): K by eigenvalue > 1, pruning on."""
    part = Part("sd", TITLE)
    done = sd_study.analyse(database, study_id, n_factors, prune, factor_rule or sd_analysis.FACTOR_RULE)
    part.detail = done
    if isinstance(done, str):
        part.summary = done.replace(" (pick the study above and press Show first)", "")
        part.sections = fill(ITEMS, {}, NO_DATA)
        return part
    res = done.result
    efa_missing = f"The factor analysis did not run: {res.efa_error}" if res.efa is None else None
    content = {
        "Section 4.1": done.cleansing_report,
        "Section 4.2": done.figures.get("scree", efa_missing),
        "Table 1": table1(done.loadings, sd_analysis.variance_table(res)) if res.efa is not None else efa_missing,
        "Table 2": table2(res.efa, done.suitability)
        if res.efa is not None or done.suitability is not None
        else efa_missing,
    }
    part.sections = fill(ITEMS, content, NO_DATA, DECIMALS)
    part.summary = (
        f"{count(res.n_participants, 'participant')}, {res.n_kept} kept after cleansing; {res.n_ratings} "
        f"ratings, {res.n_ratings_kept} kept."
    )
    e = res.efa
    if e is not None:  # how K was chosen and whether pairs were pruned: the defaults a reader checks first
        pruning = (
            f"pruning (section 4.2): {len([x for x in e.pruned if x['step']])} pair(s) removed"
            if e.prune
            else "pruning off (paper 002 pruned, section 4.2)"
        )
        part.summary += f" EFA: {e.n_factors} factor(s) ({e.n_factors_source}); {pruning}."
    part.notes = list(res.efa.notes) if res.efa is not None else []
    if done.suitability is None:
        part.notes.append(NO_PRELIMINARY)
    part.files = sd_analysis.write_outputs(res, Path(out_dir) / "sd", png=False)
    return part


def section(database, study_id: str, out_dir: Path, inputs) -> Part:
    """The report's call (services/common/protocols.py, Protocol.report_section): the defaults."""
    return build(database, study_id, out_dir)
