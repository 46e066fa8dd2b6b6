"""The side-by-side part of the study report (issue 54, point 1): the systems ranked by their
Bradley-Terry strengths with bootstrap intervals and clusters, TrueSkill beside them (and the mean
score and z in score mode), the pairwise win rates with their binomial tests, the position bias,
and the defaults with their sources. The figures are services/compare/analysis.py's, the same the
Analysis tab's panel shows and `app.py analyze sxs` prints (docs/side-by-side.md)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from services.common.analysis_output import write_tables
from services.compare import analysis, study_analysis
from services.compare.corpus import NAME
from services.report.sections import Part, fill
from storage import studies

TITLE = "Side-by-side comparison"
ITEMS = [
    (
        "Table 1",
        "Systems ranked by their Bradley-Terry strength (log scale, centred on 0) from every answer's "
        "pairwise outcomes, with the 95% bootstrap interval (1,000 resamples of items), the significance "
        "cluster, TrueSkill's mu, sigma and mu - 3 sigma, and in score mode the mean score and mean z.",
        "",
    ),
    (
        "Table 2",
        "Pairwise win rates: each pair's wins, losses and ties, the first system's share of the decisive "
        "judgments and the two-sided exact binomial test against 0.5.",
        "",
    ),
    (
        "Table 3",
        "Position bias: how often the output shown first (left, or on top) won a decisive comparison, "
        "with the exact binomial test against 0.5.",
        "",
    ),
    ("Table 4", "The analysis's defaults and where they come from.", ""),
    (
        "Table 5",
        "Agreement between the annotators of the same item, at the answers' level of measurement "
        "(scores: interval; preferences: nominal; places and best-worst: ordinal): Krippendorff's alpha "
        "on the units two or more annotators answered, Cohen's or Fleiss' kappa for categories, the "
        "intraclass correlations for scores (on the units every annotator answered), each with the units "
        "and values it rests on, or why it could not be computed.",
        "",
    ),
    (
        "Table 6",
        "Each annotator against the rest: Krippendorff's alpha between the annotator and the others' "
        "consensus on the units both cover, and the study's alpha without the annotator.",
        "",
    ),
]
ABX_NO_WINS = (
    "an ABX test asks which of A and B the recording X is, not which is better: Table 1 has, per pair of "
    "systems, how often the annotators told X right, with the one-sided binomial test against chance"
)
DECIMALS = {"Table 1": 3, "Table 2": 3, "Table 3": 3, "Table 5": 3, "Table 6": 3}
NO_DATA = "No side-by-side answers yet: this fills once annotators have answered items of the study."
NOT_LISTED = f"This study has no {NAME} part (study.protocols)."
DEFAULTS = pd.DataFrame(
    [
        ("outcomes", "score: higher score wins, equal ties; prefer: the choice; rank: the better place; "
         "best-worst: best beats each other, each other beats worst", "docs/side-by-side.md"),
        ("Bradley-Terry", "choix's ILSR, a tie half a win each, alpha 0.01", "Bradley and Terry (1952)"),
        ("intervals", "1,000 bootstrap resamples of items, seed 0, 95% percentile", "Efron and Tibshirani (1993)"),
        ("clusters", "bootstrap p < 0.05 between every system above and below", "WMT's clusters"),
        ("TrueSkill", "the package's defaults, outcomes in a seeded order, ranked by mu - 3 sigma",
         "Herbrich, Minka and Graepel (2006)"),
        ("win rates", "ties left out, two-sided exact binomial test", "the sign test"),
        ("z-scores", "per annotator over all their scores, sample sd; none where the scores do not vary", "WMT's DA"),
        ("positions", "each item's systems in a seeded order rotated per annotator (Latin square rows)",
         "docs/side-by-side.md"),
        ("agreement", "Krippendorff's alpha (krippendorff); Cohen's / Fleiss' kappa (statsmodels); ICC (pingouin)",
         "Krippendorff (2011); Cohen (1960); Fleiss (1971); Shrout and Fleiss (1979)"),
    ],
    columns=["setting", "value", "source"],
)  # fmt: skip


def systems_table(res: analysis.Results) -> pd.DataFrame:
    """Table 1: the ranking with TrueSkill's columns and, in score mode, the mean score and z."""
    ts = res.trueskill.rename(columns={"n": "comparisons"})
    table = res.ranking.merge(ts, on="system", how="left")
    if len(res.scores):
        table = table.merge(
            res.scores.rename(columns={"n": "scores", "mean": "mean_score", "z": "mean_z"}), on="system"
        )
    return table


def build(database, study_id: str, out_dir: Path, n_boot: int = 1000) -> Part:
    """The part; part.detail is the Results (or the sentence saying why there are none)."""
    part = Part(NAME, TITLE)
    content: dict = {"Table 4": DEFAULTS}
    study = studies.get_study(database, study_id)
    listed = study is not None and NAME in (study["config"].get("study", {}).get("protocols") or [])
    answers, ratings = study_analysis.stored_frames(database, study_id) if listed else (pd.DataFrame(), None)
    if answers.empty:
        why = NO_DATA if listed else NOT_LISTED
        part.detail = part.summary = why
        part.sections = fill(ITEMS, content, why, DECIMALS)
        return part
    res = analysis.results(answers, ratings, n_boot=n_boot)
    part.detail = res
    if res.mode == "abx":  # Table 1 is how well X was told apart; there are no wins to rank
        content["Table 1"] = res.abx
        content["Table 2"] = content["Table 3"] = ABX_NO_WINS
    else:
        content["Table 1"] = systems_table(res)
        content["Table 2"] = res.win_rates
        content["Table 3"] = pd.DataFrame([res.bias])
    if res.agreement is not None:
        content["Table 5"] = res.agreement.study
        content["Table 6"] = (
            res.agreement.per_annotator if len(res.agreement.per_annotator) else "one annotator: no one to compare"
        )
    part.sections = fill(ITEMS, content, NO_DATA, DECIMALS)
    first, *rest = res.lines()
    part.summary = first
    part.notes = rest[-2:] if res.mode != "abx" else rest  # the position bias (or ABX's pairs), the agreement
    folder = Path(out_dir) / NAME
    folder.mkdir(parents=True, exist_ok=True)
    part.files = write_tables(folder, res.tables())
    return part


def section(database, study_id: str, out_dir: Path, inputs) -> Part:
    """The report's call (Protocol.report_section): the defaults."""
    return build(database, study_id, out_dir)
