"""A protocol is a unit of the code: this file alone registers a small extra protocol (one phase:
a text and a yes/no question), a study that uses it is imported, answered over HTTP on the
launched app and exported, with no core file naming it (services/common/protocols.py; the
recipe is docs/development.md, "Add a protocol").

The launched app is another process: it registers the same spec through TRADLAB_PLUGINS
("module:attribute"), as a deployment would name its own protocol's module."""

from __future__ import annotations

import csv
import html
import json
import urllib.parse
import urllib.request

import pytest

from harness.app import RunningApp
from services.common import protocols
from services.common.protocols import ExportTable, Phase, Protocol, Role, Tab
from services.common.seeded import order_key
from services.participation.submissions import SubmissionError
from services.study.files import StudyValidationError, load_study
from storage import assignments, responses
from storage.db import Transaction
from tests.helpers.app import AppClient, token_of

NAME = "yesno"
PLUGIN = "tests.test_extra_protocol:PROTOCOL"


# -- the protocol, as its own package would hold it -------------------------------------------


def check(section: dict) -> list[tuple[str, str]]:
    texts = section.get("texts")
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t.strip() for t in texts):
        return [("yesno.texts", "must be a non-empty list of texts")]
    return []


def setup(tx: Transaction, study, pid: int, group, gender, design_index=None) -> None:
    """One item per text, in the study's seeded order."""
    seed = study["config"]["study"]["seed"]
    for i, _ in enumerate(study["config"][NAME]["texts"]):
        assignments.insert_assignment(tx.db, study["id"], pid, NAME, str(i), order_key(seed, pid, i))


def content(database, study, participant, assignment, media_dir=None) -> dict:
    cfg = study["config"][NAME]
    return {"text": cfg["texts"][int(assignment["item_id"])], "question": cfg["question"]}


def validate(database, assignment, payload) -> dict:
    answer = payload.get("answer")
    if answer not in ("yes", "no"):
        raise SubmissionError("Please answer yes or no.")
    return {"answer": answer}


def save(tx: Transaction, study, participant, assignment, data) -> None:
    responses.insert_response(tx.db, assignment["id"], data)


def stored(database, assignment) -> dict:
    return responses.response(database, assignment["id"]) or {}


def answer_rows(database, study_id: str) -> list[dict]:
    return [{**r, "answer": json.loads(r["data"])["answer"]} for r in responses.response_rows(database, study_id, NAME)]


def body_html(c: dict, typed: dict | None = None) -> str:
    choices = "".join(f'<label><input type="radio" name="answer" value="{v}"> {v}</label>' for v in ("yes", "no"))
    return (
        f'<form class="yesno-item"><p>{html.escape(c.get("text", ""))}</p>'
        f"<fieldset><legend>{html.escape(c.get('question', ''))}</legend>{choices}</fieldset>"
        '<button type="submit" class="submit-btn lg primary">Submit</button></form>'
    )


# its part of the study report (Protocol.report_section): TITLE and ITEMS beside the function
TITLE = "Yes or no answers"
ITEMS = [("Table 1", "Answers per text: yes and no.", "1")]


def report_section(database, study_id: str, out_dir, inputs):
    import pandas as pd

    from services.report.sections import Part, fill  # the report's blocks: only where it is built

    rows = pd.DataFrame(answer_rows(database, study_id))
    table = rows.groupby(["item_id", "answer"]).size().unstack(fill_value=0) if len(rows) else rows
    return Part(NAME, TITLE, fill(ITEMS, {"Table 1": table.reset_index()}, "No answers yet."), summary="Answers.")


def build_tab(ctx):
    from tabs.item_form import form_tab  # gradio: only where the page is built

    return form_tab(ctx, NAME, "Yes or no", body_html, lambda fields: {"answer": fields.get("answer")})


def analysis_panel(shared):
    """Its panel of the Analysis tab: the chosen study's answers counted."""
    import gradio as gr  # only where the page is built

    with gr.Accordion("Yes or no answers", open=False):
        count = gr.Button("Count the answers")
        shown = gr.Markdown()

    def run_yesno(sess, study_id):
        study_id = shared.study_id(study_id)
        return f"{len(answer_rows(shared.ctx.database, study_id))} answers in {study_id}"

    count.click(run_yesno, [shared.session, shared.study], shown, api_visibility="private")


