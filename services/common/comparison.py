"""System strengths from comparisons: pairwise preferences (A/B, with ties), full rankings and
best-worst scaling, by Bradley-Terry (the `choix` package) or TrueSkill (the `trueskill` package).

Pairwise outcomes come one row per judgment: item, annotator, system_a, system_b, winner (the
name of system_a or system_b, or TIE; NaN/None also read as a tie).

* Bradley-Terry: P(i beats j) = w_i / (w_i + w_j), fitted by choix's iterative Luce spectral
  ranking on the win matrix (`choix.ilsr_pairwise_dense`), strengths log w centred on 0. A tie
  counts as half a win for each side (Rao and Kupper's or Davidson's tie models add a parameter;
  half wins keep the plain model and its ML estimate, as Elo-style tables do). `alpha` is
  choix's regularisation (the spectral chain's rates start at alpha): it keeps the estimate
  finite when a system never loses or never wins, which bootstrap resamples often produce;
  alpha=0 is the plain maximum-likelihood fit.
* Bootstrap intervals: resample whole items (or annotators) with replacement, seeded, refit,
  and take percentiles; a system missing from a resample counts as missing there. The one-sided
  bootstrap p-value that a ranks above b (the share of resamples where it does not) feeds WMT's
  significance clusters (services.common.ranking.clusters).
* TrueSkill: outcomes played in a seeded random order (TrueSkill is sequential, so the order
  matters), a tie as a draw; mu, sigma and the conservative mu - 3 sigma.
* Win rates: per pair, wins / (wins + losses) with ties left out, and scipy's two-sided exact
  binomial (sign) test against 0.5 on the decisive judgments (ties carry no direction, as in
  the sign test's usual handling of zero differences).
* Rankings (1 = best, equal ranks tie) become pairwise outcomes, or are fitted as
  Plackett-Luce by `choix.ilsr_rankings`; best-worst trials become pairwise outcomes (best beats
  each other shown, each other beats worst), top-1 data for `choix.ilsr_top1`, and the counting
  score (best - worst) / appearances (Louviere, Flynn and Marley 2015; Kiritchenko and Mohammad
  2017).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import choix
import numpy as np
import pandas as pd
import trueskill
from scipy import stats

from services.common.ranking import clusters

TIE = "tie"
OUTCOME_COLUMNS = ["item", "annotator", "system_a", "system_b", "winner"]
BY = ("item", "annotator")


def check_outcomes(outcomes: pd.DataFrame) -> pd.DataFrame:
    """The outcomes with `winner` normalised (TIE for a tie); a ValueError names missing columns,
    a system compared with itself, or a winner that is neither side."""
    missing = [c for c in OUTCOME_COLUMNS if c not in outcomes]
    if missing:
        raise ValueError(f"pairwise outcomes need the columns {', '.join(missing)}")
    out = outcomes.copy()
    out["winner"] = out["winner"].where(out["winner"].notna(), TIE)
    same = out[out["system_a"] == out["system_b"]]
    if len(same):
        raise ValueError(f"system {same.iloc[0]['system_a']!r} is compared with itself ({len(same)} rows)")
    bad = out[~((out["winner"] == out["system_a"]) | (out["winner"] == out["system_b"]) | (out["winner"] == TIE))]
    if len(bad):
        row = bad.iloc[0]
        raise ValueError(
            f"winner {row['winner']!r} is neither {row['system_a']!r} nor {row['system_b']!r} nor {TIE!r} "
            f"({len(bad)} such rows)"
        )
    return out


def systems_of(outcomes: pd.DataFrame) -> list[str]:
    """Every system named, sorted."""
    return sorted(set(outcomes["system_a"]) | set(outcomes["system_b"]))


def win_matrix(outcomes: pd.DataFrame, systems: Sequence[str]) -> np.ndarray:
    """m[i, j] = the wins of systems[i] over systems[j], a tie half a win each."""
    index = {s: i for i, s in enumerate(systems)}
    m = np.zeros((len(systems), len(systems)))
    for a, b, w in zip(outcomes["system_a"], outcomes["system_b"], outcomes["winner"]):
        i, j = index[a], index[b]
        if w == TIE:
            m[i, j] += 0.5
            m[j, i] += 0.5
        elif w == a:
            m[i, j] += 1
        else:
            m[j, i] += 1
    return m


def _fit(outcomes: pd.DataFrame, systems: Sequence[str], alpha: float) -> np.ndarray:
    return choix.ilsr_pairwise_dense(win_matrix(outcomes, systems), alpha=alpha, max_iter=1000)


def bradley_terry(outcomes: pd.DataFrame, *, alpha: float = 0.01) -> pd.Series:
    """Bradley-Terry strengths (log scale, centred on 0), one per system, best first."""
    outcomes = check_outcomes(outcomes)
    if outcomes.empty:
        raise ValueError("no pairwise outcomes: nothing to fit")
    systems = systems_of(outcomes)
    return pd.Series(_fit(outcomes, systems, alpha), index=systems, name="strength").sort_values(ascending=False)


def bootstrap_strengths(
    outcomes: pd.DataFrame, *, by: str = "item", n_boot: int = 1000, seed: int = 0, alpha: float = 0.01
) -> pd.DataFrame:
    """Bradley-Terry strengths of `n_boot` resamples of whole items (or annotators): one row per
    resample, one column per system, NaN where a resample lacks the system."""
    if by not in BY:
        raise ValueError(f"bootstrap over {by!r}: one of {', '.join(BY)}")
    outcomes = check_outcomes(outcomes)
    systems = systems_of(outcomes)
    # each group's win matrix and systems once; a resample's matrix is their sum weighted by how
    # often the resample drew each group (the same as concatenating the drawn groups' rows)
    groups = [g for _, g in outcomes.groupby(by, sort=True)]
    matrices = np.stack([win_matrix(g, systems) for g in groups])
    shown = np.stack([np.isin(systems, systems_of(g)) for g in groups]).astype(float)
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n_boot):
        drawn = np.bincount(rng.integers(0, len(groups), len(groups)), minlength=len(groups)).astype(float)
        m = np.tensordot(drawn, matrices, axes=1)
        present = np.flatnonzero(drawn @ shown > 0)
        row = np.full(len(systems), math.nan)
        row[present] = choix.ilsr_pairwise_dense(m[np.ix_(present, present)], alpha=alpha, max_iter=1000)
        rows.append(row)
    return pd.DataFrame(rows, columns=systems)


RANKING_COLUMNS = ["system", "strength", "low", "high", "rank", "cluster"]


def bradley_terry_ranking(
    outcomes: pd.DataFrame,
    *,
    by: str = "item",
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    significance: float = 0.05,
    alpha: float = 0.01,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The systems best first with their strength, the bootstrap's percentile interval at `level`,
    rank and significance cluster; and the ordered pairs (system_a, system_b, diff, p_value): the
    bootstrap's one-sided p-value that a is stronger than b (the share of resamples, with both
    present, where it is not)."""
    strengths = bradley_terry(outcomes, alpha=alpha)
    boot = bootstrap_strengths(outcomes, by=by, n_boot=n_boot, seed=seed, alpha=alpha)
    order = list(strengths.index)
    tail = (1 - level) / 2 * 100
    pairs = []
    for a, b in itertools.permutations(order, 2):
        both = boot[[a, b]].dropna()
        p = float((both[a] <= both[b]).mean()) if len(both) else math.nan
        pairs.append((a, b, strengths[a] - strengths[b], p))
    pair_table = pd.DataFrame(pairs, columns=["system_a", "system_b", "diff", "p_value"])
    table = pd.DataFrame(
        {
            "system": order,
            "strength": strengths.to_numpy(),
            "low": [float(np.nanpercentile(boot[s], tail)) for s in order],
            "high": [float(np.nanpercentile(boot[s], 100 - tail)) for s in order],
            "rank": range(1, len(order) + 1),
            "cluster": clusters(order, pair_table, significance),
        }
    )
    return table, pair_table


