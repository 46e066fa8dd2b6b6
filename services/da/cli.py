"""`app.py analyze da`: the DA analysis on judgment files, exports or a stored study (the DA
spec's analyze hook)."""

from __future__ import annotations

import argparse
from typing import Callable

from services.da import analysis as da_analysis
from services.da import study_analysis as da_study


def add_analyze(asub) -> None:
    da = asub.add_parser("da", help="direct assessment (paper 001): reliability, z-scores, rankings")
    da.add_argument(
        "judgments",
        nargs="*",
        help="CSV (worker_id, hit_id, modality, system, segment_id, item_type, "
        "score), a WMT DA TSV, an Appraise CSV export, or a study's export (`app.py export`: its folder "
        "or its da_judgments file, any format); several are merged into one campaign, each one's "
        "worker and HIT ids prefixed by its study id (an export) or file name",
    )
    da.add_argument(
        "--study",
        help="analyse this imported study's campaign instead of a file (its settings, "
        "HIT outcomes and paper 001's Table 1)",
    )
    da.add_argument(
        "--keep-fast",
        action="store_true",
        help="keep unrealistically fast HITs in the scores (paper 001 rejected them)",
    )
    da.add_argument(
        "--fast-item-s",
        type=float,
        default=2.0,
        help="median seconds per item below which a HIT is unrealistically fast",
    )
    da.add_argument("--out", required=True, help="folder for the CSV tables and HTML figures")
    da.add_argument(
        "--alpha",
        type=float,
        default=None,
        help="significance level of the worker reliability test "
        "and the clusters (default: a stored study's da.reliability_alpha, else paper 001's 0.05)",
    )
    da.add_argument("--wmt", action="store_true", help="score as WMT publishes: system + repeat items, every worker")
    da.add_argument("--format", default="auto", choices=["auto", "csv", "wmt", "appraise"])
    da.add_argument(
        "--runs-from-inputs",
        action="store_true",
        help="number the inputs as runs 1, 2, ... (each input one run): two studies compared as "
        "paper 001's self-replication",
    )
    da.set_defaults(analyze=run)


def run(args: argparse.Namespace, open_database: Callable) -> str:
    if args.study:  # the app's own campaign, with its settings, HIT outcomes and Table 1
        return da_study.run_cli(open_database(), args.study, args.out, alpha=args.alpha)
    if not args.judgments:
        raise ValueError("analyze da needs a judgments file, an export folder or --study STUDY_ID")
    return da_analysis.run_cli(
        args.judgments,
        args.out,
        alpha=0.05 if args.alpha is None else args.alpha,
        wmt=args.wmt,
        fmt=args.format,
        keep_fast=args.keep_fast or None,
        fast_item_s=args.fast_item_s,
        runs_from_inputs=args.runs_from_inputs,
    )
