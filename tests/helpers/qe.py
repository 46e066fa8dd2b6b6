"""MT-GenEval-style counterfactual QE scores with a planted gender gap."""

from __future__ import annotations

import pandas as pd


def counterfactual(spec: dict) -> pd.DataFrame:
    """spec: {lang: [(QE(s_F, h_F), QE(s_F, h_M), QE(s_M, h_F), QE(s_M, h_M)), ...]}: each line
    two rows, the feminine source (gold F) and the masculine one (gold M), over the same pair of
    hypotheses, as services.qe.mtgeneval writes MT-GenEval's counterfactual subset."""
    rows = []
    for lang, lines in spec.items():
        for i, (ff, fm, mf, mm) in enumerate(lines, start=1):
            hf, hm = f"{lang} a professora {i}", f"{lang} o professor {i}"
            rows.append(
                {
                    "instance_id": f"cf-{i}-F",
                    "lang": lang,
                    "source": f"she teaches {i}",
                    "hyp_f": hf,
                    "hyp_m": hm,
                    "gold": "F",
                    "score_f": ff,
                    "score_m": fm,
                }
            )
            rows.append(
                {
                    "instance_id": f"cf-{i}-M",
                    "lang": lang,
                    "source": f"he teaches {i}",
                    "hyp_f": hf,
                    "hyp_m": hm,
                    "gold": "M",
                    "score_f": mf,
                    "score_m": mm,
                }
            )
    return pd.DataFrame(rows)


# pt: the feminine pair always scored lower (0.80/0.90, 0.70/0.75, 0.85/0.88, 0.60/0.66); es: no pattern
SPEC = {
    "pt": [(0.80, 0.70, 0.50, 0.90), (0.70, 0.60, 0.40, 0.75), (0.85, 0.30, 0.20, 0.88), (0.60, 0.50, 0.10, 0.66)],
    "es": [(0.90, 0.10, 0.10, 0.80), (0.50, 0.10, 0.10, 0.60), (0.70, 0.10, 0.10, 0.70)],
}
