"""Issue 54, point 1: the side-by-side protocol (services/compare/protocol.py) in process: the
[sxs] section's checks, the corpus read into its own tables (a bad one refused naming the field),
the assignment (annotators_per_item honoured, the least held items next, positions counterbalanced
and stored), each mode's answers refused or stored, a second submit idempotent, another
annotator's item refused, the admin's words, the export read back by `app.py analyze sxs`, the
analysis against an independent computation, and a participant's path that scans no study-sized
table."""

from __future__ import annotations

import argparse
import csv
import json
import math
import shutil
import statistics
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

import cli
from services.common import protocols
from services.compare import analysis, corpus, study_analysis
from services.compare.protocol import answer_words, check, plan
from services.participation.items import AccessError, get_view
from services.participation.submissions import SubmissionError, submit
from services.report import sxs as sxs_report
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.study.export import export_study
from services.study.files import StudyValidationError
from storage import open_database
from tests.helpers.sql_trace import Trace, scans

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "sxs"
STUDY = "sxs-example"


def study_folder(tmp_path, name: str, section: str, rows: list[list[str]] | None = None) -> Path:
    """The example study with its [sxs] section's settings replaced (and its corpus, when given)."""
    folder = tmp_path / name
    shutil.copytree(EXAMPLE, folder)
    toml = (folder / "study.toml").read_text(encoding="utf-8")
    head = toml[: toml.index("[sxs]")]
    (folder / "study.toml").write_text(head + '[sxs]\ncorpus = "sxs_outputs.csv"\n' + section, encoding="utf-8")
    if rows is not None:
        with open(folder / "sxs_outputs.csv", "w", encoding="utf-8", newline="") as f:
            csv.writer(f).writerows([["item_id", "source", "system", "output"], *rows])
    return folder


def corpus_rows(n_items: int, systems: list[str]) -> list[list[str]]:
    return [[f"i{i}", f"Source {i}.", s, f"Output {i} of {s}."] for i in range(n_items) for s in systems]


def opened(tmp_path, folder: Path):
    database = open_database(tmp_path / f"{folder.name}.db", schemas=protocols.schemas())
    import_study(database, folder)
    return database


@pytest.fixture
def db(tmp_path):
    return opened(tmp_path, EXAMPLE)


def queue(db, pid: int) -> list[dict]:
    rows = db.query("SELECT * FROM assignments WHERE participant_id = ? ORDER BY position", [pid])
    return [{**r, "meta": json.loads(r["meta"])} for r in rows]


# -- the section and the corpus ----------------------------------------------------------------


def test_registered_with_its_own_tables_and_page():
    assert "sxs" in protocols.names()
    assert "services.compare.protocol" in protocols.BUILTIN
    sized = {t.name for t in protocols.protocol("sxs").tables if t.study_sized}
    assert sized == {"sxs_items", "sxs_outputs", "sxs_takers", "sxs_answers", "sxs_ratings"}
    scripts, styles = protocols.page_assets("sxs")
    assert [p.name for p in scripts] == ["compare.js"] and [p.name for p in styles] == ["compare.css"]


def test_the_sections_checks_name_each_mistake():
    good = dict(protocols.protocol("sxs").defaults, corpus="c.csv")
    assert check(good) == []
    bad = check({**good, "mode": "vote", "ranking": "drag", "items_per_annotator": 0, "annotators_per_item": 1.5})
    assert {k for k, _ in bad} == {"sxs.mode", "sxs.ranking", "sxs.items_per_annotator", "sxs.annotators_per_item"}
    bad = check({**good, "allow_tie": "yes", "scale_low": 3})
    assert {k for k, _ in bad} == {"sxs.allow_tie", "sxs.scale_low"}


def test_the_example_imports_with_its_counts(db):
    assert corpus.count(db, STUDY) == {"sxs_items": 4, "sxs_outputs": 8}
    assert import_study(db, EXAMPLE).status == "unchanged"