PROTOCOL = Protocol(
    name=NAME,
    analysis_panel="tests.test_extra_protocol:analysis_panel",
    roles=(Role(NAME, (NAME,), "Yes or no", setup, items=lambda cfg: len(cfg[NAME]["texts"]), seconds_per_item=5),),
    tabs=(Tab(NAME, (NAME,), build_tab),),
    phases=(Phase(NAME, content, validate, save, stored),),
    report_section=report_section,
    defaults={"texts": None, "question": "Is this sentence good English?"},
    check=check,
    export_tables={
        "yesno_answers": ExportTable(
            answer_rows,
            "One row per yes/no answer.",
            {
                "assignment_id": ("integer", "the item's assignment"),
                "participant": ("string", "pseudonym of the participant who answered"),
                "item_id": ("string", "the text's position in [yesno] texts, from 0"),
                "answer": ("string", "yes or no"),
                "active_seconds": ("number", "seconds the item was on screen (idle time clamped)"),
                "created_at": ("timestamp", "when the answer was saved"),
            },
        )
    },
    texts={
        "en": {
            "welcome_yesno": "Welcome. You will answer {items} yes/no questions; about {minutes} minutes.",
        }
    },
)

TEXTS = ["The cat sat on the mat.", "Mat the on sat cat the."]


def write_study(folder, texts_line: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "study.toml").write_text(
        f'[study]\nid = "yn"\nname = "Yes or no"\nprotocols = ["{NAME}"]\nseed = 3\n\n[{NAME}]\n{texts_line}\n',
        encoding="utf-8",
    )


@pytest.fixture
def registered():
    protocols.register(PROTOCOL)
    yield PROTOCOL
    protocols.unregister(NAME)


def test_the_section_is_checked_and_defaulted_by_the_spec(registered, tmp_path):
    write_study(tmp_path / "bad", "texts = []\ncolour = 1")
    with pytest.raises(StudyValidationError) as e:
        load_study(tmp_path / "bad")
    assert [str(x) for x in e.value.errors] == [  # every problem at once, the spec's own among them
        "study.toml, field 'yesno.colour': unknown key",
        "study.toml, field 'yesno.texts': must be a non-empty list of texts",
    ]
    write_study(tmp_path / "good", f"texts = {json.dumps(TEXTS)}")
    bundle = load_study(tmp_path / "good")
    assert bundle.config[NAME] == {"texts": TEXTS, "question": "Is this sentence good English?"}
    assert protocols.roles()[-1] == NAME  # after the built-in roles, wherever roles are listed


def test_its_report_part_comes_after_the_built_in_ones(registered, tmp_path):
    """The report iterates the registry: the extra protocol's part, from the test file alone, after
    the built-in protocols' parts (the QE audit's last of them), the study's unlisted ones said so."""
    from services.report.build import build_report
    from services.setup.importer import import_study
    from storage import open_database

    database = open_database(tmp_path / "t.db")
    write_study(tmp_path / "study", f"texts = {json.dumps(TEXTS)}")
    import_study(database, tmp_path / "study")
    rep = build_report(database, "yn", tmp_path / "report")
    assert [p.protocol for p in rep.parts] == ["usability", "da", "sd", "qe", "sxs", "esa", "mqm", "listening", NAME]
    assert rep.parts[1].summary == "This study has no da part (study.protocols)."
    assert rep.parts[-1].title == TITLE and rep.parts[-1].sections[0].missing == "No answers yet."
    page = rep.html.read_text(encoding="utf-8")
    assert page.index("Gender audit of QE metrics (paper 003)") < page.index(TITLE)