TRUESKILL_COLUMNS = ["system", "mu", "sigma", "conservative", "n"]


def trueskill_ratings(outcomes: pd.DataFrame, *, seed: int = 0, env: trueskill.TrueSkill | None = None) -> pd.DataFrame:
    """TrueSkill ratings after playing the outcomes in a seeded random order (a tie is a draw),
    best conservative rating (mu - 3 sigma) first; `env` defaults to trueskill's own defaults
    (mu 25, sigma 25/3, beta 25/6, tau 25/300, draw probability 0.10)."""
    outcomes = check_outcomes(outcomes)
    env = env or trueskill.TrueSkill()
    ratings = {s: env.create_rating() for s in systems_of(outcomes)}
    counts = dict.fromkeys(ratings, 0)
    order = np.random.default_rng(seed).permutation(len(outcomes))
    for a, b, w in outcomes[["system_a", "system_b", "winner"]].to_numpy()[order]:
        first, second = (b, a) if w == b else (a, b)
        (ratings[first],), (ratings[second],) = env.rate(
            [(ratings[first],), (ratings[second],)], ranks=[0, 0 if w == TIE else 1]
        )
        counts[a] += 1
        counts[b] += 1
    rows = [(s, r.mu, r.sigma, r.mu - 3 * r.sigma, counts[s]) for s, r in ratings.items()]
    return (
        pd.DataFrame(rows, columns=TRUESKILL_COLUMNS)
        .sort_values("conservative", ascending=False, kind="stable")
        .reset_index(drop=True)
    )