def test_a_bad_corpus_is_refused_naming_each_field(tmp_path):
    rows = [
        ["1", "A source.", "sysA", "Uma fonte."],
        ["1", "A source.", "sysA", "De novo."],  # a second output of sysA
        ["1", "Another source.", "sysB", "Outra."],  # another source for item 1
        ["2", "Two.", "sysA", ""],  # an empty output
        ["3", "Three.", "sysA", "Três."],  # one output only
    ]
    folder = study_folder(tmp_path, "bad", 'mode = "score"\n', rows)
    with pytest.raises(StudyValidationError) as e:
        import_study(open_database(tmp_path / "bad.db", schemas=protocols.schemas()), folder)
    text = str(e.value)
    assert "a second output of system 'sysA' for item '1'" in text
    assert "item '1' has another source" in text
    assert "output" in text and "must not be empty" in text
    assert "item '3' has 1 output(s): needs 2 or more" in text
    # prefer takes exactly two outputs; best-worst three or more
    folder = study_folder(tmp_path, "three", 'mode = "prefer"\n', corpus_rows(1, ["a", "b", "c"]))
    with pytest.raises(StudyValidationError, match="item 'i0' has 3 outputs: mode prefer needs two"):
        import_study(open_database(tmp_path / "p.db", schemas=protocols.schemas()), folder)
    folder = study_folder(tmp_path, "bw", 'mode = "rank"\nranking = "best_worst"\n', corpus_rows(1, ["a", "b"]))
    with pytest.raises(StudyValidationError, match="needs 3 or more"):
        import_study(open_database(tmp_path / "bw.db", schemas=protocols.schemas()), folder)


# -- the assignment -----------------------------------------------------------------------------


def test_assignment_honours_annotators_per_item_and_counterbalances_positions(tmp_path):
    systems = ["s1", "s2", "s3"]
    section = "items_per_annotator = 4\nannotators_per_item = 3\n"
    db = opened(tmp_path, study_folder(tmp_path, "plan", section, corpus_rows(6, systems)))
    assert plan(db, "sxs-example") == [
        "Side by side: 5 more annotator(s) of 4 items each give each of the 6 items 3 annotators."
    ]
    held: Counter = Counter()
    for k in range(6):
        (p,) = add_participants(db, "sxs-example", "sxs", 1)
        mine = queue(db, p.id)
        assert len({q["item_id"] for q in mine}) == len(mine)  # never the same item twice
        held.update(q["item_id"] for q in mine)
        if k < 4:  # the least held items go next: the counts never differ by more than one
            assert len(mine) == 4 and max(held.values()) - min(held.get(str(i), 0) for i in range(6)) <= 1
    assert len(mine) == 0  # the sixth: 6 items x 3 annotators = 18 slots, five annotators hold them
    assert held == Counter({str(i): 3 for i in range(6)})  # annotators_per_item, no more
    assert "the study is full" in plan(db, "sxs-example")[0]
    # each item's three annotators saw the three systems each in every position once
    orders: dict[str, list[list[str]]] = {}
    for q in db.query("SELECT item_id, meta FROM assignments"):
        orders.setdefault(q["item_id"], []).append(json.loads(q["meta"])["order"])
    for item, seen in orders.items():
        assert len(seen) == 3 and all(sorted(o) == systems for o in seen)
        for pos in range(3):
            assert sorted(o[pos] for o in seen) == systems, (item, seen)