def test_its_analysis_panel_comes_after_the_built_in_ones(registered, tmp_path):
    """The Analysis tab iterates the registry: the extra protocol's panel, named by its spec,
    after the built-in protocols' panels (the QE audit's among them), wired to the tab's study."""
    import gradio as gr

    from services.admin import auth as admin
    from services.setup.importer import import_study
    from storage import open_database
    from tabs import analysis
    from tabs.common import Ctx

    database = open_database(tmp_path / "t.db")
    write_study(tmp_path / "study", f"texts = {json.dumps(TEXTS)}")
    import_study(database, tmp_path / "study")
    with gr.Blocks() as demo:
        session = gr.Textbox()
        analysis.build(Ctx(database, None, gr.Textbox(visible=False)), admin.AdminAuth("pw"), session)
    tab = next(b for b in demo.blocks.values() if isinstance(b, gr.Tab) and b.label == "Analysis")
    assert [c.label for c in tab.children if isinstance(c, gr.Accordion)] == [
        "Usability of the four-phase study (paper 000)",
        "Direct assessment (paper 001)",
        "Semantic differential (paper 002)",
        "Gender audit of a QE metric (paper 003)",
        "Side-by-side comparison",
        "Error span annotation (ESA, Kocmi et al. 2024)",
        "Multidimensional Quality Metrics (MQM, Freitag et al. 2021)",
        "Listening test",
        "Yes or no answers",
    ]
    (event,) = [f for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "run_yesno"]
    assert event.inputs[0] is session and isinstance(event.inputs[1], gr.Dropdown)
    assert event.fn("any", None) == "0 answers in yn"  # no study chosen: the first one


def test_the_qe_audit_is_a_protocol_a_study_does_not_list(tmp_path):
    """Paper 003's audit keeps no study data: registered with no roles, tabs or phases, it is not
    one of study.protocols' names, and a study that lists it is told why."""
    qe = protocols.protocol("qe")
    assert (qe.roles, qe.tabs, qe.phases, qe.in_studies) == ((), (), (), False)
    assert [p.name for p in protocols.protocols()][:4] == ["usability", "da", "sd", "qe"]
    assert "qe" not in protocols.names() and "qe" not in protocols.roles()
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "study.toml").write_text('[study]\nid = "q"\nname = "Q"\nprotocols = ["qe"]\n', encoding="utf-8")
    with pytest.raises(StudyValidationError, match="'qe' keeps no study data.*list only usability, da, sd"):
        load_study(tmp_path / "s")


def test_an_unregistered_protocol_is_refused(tmp_path):
    write_study(tmp_path / "s", f"texts = {json.dumps(TEXTS)}")
    with pytest.raises(StudyValidationError, match="study.protocols.*must be a non-empty list of usability, da, sd"):
        load_study(tmp_path / "s")


