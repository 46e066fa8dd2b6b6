"""The side-by-side analysis (docs/side-by-side.md), from the exported rows (or the stored ones
in the same shape): every answer becomes pairwise outcomes, oriented by position (system_a the
output shown first), and services/common/comparison.py gives the win rates with their binomial
tests, the Bradley-Terry strengths with bootstrap intervals and clusters, and TrueSkill.

* score mode: each pair of an answer's outputs, the higher score winning (equal scores a tie);
  per system also the mean score and the mean z (each annotator's scores standardised by their
  own mean and standard deviation, WMT's DA z; an annotator whose scores do not vary is left out
  of the z);
* prefer mode: the pair shown, the preferred system winning (or a tie);
* rank mode by order: each pair, the better placed winning; by best-worst: the best beats every
  other shown and every other beats the worst (comparison.best_worst_to_outcomes' rule), with the
  best-worst counting scores beside;
* position bias: of the decisive outcomes, the share the output shown first won, with the exact
  binomial test against 0.5 (counterbalanced positions make 0.5 the rate of an unbiased annotator);
* abx mode: per pair of systems, the trials, how many the annotators got right (said X was the
  system it was), the share and the one-sided exact binomial test against 0.5 (a share above
  chance: listeners tell the two apart), and how often they said "A" (a bias to the first);
* agreement between the annotators of the same item (annotators_per_item), at the answer's level
  of measurement (agreement_ratings: scores interval, an item's system, each with its score;
  preferences nominal, an item, the system preferred or a tie; places ordinal, an item's system,
  its place; best-worst ordinal, an item's system, +1 best, -1 worst, 0 neither):
  services/common/reliability.agreement_report (Krippendorff's alpha; Cohen's or Fleiss' kappa
  for categories; the ICCs for scores; each annotator against the rest)."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field

import pandas as pd
from scipy import stats

from services.common import comparison, reliability
from services.common.vocabulary import count

OUTCOME_COLUMNS = [*comparison.OUTCOME_COLUMNS, "first"]  # first: the system shown first of the two


def _shown(v) -> list[str]:
    return json.loads(v) if isinstance(v, str) else list(v)


def outcomes(answers: pd.DataFrame, ratings: pd.DataFrame) -> pd.DataFrame:
    """The pairwise outcomes of every answer (module docstring), one row per pair, system_a the
    one shown first."""
    rows = []
    by_answer = {a: g.sort_values("position") for a, g in ratings.groupby("assignment_id")} if len(ratings) else {}
    for a in answers.itertuples(index=False):
        shown = _shown(a.shown)
        item, who = a.item_id, a.participant
        if a.mode == "prefer":
            rows.append((item, who, shown[0], shown[1], a.preferred or comparison.TIE))
        elif a.mode == "rank" and a.best:
            for s in shown:
                if s != a.best:
                    rows.append((item, who, *_pair(shown, a.best, s), a.best))
                if s not in (a.best, a.worst):
                    rows.append((item, who, *_pair(shown, s, a.worst), s))
        else:
            g = by_answer.get(a.assignment_id)
            if g is None:
                continue
            column = "score" if a.mode == "score" else "rank"
            values = list(zip(g["system"], pd.to_numeric(g[column])))
            for (s1, v1), (s2, v2) in itertools.combinations(values, 2):
                if pd.isna(v1) or pd.isna(v2):
                    continue
                better = v1 > v2 if a.mode == "score" else v1 < v2
                winner = comparison.TIE if v1 == v2 else (s1 if better else s2)
                rows.append((item, who, s1, s2, winner))
    out = pd.DataFrame(rows, columns=comparison.OUTCOME_COLUMNS)
    out["first"] = out["system_a"]
    return out


def _pair(shown: list[str], x: str, y: str) -> tuple[str, str]:
    return (x, y) if shown.index(x) < shown.index(y) else (y, x)


def position_bias(outs: pd.DataFrame) -> dict:
    """Of the decisive outcomes, how many the output shown first won, its share and the exact
    two-sided binomial test against 0.5."""
    decisive = outs[outs["winner"] != comparison.TIE]
    n, first = len(decisive), int((decisive["winner"] == decisive["first"]).sum())
    return {
        "decisive": n,
        "first_wins": first,
        "first_rate": first / n if n else math.nan,
        "p_value": float(stats.binomtest(first, n, 0.5).pvalue) if n else math.nan,
        "ties": int(len(outs) - n),
    }


def score_means(ratings: pd.DataFrame) -> pd.DataFrame:
    """Score mode: per system the judgments, mean score and mean z (module docstring)."""
    r = ratings.assign(score=pd.to_numeric(ratings["score"])).dropna(subset=["score"])
    grouped = r.groupby("participant")["score"]
    sd = grouped.transform("std")
    r = r.assign(z=(r["score"] - grouped.transform("mean")) / sd.where(sd > 0))
    table = r.groupby("system").agg(n=("score", "size"), mean=("score", "mean"), z=("z", "mean")).reset_index()
    return table.sort_values(["mean", "system"], ascending=[False, True], kind="stable").reset_index(drop=True)


LEVELS = {"score": "interval", "prefer": "nominal", "order": "ordinal", "best_worst": "ordinal", "abx": "nominal"}
ABX_COLUMNS = ["system_a", "system_b", "trials", "correct", "rate", "p_value", "said_a", "annotators"]


def abx_table(answers: pd.DataFrame) -> pd.DataFrame:
    """ABX (module docstring): one row per pair of systems (in name order) and one for all."""

    def row(a: str, b: str, g: pd.DataFrame) -> tuple:
        n, right = len(g), int((g["preferred"] == g["x"]).sum())
        said_a = int(sum(p == _shown(sh)[0] for p, sh in zip(g["preferred"], g["shown"])))
        p = float(stats.binomtest(right, n, 0.5, alternative="greater").pvalue) if n else math.nan
        rate, a_rate = (right / n, said_a / n) if n else (math.nan, math.nan)
        return (a, b, n, right, rate, p, a_rate, g["participant"].nunique())

    pairs = answers["shown"].map(lambda v: tuple(sorted(_shown(v))))
    rows = [row(a, b, g) for (a, b), g in answers.groupby(pairs, sort=True)]
    if len(rows) > 1:
        rows.append(row("all", "", answers))
    return pd.DataFrame(rows, columns=ABX_COLUMNS)


def agreement_ratings(answers: pd.DataFrame, ratings: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """One row per (unit, annotator, value) for the agreement, and its level (module docstring)."""
    mode = str(answers["mode"].iloc[0])
    rows: list[tuple] = []
    if mode == "abx":  # whether each annotator told X right (X differs between annotators)
        for a in answers.itertuples(index=False):
            rows.append((str(a.item_id), a.participant, int(a.preferred == a.x)))
        return pd.DataFrame(rows, columns=["unit", "annotator", "value"]), LEVELS["abx"]
    if mode == "prefer":
        for a in answers.itertuples(index=False):
            rows.append((str(a.item_id), a.participant, a.preferred or comparison.TIE))
        return pd.DataFrame(rows, columns=["unit", "annotator", "value"]), LEVELS["prefer"]
    if mode == "rank" and (answers["best"].astype(str) != "").all():
        for a in answers.itertuples(index=False):
            for s in _shown(a.shown):
                rows.append((f"{a.item_id}\t{s}", a.participant, 1 if s == a.best else -1 if s == a.worst else 0))
        return pd.DataFrame(rows, columns=["unit", "annotator", "value"]), LEVELS["best_worst"]
    column = "score" if mode == "score" else "rank"
    item = dict(zip(answers["assignment_id"], answers["item_id"]))
    r = ratings.assign(value=pd.to_numeric(ratings[column], errors="coerce")).dropna(subset=["value"])
    r = r[r["assignment_id"].isin(item)]
    units = [f"{item[a]}\t{s}" for a, s in zip(r["assignment_id"], r["system"])]
    frame = pd.DataFrame({"unit": units, "annotator": r["participant"].to_numpy(), "value": r["value"].to_numpy()})
    return frame, LEVELS["score" if mode == "score" else "order"]


@dataclass
class Results:
    mode: str
    n_answers: int
    n_annotators: int
    outcomes: pd.DataFrame
    ranking: pd.DataFrame
    pairs: pd.DataFrame
    trueskill: pd.DataFrame
    win_rates: pd.DataFrame
    bias: dict
    scores: pd.DataFrame = field(default_factory=pd.DataFrame)
    best_worst: pd.DataFrame = field(default_factory=pd.DataFrame)
    agreement: reliability.AgreementReport | None = None
    abx: pd.DataFrame = field(default_factory=pd.DataFrame)  # abx mode: abx_table

    def agreement_line(self) -> str:
        """The agreement's summary: alpha and the other statistic at the answers' level, on how
        many items two or more annotators answered; or why there is none."""
        ag = self.agreement
        if ag is None:
            return "agreement: none computed"
        rows = ag.study.set_index("statistic")
        alpha = rows.loc["krippendorff_alpha"]
        if math.isnan(alpha["value"]):
            return f"agreement: none ({alpha['note'] or 'nothing to compare'})"
        words = f"agreement ({ag.level}): Krippendorff's alpha {alpha['value']:.3f} on {int(alpha['n_units'])} unit(s)"
        for name, label in (("cohen_kappa", "Cohen's kappa"), ("fleiss_kappa", "Fleiss' kappa"), ("ICC2", "ICC(A,1)")):
            if name in rows.index and not math.isnan(rows.loc[name, "value"]):
                words += f", {label} {rows.loc[name, 'value']:.3f}"
        return words

    def tables(self) -> dict[str, pd.DataFrame]:
        out = {
            "systems.csv": self.ranking,
            "bootstrap_pairs.csv": self.pairs,
            "trueskill.csv": self.trueskill,
            "win_rates.csv": self.win_rates,
            "outcomes.csv": self.outcomes,
            "position_bias.csv": pd.DataFrame([self.bias]),
        }
        if len(self.scores):
            out["scores.csv"] = self.scores
        if len(self.best_worst):
            out["best_worst.csv"] = self.best_worst
        if self.mode == "abx":
            out = {"abx.csv": self.abx}
        if self.agreement is not None:
            out["agreement.csv"] = self.agreement.study
            out["agreement_annotators.csv"] = self.agreement.per_annotator
        return out

    def lines(self) -> list[str]:
        out = [f"{count(self.n_answers, 'answer')} by {count(self.n_annotators, 'annotator')}, mode {self.mode}"]
        if self.mode == "abx":
            for r in self.abx.itertuples(index=False):
                pair = "all pairs" if r.system_a == "all" else f"{r.system_a} vs {r.system_b}"
                out.append(
                    f"{pair}: X told right in {r.correct} of {r.trials} ({r.rate:.1%}), "
                    f"one-sided binomial p = {r.p_value:.3g}; 'A' said in {r.said_a:.0%}"
                )
            out.append(self.agreement_line())
            return out
        for r in self.ranking.itertuples(index=False):
            interval = f"[{r.low:+.3f}, {r.high:+.3f}]"
            out.append(f"{r.rank}. {r.system}: Bradley-Terry {r.strength:+.3f} {interval}, cluster {r.cluster}")
        b = self.bias
        out.append(
            f"position bias: the first shown won {b['first_wins']} of {b['decisive']} decisive comparisons"
            + (f" ({b['first_rate']:.1%}, binomial p = {b['p_value']:.3g})" if b["decisive"] else "")
        )
        out.append(self.agreement_line())
        return out


def results(answers: pd.DataFrame, ratings: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0) -> Results:
    """The whole analysis of one study's answers (one mode)."""
    if answers.empty:
        raise ValueError("no side-by-side answers to analyse")
    modes = sorted(set(answers["mode"]))
    if len(modes) != 1:
        raise ValueError(f"the answers mix modes {', '.join(modes)}: analyse one mode at a time")
    if modes[0] == "abx":  # no pairwise outcomes between systems: how well X is told apart
        if "x" not in answers:
            raise ValueError("abx answers need their x column (the system X was)")
        units, level = agreement_ratings(answers, ratings)
        empty = pd.DataFrame()
        return Results(
            mode="abx", n_answers=len(answers), n_annotators=answers["participant"].nunique(),
            outcomes=empty, ranking=empty, pairs=empty, trueskill=empty, win_rates=empty, bias={},
            agreement=reliability.agreement_report(units, level), abx=abx_table(answers),
        )  # fmt: skip
    outs = outcomes(answers, ratings)
    if outs.empty:
        raise ValueError("the answers give no pairwise comparison")
    ranking, pairs = comparison.bradley_terry_ranking(outs, n_boot=n_boot, seed=seed)
    extra: dict = {}
    if modes[0] == "score":
        extra["scores"] = score_means(ratings)
    if modes[0] == "rank" and (answers["best"].astype(str) != "").all():
        trials = answers.assign(
            item=answers["item_id"], annotator=answers["participant"], shown=answers["shown"].map(_shown)
        )
        extra["best_worst"] = comparison.best_worst_scores(trials)
    units, level = agreement_ratings(answers, ratings)
    extra["agreement"] = reliability.agreement_report(units, level)
    return Results(
        mode=modes[0],
        n_answers=len(answers),
        n_annotators=answers["participant"].nunique(),
        outcomes=outs,
        ranking=ranking,
        pairs=pairs,
        trueskill=comparison.trueskill_ratings(outs, seed=seed),
        win_rates=comparison.win_rates(outs),
        bias=position_bias(outs),
        **extra,
    )