def test_a_leaving_annotators_unanswered_items_go_to_the_next_one_and_a_full_study_says_so(tmp_path):
    """Before: a leaver's open items were dropped (annotators_per_item counted the one who left) and
    an annotator added to a full study was told they had finished, with the completion code."""
    from services.admin.participants import deactivate, reassign_open_items

    section = "items_per_annotator = 2\nannotators_per_item = 1\n"
    db = opened(tmp_path, study_folder(tmp_path, "leave", section, corpus_rows(4, ["x", "y"])))
    first, second = add_participants(db, "sxs-example", "sxs", 2)  # the study is full
    before = queue(db, first.id)
    view = get_view(db, first.token, "sxs")  # one answered, one left open
    submit(db, first.token, "sxs", view.item_id, {"score-0": 40, "score-1": 60})
    deactivate(db, "sxs-example", first.id, "admin")
    out = reassign_open_items(db, "sxs-example", first.id, "admin")
    assert [w["item"] for w in out.waiting] == [before[1]["item_id"]] and not out.dropped
    assert plan(db, "sxs-example") == [
        "Side by side: 1 item(s) left unanswered by annotators who left wait for the next annotator added."
    ]
    (third,) = add_participants(db, "sxs-example", "sxs", 1)
    taken = queue(db, third.id)
    assert [(q["item_id"], q["meta"]) for q in taken] == [(before[1]["item_id"], before[1]["meta"])]  # its order too
    assert get_view(db, third.token, "sxs").item_id == before[1]["item_id"]
    assert "the study is full" in plan(db, "sxs-example")[0]
    (fourth,) = add_participants(db, "sxs-example", "sxs", 1)
    full = get_view(db, fourth.token, "sxs")
    assert full.status == "complete" and "every place in it is taken" in full.message
    assert full.completion_code == "" and full.total == 0
    assert db.scalar("SELECT completed_at FROM participants WHERE id = ?", [fourth.id]) is None
    assert len(queue(db, second.id)) == 2  # the others' queues untouched


def test_two_outputs_are_shown_left_and_right_equally_often(tmp_path):
    section = "items_per_annotator = 3\nannotators_per_item = 4\n"
    db = opened(tmp_path, study_folder(tmp_path, "lr", section, corpus_rows(3, ["x", "y"])))
    add_participants(db, "sxs-example", "sxs", 4)
    left: dict[str, Counter] = {}
    for q in db.query("SELECT item_id, meta FROM assignments"):
        left.setdefault(q["item_id"], Counter())[json.loads(q["meta"])["order"][0]] += 1
    assert left == {str(i): Counter({"x": 2, "y": 2}) for i in range(3)}


# -- the answers --------------------------------------------------------------------------------


def test_score_mode_refuses_an_unmoved_slider_and_stores_a_complete_answer_once(db):
    p, other = add_participants(db, STUDY, "sxs", 2)
    v = get_view(db, p.token, "sxs")
    assert v.status == "item" and [o["label"] for o in v.content["outputs"]] == ["A", "B"]
    assert "sys" not in json.dumps(v.content)  # the annotator is not told which system
    with pytest.raises(SubmissionError) as e:
        submit(db, p.token, "sxs", v.item_id, {"score-0": 40, "score-1": None, "comment-0": 7})
    assert set(e.value.fields) == {"score-1", "comment-0"}
    assert "Move the slider of translation B" in e.value.fields["score-1"]
    assert db.scalar("SELECT COUNT(*) FROM sxs_answers") == 0 and db.scalar("SELECT COUNT(*) FROM sxs_ratings") == 0
    # a click on 0 is an answer
    res = submit(db, p.token, "sxs", v.item_id, {"score-0": 72.4, "score-1": 0, "comment-1": " too short "})
    assert res.saved and res.stored["scores"] == {"A": 72, "B": 0} and res.stored["comments"] == {"B": "too short"}
    order = queue(db, p.id)[0]["meta"]["order"]
    rows = db.query("SELECT system, position, score, comment FROM sxs_ratings ORDER BY position")
    assert rows == [
        {"system": order[0], "position": 0, "score": 72, "comment": ""},
        {"system": order[1], "position": 1, "score": 0, "comment": "too short"},
    ]
    assert json.loads(db.scalar("SELECT shown FROM sxs_answers")) == order
    again = submit(db, p.token, "sxs", v.item_id, {"score-0": 10, "score-1": 10})
    assert not again.saved and again.stored == res.stored
    assert db.scalar("SELECT COUNT(*) FROM sxs_answers") == 1 and db.scalar("SELECT COUNT(*) FROM sxs_ratings") == 2
    assignment = db.one("SELECT * FROM assignments WHERE participant_id = ? ORDER BY position", [p.id])
    assignment["meta"] = json.loads(assignment["meta"])
    words = answer_words(db, assignment, res.stored)
    assert words == f'A={order[0]} 72, B={order[1]} 0; comments B: "too short"'
    # an item the other annotator does not hold is refused to them
    theirs = {q["item_id"] for q in queue(db, other.id)}
    mine = next(q["item_id"] for q in queue(db, p.id) if q["item_id"] not in theirs)
    with pytest.raises(AccessError, match="not in your queue"):
        submit(db, other.token, "sxs", mine, {"score-0": 50, "score-1": 50})
    assert db.scalar("SELECT COUNT(*) FROM sxs_answers") == 1


