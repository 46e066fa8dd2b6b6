"""`app.py analyze usability`: the four-phase study's analysis on an exchanges file or an export
(the usability spec's analyze hook)."""

from __future__ import annotations

import argparse
from typing import Callable

from services.usability import analysis as usability_analysis
from services.usability import paper_figures


def add_analyze(asub) -> None:
    us = asub.add_parser("usability", help="the four-phase study (paper 000): groups, correlations, LMM, thresholds")
    us.add_argument(
        "exchanges",
        help="CSV: exchange_id, sender_id, receiver_id, validator_id, group, gender, system, "
        "topic, source, satisfaction, trust, reliance, *_b, translation_score, qa_score, "
        "metric_* columns; optional starter_id, perspective and respondent_id, "
        "respondent_role, respondent_group, respondent_gender (group and gender "
        "are then the speaker's), corpus (the models' Source factor, Table 4); or a study's export "
        "(`app.py export`: its folder or its exchanges file, any format; the surveys, validations, "
        "starters and metrics joined from its other tables)",
    )
    us.add_argument("--out", required=True)
    us.add_argument(
        "--study",
        default="",
        help="a stored study's id: also write Table 3 (starter statistics per "
        "domain x corpus) from its starters and questions",
    )
    us.add_argument(
        "--corpus-reference",
        default="",
        help="reference level of the corpus factor (default: "
        "BConTrasT when present, else the first corpus in "
        "sorted order)",
    )
    us.add_argument(
        "--holm-family",
        default="within",
        choices=["within", "all"],
        help="Holm families of the group x gender contrasts: within (default, paper 000 section 4.2: "
        "the pairs within each gender and within each group) or all (one family of every pair)",
    )
    us.set_defaults(analyze=run)


def run(args: argparse.Namespace, open_database: Callable) -> str:
    said = usability_analysis.run_cli(
        args.exchanges, args.out, corpus_reference=args.corpus_reference, holm_family=args.holm_family
    )
    if args.study:  # Table 3 needs the starters: from the stored study
        path = paper_figures.write_study_starter_statistics(open_database(), args.study, args.out)
        said += f"\nTable 3 (starter statistics of study {args.study}): {path}"
    return said
