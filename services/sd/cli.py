"""`app.py analyze sd`: the semantic differential's cleansing and factor analysis on a ratings
file or an export (the SD spec's analyze hook)."""

from __future__ import annotations

import argparse
from typing import Callable

from services.sd import analysis as sd_analysis


def _factor_count(text: str) -> int | None:
    """--factors: a whole number >= 1, or empty / 0 for the factor rule."""
    if text.strip() in ("", "0"):
        return None
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (empty or 0: the rule)") from None
    if k < 1:
        raise argparse.ArgumentTypeError(f"{k} is not a number of factors >= 1 (empty or 0: --factor-rule chooses)")
    return k


def add_analyze(asub) -> None:
    sdp = asub.add_parser("sd", help="semantic differential (paper 002): cleansing and factor analysis")
    sdp.add_argument(
        "ratings",
        help="CSV: participant_id, sentence_id, pair_id, value (-3..3), is_repeat, duration_s; or a study's "
        "export (`app.py export`: its folder or its sd_ratings file, any format; duration_s from its assignments)",
    )
    sdp.add_argument("--out", required=True)
    sdp.add_argument(
        "--factors",
        type=_factor_count,
        default=None,
        help="number of factors (empty or 0, the default: --factor-rule chooses)",
    )
    sdp.add_argument(
        "--factor-rule",
        choices=["kaiser", "parallel"],
        default="kaiser",
        help="how K is chosen without --factors: kaiser = eigenvalue > 1 (SPSS's default, paper 002), "
        "parallel = parallel analysis",
    )
    sdp.add_argument("--expected-seconds", type=float, default=600)
    sdp.add_argument(
        "--prune",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="drop items with communality < 0.3 or cross-loadings within 0.2, one at a time "
        "(paper 002, section 4.2; on by default)",
    )
    sdp.set_defaults(analyze=run)


def run(args: argparse.Namespace, open_database: Callable) -> str:
    return sd_analysis.run_cli(
        args.ratings,
        args.out,
        n_factors=args.factors,
        expected_seconds=args.expected_seconds,
        prune=args.prune,
        factor_rule=args.factor_rule,
    )