def test_prefer_mode_with_a_tie_and_a_strength(tmp_path):
    db = opened(tmp_path, study_folder(tmp_path, "prefer", 'mode = "prefer"\nstrength = true\ncomments = false\n'))
    (p,) = add_participants(db, STUDY, "sxs", 1)
    v = get_view(db, p.token, "sxs")
    with pytest.raises(SubmissionError) as e:
        submit(db, p.token, "sxs", v.item_id, {"preference": "C"})
    assert set(e.value.fields) == {"preference"}
    with pytest.raises(SubmissionError) as e:
        submit(db, p.token, "sxs", v.item_id, {"preference": "B"})
    assert set(e.value.fields) == {"strength"}
    res = submit(db, p.token, "sxs", v.item_id, {"preference": "B", "strength": "much"})
    order = queue(db, p.id)[0]["meta"]["order"]
    assert res.stored == {"mode": "prefer", "shown": ["A", "B"], "preferred": "B", "strength": "much"}
    assert db.one("SELECT preferred, strength FROM sxs_answers") == {"preferred": order[1], "strength": "much"}
    v = get_view(db, p.token, "sxs")
    res = submit(db, p.token, "sxs", v.item_id, {"preference": "tie", "strength": None})
    assert res.saved and res.stored["preferred"] == "tie" and "strength" not in res.stored
    # without allow_tie a tie is refused
    db2 = opened(tmp_path, study_folder(tmp_path, "notie", 'mode = "prefer"\nallow_tie = false\n'))
    (q,) = add_participants(db2, STUDY, "sxs", 1)
    w = get_view(db2, q.token, "sxs")
    with pytest.raises(SubmissionError, match="A, B."):
        submit(db2, q.token, "sxs", w.item_id, {"preference": "tie"})


def test_rank_mode_by_order_and_by_best_and_worst(tmp_path):
    rows = corpus_rows(2, ["s1", "s2", "s3"])
    db = opened(tmp_path, study_folder(tmp_path, "rank", 'mode = "rank"\nannotators_per_item = 1\n', rows))
    (p,) = add_participants(db, STUDY, "sxs", 1)
    v = get_view(db, p.token, "sxs")
    for bad in (None, ["A", "B"], ["A", "A", "B"], "[oops"):
        with pytest.raises(SubmissionError) as e:
            submit(db, p.token, "sxs", v.item_id, {"ranking": bad})
        assert set(e.value.fields) == {"ranking"}
    res = submit(db, p.token, "sxs", v.item_id, {"ranking": ["C", "A", "B"]})
    assert res.stored["ranking"] == ["C", "A", "B"]
    order = queue(db, p.id)[0]["meta"]["order"]
    places = {r["system"]: r["place"] for r in db.query("SELECT system, place FROM sxs_ratings")}
    assert places == {order[2]: 1, order[0]: 2, order[1]: 3}
    section = 'mode = "rank"\nranking = "best_worst"\nannotators_per_item = 1\n'
    db = opened(tmp_path, study_folder(tmp_path, "bw", section, rows))
    (p,) = add_participants(db, STUDY, "sxs", 1)
    v = get_view(db, p.token, "sxs")
    with pytest.raises(SubmissionError) as e:
        submit(db, p.token, "sxs", v.item_id, {"best": "B", "worst": "B"})
    assert set(e.value.fields) == {"worst"}
    with pytest.raises(SubmissionError) as e:
        submit(db, p.token, "sxs", v.item_id, {})
    assert set(e.value.fields) == {"best", "worst"}
    res = submit(db, p.token, "sxs", v.item_id, {"best": "B", "worst": "C"})
    order = queue(db, p.id)[0]["meta"]["order"]
    assert db.one("SELECT best, worst FROM sxs_answers") == {"best": order[1], "worst": order[2]}
    assert res.stored["best"] == "B" and res.stored["worst"] == "C"


