"""Simulated usability-study data with the paper's planted effects, and Holm's adjustment
written out by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd

from services.usability import analysis as U

TOPICS = {"Everyday": 0.0, "Health": 0.332}

# Table 4's "Source" is the starter's corpus; natural/synthetic is the coarser source column
CORPORA = {"BConTrasT": 0.0, "Gemini": -0.541, "MED-MT": -0.343, "Qwen 3": -0.452}

NATURAL = ("BConTrasT", "MED-MT")

GROUP_FX = {"Hindi": 0.0, "USB": 0.136, "USW": 0.131}

WOMAN = -0.202

INTERACTION = {"USB": 0.070, "USW": 0.363}

U_B = 0.466

INTERCEPT = 1.2

SYSTEMS = {"DeSTA2": 0.0, "Phi 4": 0.069, "Tower+": 0.644, "Voxtral": 0.733}


def items_for(rng, latent):
    """Three Likert items whose mean is latent quantised to thirds, unbiased (dithered floor)."""
    k = np.clip(np.floor(3 * np.asarray(latent) + rng.uniform(size=len(latent))), 3, 15).astype(int)
    base = k // 3
    rest = k - 3 * base
    return np.stack([base + (rest > 0), base + (rest > 1), base], axis=1)


def generate(
    seed=0, senders_per_cell=29, per_sender=10, receivers=60, validators=69, sd_sender=0.35, sd_other=0.15, sd_resid=0.6
):
    rng = np.random.default_rng(seed)
    rows, sfx = [], {}
    combos = [(a, b, c) for a in SYSTEMS for b in TOPICS for c in CORPORA]
    for g in GROUP_FX:
        for s in ("Man", "Woman"):
            for j in range(senders_per_cell):
                sid = f"{g}-{s}-{j}"
                sfx[sid] = rng.normal(0, sd_sender)
                for k in rng.choice(len(combos), per_sender, replace=False):
                    rows.append(
                        dict(
                            sender_id=sid,
                            group=g,
                            gender=s,
                            system=combos[k][0],
                            topic=combos[k][1],
                            source="natural" if combos[k][2] in NATURAL else "synthetic",
                            corpus=combos[k][2],
                        )
                    )
    d = pd.DataFrame(rows)
    n = len(d)
    d.insert(0, "exchange_id", [f"E{i}" for i in range(n)])
    d["receiver_id"] = [f"R{i}" for i in rng.integers(0, receivers, n)]
    d["validator_id"] = [f"V{i}" for i in rng.integers(0, validators, n)]
    rfx = rng.normal(0, sd_other, receivers)
    vfx = rng.normal(0, sd_other, validators)
    base = items_for(rng, np.clip(rng.normal(3.7, 0.75, n), 1, 5))
    u_b = base.mean(axis=1)
    fixed = (
        INTERCEPT
        + d["system"].map(SYSTEMS)
        + d["topic"].map(TOPICS)
        + d["corpus"].map(CORPORA)
        + d["group"].map(GROUP_FX)
        + (d["gender"] == "Woman") * (WOMAN + d["group"].map(INTERACTION).fillna(0))
        + U_B * u_b
    ).to_numpy()
    latent = (
        fixed
        + d["sender_id"].map(sfx).to_numpy()
        + rfx[d["receiver_id"].str[1:].astype(int)]
        + vfx[d["validator_id"].str[1:].astype(int)]
        + rng.normal(0, sd_resid, n)
    )
    it = items_for(rng, np.clip(latent, 1, 5))
    for j, c in enumerate(U.ITEMS):
        d[c] = it[:, j]
    for j, c in enumerate(U.BASELINE_ITEMS):
        d[c] = base[:, j]
    q = latent - fixed + rng.normal(0, 0.5, n)
    q01 = (q - q.min()) / (q.max() - q.min())
    d["translation_score"] = np.clip(100 * (0.2 + 0.8 * q01) + rng.normal(0, 8, n), 0, 100).round(1)
    d["qa_score"] = np.clip(np.round((0.3 + 0.7 * q01 + rng.normal(0, 0.1, n)) * 10) / 10, 0, 1)
    d["metric_comet"] = np.clip(0.5 + 0.45 * q01 + rng.normal(0, 0.08, n), 0, 1)
    d["metric_metricx24"] = np.clip(25 * (0.6 - 0.5 * q01) + rng.normal(0, 1, n), 0, 25)
    d.loc[3, "metric_comet"] = np.nan  # a missing metric value
    return d


def holm(p):
    """Holm's step-down adjustment written out (the test's own, independent of statsmodels)."""
    p = np.asarray(p, float)
    order = np.argsort(p)
    m = len(p)
    adj = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, (m - rank) * p[i])
        adj[i] = min(1.0, running)
    return adj