WIN_RATE_COLUMNS = ["system_a", "system_b", "wins_a", "wins_b", "ties", "win_rate_a", "p_value"]


def win_rates(outcomes: pd.DataFrame) -> pd.DataFrame:
    """One row per pair of systems compared (system_a < system_b by name): a's wins, b's wins,
    ties, a's win rate among the decisive judgments, and the two-sided exact binomial test of
    that rate against 0.5 (NaN when every judgment was a tie)."""
    outcomes = check_outcomes(outcomes)
    rows = []
    for a, b in itertools.combinations(systems_of(outcomes), 2):
        pair = outcomes[
            ((outcomes["system_a"] == a) & (outcomes["system_b"] == b))
            | ((outcomes["system_a"] == b) & (outcomes["system_b"] == a))
        ]
        if pair.empty:
            continue
        wins_a, wins_b = int((pair["winner"] == a).sum()), int((pair["winner"] == b).sum())
        ties, decisive = len(pair) - wins_a - wins_b, wins_a + wins_b
        rate = wins_a / decisive if decisive else math.nan
        p = float(stats.binomtest(wins_a, decisive, 0.5).pvalue) if decisive else math.nan
        rows.append((a, b, wins_a, wins_b, ties, rate, p))
    return pd.DataFrame(rows, columns=WIN_RATE_COLUMNS)


# --- rankings and best-worst scaling


def rankings_to_outcomes(rankings: pd.DataFrame) -> pd.DataFrame:
    """Rankings (one row per item, annotator and system, `rank` 1 = best, equal ranks tied) as
    pairwise outcomes: every pair ranked together on an item by an annotator."""
    missing = [c for c in ("item", "annotator", "system", "rank") if c not in rankings]
    if missing:
        raise ValueError(f"rankings need the columns {', '.join(missing)}")
    rows = []
    for (item, annotator), g in rankings.groupby(["item", "annotator"], sort=False):
        ranked = list(zip(g["system"], g["rank"]))
        for (a, ra), (b, rb) in itertools.combinations(ranked, 2):
            rows.append((item, annotator, a, b, TIE if ra == rb else (a if ra < rb else b)))
    return pd.DataFrame(rows, columns=OUTCOME_COLUMNS)