# -- the analysis --------------------------------------------------------------------------------


def binom_p(k: int, n: int) -> float:
    """The two-sided exact binomial test against 0.5, summed by hand."""
    probs = [math.comb(n, i) / 2**n for i in range(n + 1)]
    return min(1.0, sum(q for q in probs if q <= probs[k] * (1 + 1e-9)))


def test_the_analysis_of_hand_made_preferences_against_a_count_by_hand():
    # 10 preferences between x and y, the first shown winning 7 of the 9 decisive ones
    made = [("x", "y", "x")] * 5 + [("y", "x", "y")] * 2 + [("y", "x", "x")] * 2 + [("x", "y", "tie")]
    answers = pd.DataFrame(
        [
            {"assignment_id": i, "participant": f"p{i % 3}", "item_id": f"i{i}", "mode": "prefer"}
            | {"shown": json.dumps([a, b]), "preferred": w, "best": "", "worst": ""}
            for i, (a, b, w) in enumerate(made)
        ]
    )
    ratings = pd.DataFrame(columns=["assignment_id", "participant", "system", "position", "score", "rank"])
    res = analysis.results(answers, ratings, n_boot=200)
    wins = res.win_rates.iloc[0]
    assert (wins["system_a"], wins["system_b"], wins["wins_a"], wins["wins_b"], wins["ties"]) == ("x", "y", 7, 2, 1)
    assert wins["p_value"] == pytest.approx(binom_p(7, 9))
    expected = {"decisive": 9, "first_wins": 7, "first_rate": 7 / 9, "p_value": pytest.approx(binom_p(7, 9)), "ties": 1}
    assert res.bias == expected
    # Bradley-Terry with two systems: log(7.5 / 2.5) apart, a tie half a win each (alpha near 0)
    strengths = res.ranking.set_index("system")["strength"]
    assert strengths["x"] - strengths["y"] == pytest.approx(math.log(7.5 / 2.5), abs=0.01)
    assert list(res.trueskill["system"]) == ["x", "y"] and len(res.lines()) == 5
    assert res.lines()[-1].startswith("agreement: none (no unit has values from two annotators")


def test_scores_become_pairs_and_means_with_z_against_a_computation_by_hand():
    scores = {  # (annotator, item): {system: score}, the systems in the order shown
        ("p1", "i1"): {"a": 80, "b": 60, "c": 60},
        ("p1", "i2"): {"c": 30, "a": 90, "b": 50},
        ("p2", "i1"): {"b": 70, "c": 40, "a": 100},
    }
    answers, ratings = [], []
    for n, ((who, item), got) in enumerate(scores.items()):
        answers.append({"assignment_id": n, "participant": who, "item_id": item, "mode": "score"})
        answers[-1] |= {"shown": json.dumps(list(got)), "preferred": "", "best": "", "worst": ""}
        for pos, (s, v) in enumerate(got.items()):
            ratings.append(
                {"assignment_id": n, "participant": who, "system": s, "position": pos, "score": v, "rank": None}
            )
    res = analysis.results(pd.DataFrame(answers), pd.DataFrame(ratings), n_boot=100)
    outs = [tuple(r) for r in res.outcomes[["system_a", "system_b", "winner"]].itertuples(index=False)]
    assert outs == [
        ("a", "b", "a"), ("a", "c", "a"), ("b", "c", "tie"),
        ("c", "a", "a"), ("c", "b", "b"), ("a", "b", "a"),
        ("b", "c", "b"), ("b", "a", "a"), ("c", "a", "a"),
    ]  # fmt: skip
    # the first shown won 4 of the 8 decisive pairs (rows 1, 2, 6 and 7)
    assert (res.bias["first_wins"], res.bias["decisive"], res.bias["ties"]) == (4, 8, 1)
    z = {}
    for who in ("p1", "p2"):
        mine = [(s, v) for (w, _), got in scores.items() if w == who for s, v in got.items()]
        mu, sd = statistics.mean(v for _, v in mine), statistics.stdev(v for _, v in mine)
        for s, v in mine:
            z.setdefault(s, []).append((v - mu) / sd)
    table = res.scores.set_index("system")
    for s in "abc":
        mine = [got[s] for got in scores.values()]
        assert table.loc[s, "mean"] == pytest.approx(statistics.mean(mine))
        assert table.loc[s, "z"] == pytest.approx(statistics.mean(z[s]))
    assert list(table.index) == ["a", "b", "c"] and list(table["n"]) == [3, 3, 3]
    # agreement on the item i1's three systems that both annotators scored (interval), against the
    # krippendorff package on the matrix written by hand (p1's and p2's scores of i1's a, b, c; i2's
    # three scores of p1 alone)
    import krippendorff
    import numpy as np

    nan = np.nan
    by_hand = krippendorff.alpha(
        reliability_data=[[80, 60, 60, 90, 50, 30], [100, 70, 40, nan, nan, nan]], level_of_measurement="interval"
    )
    study = res.agreement.study.set_index("statistic")
    assert res.agreement.level == "interval" and study.loc["krippendorff_alpha", "value"] == pytest.approx(by_hand)
    assert study.loc["krippendorff_alpha", "n_units"] == 3
    assert f"Krippendorff's alpha {by_hand:.3f} on 3 unit(s)" in res.lines()[-1]


