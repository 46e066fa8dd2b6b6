"""The proof plugin's part of the study report (Protocol.report_section, docs/development.md "Add a
protocol" step 4): TITLE and ITEMS beside the function, Table 1 computed from its own tables."""

from __future__ import annotations

from tests.plugins import proof

TITLE = "Error spans (the proof plugin)"
ITEMS = [("Table 1", "Per segment: answers, mean 0-100 score, and the minor and major error spans marked.", "")]


def section(database, study_id: str, out_dir, inputs):
    import pandas as pd

    from services.report.sections import Part, fill  # the report's blocks: only where it is built

    rows = proof.answers_of(database, study_id)
    table = pd.DataFrame(
        [
            {
                "segment": r["item_id"],
                "score": r["score"],
                **{s: sum(x["severity"] == s for x in r["spans"]) for s in proof.SEVERITIES},
            }
            for r in rows
        ]
    )
    if len(table):
        table = (
            table.groupby("segment")
            .agg(answers=("score", "size"), mean_score=("score", "mean"), minor=("minor", "sum"))
            .join(table.groupby("segment").agg(major=("major", "sum")))
            .reset_index()
        )
    sections = fill(ITEMS, {"Table 1": table}, "No answers yet.")
    return Part(proof.NAME, TITLE, sections, summary=proof.summary_words(database, study_id))