def test_imported_answered_over_http_and_exported(registered, tmp_path):
    app = RunningApp(tmp_path, {protocols.PLUGINS_ENV: PLUGIN})
    write_study(tmp_path / "study", f"texts = {json.dumps(TEXTS)}")
    res = app.cli("import", str(tmp_path / "study"))
    assert res.returncode == 0, res.stderr
    res = app.cli("participants", "add", "--study", "yn", "--role", NAME, "--count", "1")
    assert res.returncode == 0, res.stderr
    res = app.cli("links", "--study", "yn")
    url = next(line.split("\t")[5] for line in res.stdout.splitlines()[1:] if f"\t{NAME}\t" in line)
    token = token_of(url)
    app.start()
    try:
        with urllib.request.urlopen(url, timeout=30) as page:  # the link goes on to the role's page
            assert page.status == 200 and urllib.parse.urlsplit(page.geturl()).path == f"/{NAME}/"
        client = AppClient(app.url)
        first = client.predict(token, NAME, api_name="/view")
        assert first["status"] == "item" and first["progress"] == "0 / 2"
        assert first["content"]["text"] in TEXTS and first["content"]["question"] == "Is this sentence good English?"
        # a refused answer names what is wrong and stores nothing
        refused = client.predict(
            token, {"item_id": first["item_id"], "answer": {"answer": "maybe"}}, api_name="/yesno_submit"
        )[0]  # the form's value (the next item, or this one with the error); then the wait timer
        assert refused["error"] == "Please answer yes or no." and refused["item_id"] == first["item_id"]
        assert app.rows("SELECT COUNT(*) FROM responses") == [(0,)]
        given = {}
        view = first
        for answer in ("yes", "no"):
            given[view["content"]["text"]] = answer
            out = client.predict(
                token, {"item_id": view["item_id"], "answer": {"answer": answer}}, api_name="/yesno_submit"
            )[0]
            assert out["notice"] == "Saved.", out
            view = out
        assert view["status"] == "complete" and view["progress"] == "2 / 2"
    finally:
        app.stop()
    stored = app.rows(
        "SELECT a.item_id, r.data FROM responses r JOIN assignments a ON a.id = r.assignment_id ORDER BY 1"
    )
    assert [(int(i), json.loads(d)["answer"]) for i, d in stored] == sorted(
        (TEXTS.index(t), a) for t, a in given.items()
    )
    out = tmp_path / "export"
    res = app.cli("export", "--study", "yn", "--out", str(out), "--format", "csv", "--include-events")
    assert res.returncode == 0, res.stderr
    with open(out / "yesno_answers.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["assignment_id", "participant", "item_id", "answer", "active_seconds", "created_at"]
    assert sorted((TEXTS[int(r["item_id"])], r["answer"]) for r in rows) == sorted(given.items())
    assert {r["participant"] for r in rows} == {f"{NAME}-001"}
    assert "One row per yes/no answer." in (out / "README.md").read_text(encoding="utf-8")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["rows"]["yesno_answers"] == 2 and manifest["rows"]["assignments"] == 2
    with open(out / "events.csv", encoding="utf-8") as f:  # a submit's event names the new phase
        assert sum(1 for e in csv.DictReader(f) if e["action"] == "submit" and e["entity"] == NAME) == 2


def test_a_table_name_taken_is_refused(tmp_path):
    """An exported table is one file: a second protocol's table of the same name is refused at
    registration, and one named as a common table is refused by the export with its name."""
    import dataclasses

    from harness.demo import DEMO_ASSETS
    from services.setup.importer import import_study
    from services.study.export import ExportError, export_study
    from storage import open_database

    table = PROTOCOL.export_tables["yesno_answers"]
    other = dataclasses.replace(PROTOCOL, name="yesno2", roles=(), tabs=(), phases=())
    with pytest.raises(ValueError, match="'yesno2': export tables da_judgments already registered"):
        protocols.register(dataclasses.replace(other, export_tables={"da_judgments": table}))
    assert "yesno2" not in protocols.names()
    # the hf-audio format's metadata.jsonl is one file too: usability's
    audio = protocols.AudioMetadata(lambda tables: [], "its recordings", {"file_name": ("string", "the file")})
    with pytest.raises(ValueError, match="'yesno2': export tables metadata already registered"):
        protocols.register(dataclasses.replace(other, audio_metadata=audio))
    protocols.register(dataclasses.replace(other, export_tables={"participants": table}))
    try:
        db = open_database(tmp_path / "s.db")
        import_study(db, DEMO_ASSETS)
        with pytest.raises(ExportError, match="protocol 'yesno2' exports a table named 'participants'"):
            export_study(db, "demo", tmp_path / "out", "csv", media_dir=tmp_path / "media")
    finally:
        protocols.unregister("yesno2")


def test_its_jobs_join_the_workers_table(tmp_path):
    """A protocol's background jobs (Protocol.jobs) run by the app's worker, beside the built-in
    protocols' and the upkeep's; a kind another protocol already has is refused by its name."""
    import dataclasses

    from services.common.jobs_worker import Worker
    from services.participation import worker_jobs
    from storage import jobs, open_database

    done = []
    other = dataclasses.replace(
        PROTOCOL, name="yesno2", roles=(), tabs=(), phases=(), export_tables={},
        jobs=lambda database, cache, media_dir: {"yesno_tally": lambda payload: done.append(payload["n"])},
    )  # fmt: skip
    db = open_database(tmp_path / "s.db")
    protocols.register(other)
    try:
        table = worker_jobs.handlers(db, media_dir=tmp_path)
        assert {"yesno_tally", "study_maintenance", "process_recording", "render_da_audio"} <= set(table)
        with db.write() as w:
            jobs.enqueue(w, "yesno_tally", {"n": 7})
        Worker(db, table).run_until_idle()
        assert done == [7]
        protocols.register(dataclasses.replace(other, jobs=lambda d, c, m: {"render_da_audio": print}))
        with pytest.raises(ValueError, match="'yesno2': job kind 'render_da_audio' is already taken"):
            worker_jobs.handlers(db, media_dir=tmp_path)
    finally:
        protocols.unregister("yesno2")