def test_preferences_agree_as_categories_with_fleiss_kappa_by_statsmodels():
    from statsmodels.stats import inter_rater

    made = {  # item: the three annotators' choices
        "i1": ["x", "x", "x"], "i2": ["x", "y", "x"], "i3": ["y", "y", "tie"], "i4": ["tie", "y", "y"],
    }  # fmt: skip
    answers = pd.DataFrame(
        [
            {"assignment_id": 10 * k + j, "participant": f"p{j}", "item_id": item, "mode": "prefer"}
            | {"shown": json.dumps(["x", "y"]), "preferred": w, "best": "", "worst": ""}
            for k, (item, ws) in enumerate(made.items())
            for j, w in enumerate(ws)
        ]
    )
    ratings = pd.DataFrame(columns=["assignment_id", "participant", "system", "position", "score", "rank"])
    res = analysis.results(answers, ratings, n_boot=50)
    counts = [[ws.count(c) for c in ("tie", "x", "y")] for ws in made.values()]
    study = res.agreement.study.set_index("statistic")
    assert res.agreement.level == "nominal"
    assert study.loc["fleiss_kappa", "value"] == pytest.approx(inter_rater.fleiss_kappa(counts))
    assert set(res.agreement.per_annotator["annotator"]) == {"p0", "p1", "p2"}
    assert "agreement.csv" in res.tables() and "agreement_annotators.csv" in res.tables()


# -- the export, app.py analyze, the participant's path ---------------------------------------------


def answer_everything(db, people):
    for k, p in enumerate(people):
        while (v := get_view(db, p.token, "sxs")).status == "item":
            submit(db, p.token, "sxs", v.item_id, {"score-0": 30 + 10 * k, "score-1": 60 if k % 2 else 20})