def plackett_luce(rankings: pd.DataFrame, *, alpha: float = 0.01) -> pd.Series:
    """Plackett-Luce strengths (choix.ilsr_rankings) of strict rankings (no equal ranks within
    one item and annotator: PL has no ties; use rankings_to_outcomes and Bradley-Terry for those),
    log scale centred on 0, best first."""
    systems = sorted(set(rankings["system"]))
    index = {s: i for i, s in enumerate(systems)}
    data = []
    for (item, annotator), g in rankings.groupby(["item", "annotator"], sort=False):
        if g["rank"].duplicated().any():
            raise ValueError(f"item {item!r} by {annotator!r} has equal ranks: Plackett-Luce takes strict rankings")
        data.append(tuple(index[s] for s in g.sort_values("rank")["system"]))
    if not data:
        raise ValueError("no rankings: nothing to fit")
    params = choix.ilsr_rankings(len(systems), data, alpha=alpha, max_iter=1000)
    return pd.Series(params, index=systems, name="strength").sort_values(ascending=False)


def _check_trials(trials: pd.DataFrame) -> None:
    missing = [c for c in ("item", "annotator", "shown", "best", "worst") if c not in trials]
    if missing:
        raise ValueError(f"best-worst trials need the columns {', '.join(missing)}")
    for shown, best, worst in zip(trials["shown"], trials["best"], trials["worst"]):
        if best not in shown or worst not in shown or best == worst:
            raise ValueError(f"best {best!r} and worst {worst!r} must be two different systems of {list(shown)}")


def best_worst_scores(trials: pd.DataFrame) -> pd.DataFrame:
    """Best-worst scaling's counting score per system: (times chosen best - times chosen worst) /
    times shown, in [-1, 1]. Trials: item, annotator, shown (the systems on screen), best, worst."""
    _check_trials(trials)
    shown = pd.Series([s for group in trials["shown"] for s in group]).value_counts()
    best, worst = trials["best"].value_counts(), trials["worst"].value_counts()
    table = pd.DataFrame({"shown": shown})
    table["best"] = best.reindex(table.index, fill_value=0)
    table["worst"] = worst.reindex(table.index, fill_value=0)
    table["score"] = (table["best"] - table["worst"]) / table["shown"]
    table = table.rename_axis("system").reset_index()
    return table.sort_values(["score", "system"], ascending=[False, True], kind="stable").reset_index(drop=True)


def best_worst_to_outcomes(trials: pd.DataFrame) -> pd.DataFrame:
    """The pairs a best-worst trial implies: best beats every other shown system, every other
    beats worst (best over worst once). Pairs among the middle ones are unknown and left out."""
    _check_trials(trials)
    rows = []
    for item, annotator, shown, best, worst in trials[["item", "annotator", "shown", "best", "worst"]].to_numpy():
        for s in shown:
            if s != best:
                rows.append((item, annotator, best, s, best))
            if s not in (best, worst):
                rows.append((item, annotator, s, worst, s))
    return pd.DataFrame(rows, columns=OUTCOME_COLUMNS)


def best_choice_strengths(trials: pd.DataFrame, *, alpha: float = 0.01) -> pd.Series:
    """Strengths from the best choices alone (top-1 data, choix.ilsr_top1: the multinomial logit
    of choosing the best among those shown), log scale centred on 0, best first."""
    _check_trials(trials)
    systems = sorted({s for group in trials["shown"] for s in group})
    index = {s: i for i, s in enumerate(systems)}
    data = [(index[b], tuple(index[s] for s in shown if s != b)) for shown, b in zip(trials["shown"], trials["best"])]
    params = choix.ilsr_top1(len(systems), data, alpha=alpha, max_iter=1000)
    return pd.Series(params, index=systems, name="strength").sort_values(ascending=False)