def test_export_with_its_dictionary_is_read_back_by_analyze(db, tmp_path):
    people = add_participants(db, STUDY, "sxs", 4)
    answer_everything(db, people)
    out = export_study(db, STUDY, tmp_path / "export")
    assert out.rows["sxs_answers"] == 8 and out.rows["sxs_ratings"] == 16 and out.rows["sxs_outputs"] == 8
    with open(out.folder / "sxs_ratings.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == [
        "assignment_id", "participant", "item_id", "system", "position", "label", "score", "rank", "comment",
    ]  # fmt: skip
    assert not any(r["participant"].isdigit() for r in rows)  # pseudonyms
    readme = (out.folder / "README.md").read_text(encoding="utf-8")
    assert all(f"`{t}" in readme for t in ("sxs_answers", "sxs_ratings", "sxs_outputs"))

    def run(**kw):
        args = {"export": None, "study": None, "out": str(tmp_path / "a"), "boot": 100, "seed": 0} | kw
        return study_analysis.run(argparse.Namespace(**args), lambda: db)

    from_export = run(export=str(out.folder))
    assert from_export.startswith("8 answers by 4 annotators, mode score")
    assert from_export.splitlines()[1:] == run(study=STUDY).splitlines()[1:]
    for name in ("systems.csv", "trueskill.csv", "win_rates.csv", "position_bias.csv", "scores.csv"):
        assert (tmp_path / "a" / name).is_file()
    args = cli.build_parser().parse_args(["analyze", "sxs", str(out.folder), "--out", "x"])
    assert args.analyze is study_analysis.run
    for name in ("agreement.csv", "agreement_annotators.csv"):  # two annotators per item: agreement
        assert (tmp_path / "a" / name).is_file()
    assert from_export.splitlines()[-1].startswith("agreement (interval): Krippendorff's alpha")
    # the report's part: the same ranking, its six tables filled (the agreement's two too)
    part = sxs_report.build(db, STUDY, tmp_path / "report", n_boot=100)
    assert [s.filled for s in part.sections] == [True] * 6
    assert from_export.splitlines()[-1] in part.notes
    table1 = part.sections[0].table
    assert {"strength", "low", "high", "cluster", "mu", "conservative", "mean_score", "mean_z"} <= set(table1.columns)
    assert part.summary == from_export.splitlines()[0].split(";")[0]


def test_an_annotators_path_scans_no_study_sized_table(db):
    add_participants(db, STUDY, "sxs", 2)
    with Trace(db) as t:
        (p,) = add_participants(db, STUDY, "sxs", 1)
    statements = list(t.sql)
    assert any("sxs_takers" in s for s in statements)
    for k in range(3):
        with Trace(db) as t:
            v = get_view(db, p.token, "sxs")
            if v.status != "item":
                break
            if k == 0:
                with pytest.raises(SubmissionError):
                    submit(db, p.token, "sxs", v.item_id, {"score-0": 5})
            submit(db, p.token, "sxs", v.item_id, {"score-0": 5, "score-1": 9})
        statements += t.sql
    assert any("sxs_ratings" in s for s in statements) and any("sxs_outputs" in s for s in statements)
    assert scans(db, statements) == []
    assert scans(db, ["SELECT * FROM sxs_takers WHERE study_id = 'sxs-example'"])  # the check can fail


# -- recordings: audio outputs, ABX ----------------------------------------------------------------


def audio_study(tmp_path, mode: str, items: int = 2, with_audio: bool = True) -> Path:
    """The example with outputs that are short tones (sysA 440 Hz, sysB 660 Hz), one file each."""
    import numpy as np
    import soundfile as sf

    rows = []
    folder = study_folder(tmp_path, f"audio-{mode}", f'mode = "{mode}"\nitems_per_annotator = {items}\n'
                          "annotators_per_item = 4\n", [])  # fmt: skip
    for i in range(items):
        for system, hz in (("sysA", 440), ("sysB", 660)):
            name = f"{system}-{i}.wav"
            t = np.arange(int(0.3 * 16000)) / 16000
            sf.write(folder / name, 0.3 * np.sin(2 * np.pi * (hz + 20 * i) * t), 16000)
            text = "" if with_audio else f"Output {i} of {system}."
            rows.append([f"i{i}", f"Source {i}.", system, text, name if with_audio else ""])
    with open(folder / "sxs_outputs.csv", "w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows([["item_id", "source", "system", "output", "audio"], *rows])
    return folder


def test_abx_needs_recordings_and_is_balanced_and_checked(tmp_path):
    """Issue 54 point 1's ABX: X is A or B, hidden; which, per annotator, is balanced over an
    item's annotators (position and system); an answer is refused until A, B and X were played to
    their end and X named, each field said; the stored answer and the team's words say if it was
    right."""
    with pytest.raises(StudyValidationError, match="mode abx needs each output's recording"):
        import_study(
            open_database(tmp_path / "n.db", schemas=protocols.schemas()),
            audio_study(tmp_path / "n", "abx", with_audio=False),
        )
    db = opened(tmp_path, audio_study(tmp_path, "abx"))
    people = add_participants(db, STUDY, "sxs", 4)
    xs: dict[str, list[tuple[int, str]]] = {}
    for p in people:
        for q in queue(db, p.id):
            xs.setdefault(q["item_id"], []).append((q["meta"]["order"].index(q["meta"]["x"]), q["meta"]["x"]))
    for item, seen in xs.items():  # four annotators: X twice at A, twice at B; each system twice
        assert sorted(pos for pos, _ in seen) == [0, 0, 1, 1], (item, seen)
        assert sorted(x for _, x in seen) == ["sysA", "sysA", "sysB", "sysB"], (item, seen)
    v = get_view(db, people[0].token, "sxs")
    assert v.content["x_audio"].endswith(".wav") and all(o["audio"] for o in v.content["outputs"])
    with pytest.raises(SubmissionError) as e:
        submit(db, people[0].token, "sxs", v.item_id, {"played": json.dumps(["A"])})
    assert "not played yet: B, X" in e.value.fields["played"] and "A or B" in e.value.fields["x_is"]
    meta = queue(db, people[0].id)[0]["meta"]
    right = "AB"[meta["order"].index(meta["x"])]
    saved = submit(db, people[0].token, "sxs", v.item_id, {"played": json.dumps(["A", "B", "X"]), "x_is": right})
    assert saved.saved
    row = db.one("SELECT preferred, x FROM sxs_answers")
    assert row["preferred"] == row["x"] == meta["x"]
    a = db.one("SELECT * FROM assignments WHERE participant_id = ? ORDER BY position LIMIT 1", [people[0].id])
    a = {**a, "meta": json.loads(a["meta"])}
    assert answer_words(db, a, {"x_is": right}).endswith("(right)")


def test_abx_analysis_against_a_binomial_test_by_hand(tmp_path):
    from scipy import stats

    db = opened(tmp_path, audio_study(tmp_path, "abx"))
    people = add_participants(db, STUDY, "sxs", 4)
    for k, p in enumerate(people):  # the first three always right, the fourth always wrong
        for q in queue(db, p.id):
            v = get_view(db, p.token, "sxs")
            order, x = q["meta"]["order"], q["meta"]["x"]
            said = x if k < 3 else next(s for s in order if s != x)
            pick = "AB"[order.index(said)]
            submit(db, p.token, "sxs", v.item_id, {"played": json.dumps(["A", "B", "X"]), "x_is": pick})
    answers, ratings = study_analysis.stored_frames(db, STUDY)
    res = analysis.results(answers, ratings, n_boot=10)
    [row] = res.abx.itertuples(index=False)
    assert (row.system_a, row.system_b, row.trials, row.correct) == ("sysA", "sysB", 8, 6)
    assert row.p_value == pytest.approx(stats.binomtest(6, 8, 0.5, alternative="greater").pvalue)
    assert res.lines()[1].startswith("sysA vs sysB: X told right in 6 of 8 (75.0%)")
    part = sxs_report.build(db, STUDY, tmp_path / "report", n_boot=10)
    assert part.sections[0].table is not None and "ABX" in part.sections[1].missing


def test_recorded_outputs_must_be_played_before_a_preference(tmp_path):
    db = opened(tmp_path, audio_study(tmp_path, "prefer"))
    (p,) = add_participants(db, STUDY, "sxs", 1)
    v = get_view(db, p.token, "sxs")
    with pytest.raises(SubmissionError) as e:
        submit(db, p.token, "sxs", v.item_id, {"preference": "A"})
    assert "not played yet: A, B" in e.value.fields["played"]
    assert submit(db, p.token, "sxs", v.item_id, {"preference": "A", "played": json.dumps(["A", "B"])}).saved
    out = db.one("SELECT audio, audio_s FROM sxs_outputs LIMIT 1")
    assert out["audio"].startswith("sxs/") and out["audio_s"] == pytest.approx(0.3, abs=0.01)
