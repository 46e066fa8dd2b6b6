"""The admin tab's "Comprehension questions" section through gradio_client against the launched
app: generate with the test LLM (tests/openai_server.py answering as in test_question_gen),
review (accept, edit, reject, back to draft, regenerate), CSV export and import; every event
checks the admin session, and nothing reaches the study's questions before acceptance."""

from __future__ import annotations

import csv

import pytest
from gradio_client import handle_file

from harness.app import RunningApp
from tests.helpers.app import AppClient, admin_session
from tests.helpers.questions import GENERATED, STUDY, make_study, respond
from tests.openai_server import OpenAIServer

APIS = [
    "admin_questions_view",
    "admin_questions_edit",
    "admin_questions_accept",
    "admin_questions_reject",
    "admin_questions_unaccept",
    "admin_questions_regenerate",
    "admin_questions_generate",
    "admin_questions_generate_starter",
    "admin_questions_import",
    "admin_questions_export",
]


@pytest.fixture(scope="module")
def llm_server():
    with OpenAIServer(models={"qa-llm"}, responder=respond) as srv:
        yield srv


@pytest.fixture(scope="module")
def app(tmp_path_factory, llm_server):
    tmp = tmp_path_factory.mktemp("questions_app")
    app = RunningApp(
        tmp,
        {
            "TRADLAB_WORKER": "0",
            "TRADLAB_LLM_MODEL": "qa-llm",
            "TRADLAB_LLM_BASE_URL": llm_server.base_url,
            "TRADLAB_LLM_BACKEND": "",
            "TRADLAB_LLM_API_KEY_ENV": "",
        },
    )
    res = app.setup_cli("import", str(make_study(tmp / "study")))
    assert res.returncode == 0, res.stderr
    app.start()
    yield app
    app.stop()


@pytest.fixture(scope="module")
def client(app):
    return AppClient(app.url)


@pytest.fixture(scope="module")
def session(client):
    return admin_session(client)


def in_use(app, starter="s01"):
    return [
        r[0]
        for r in app.rows(
            "SELECT en FROM questions WHERE study_id = ? AND starter_id = ? ORDER BY idx", [STUDY, starter]
        )
    ]


def call(client, api, *args):
    """(status, starters table, starter, starter html, drafts table, message) of a section event."""
    return client.predict(*args, api_name=f"/{api}")


def drafts_of(out) -> list[dict]:
    table = out[4]
    return [dict(zip(table["headers"], r)) for r in table["data"]]


def test_generate_review_and_export_import(client, session, app, tmp_path):
    out = call(client, "admin_questions_view", session, STUDY, "s01", 1)
    assert "qa-llm" in out[0] and out[0].endswith("\n\nStarters page 1 of 1.")  # its own line
    assert {r[0] for r in out[1]["data"]} >= {"s01", "s02"}
    assert "<strong>Sofia</strong>" in out[3] and drafts_of(out) == []

    out = call(client, "admin_questions_generate", session, STUDY, "s01", 1, 3)
    assert "3 draft question(s) for 2 starter(s)" in out[5] and "held no questions" in out[5]
    drafts = drafts_of(out)
    assert [d["en"] for d in drafts] == GENERATED[:3] and {d["status"] for d in drafts} == {"draft"}
    assert in_use(app) == []  # nothing before acceptance
    ids = [d["id"] for d in drafts]

    out = call(client, "admin_questions_accept", session, STUDY, "s01", 1, ids[2])
    out = call(client, "admin_questions_accept", session, STUDY, "s01", 1, ids[0])
    assert f"Draft {ids[0]} is accepted." in out[5]
    assert in_use(app) == [GENERATED[0], GENERATED[2]]
    assert [d["status"] for d in drafts_of(out)] == ["accepted", "accepted", "draft"]

    out = call(
        client,
        "admin_questions_edit",
        session,
        STUDY,
        "s01",
        1,
        ids[2],
        "How high was the fever?",
        "Qual era a febre?",
        "39",
    )
    assert "saved" in out[5] and in_use(app) == [GENERATED[0], "How high was the fever?"]
    out = call(client, "admin_questions_edit", session, STUDY, "s01", 1, ids[2], "", "x", "")
    assert "Not done" in out[5] and "must not be empty" in out[5]
    call(client, "admin_questions_reject", session, STUDY, "s01", 1, ids[0])
    assert in_use(app) == ["How high was the fever?"]
    call(client, "admin_questions_unaccept", session, STUDY, "s01", 1, ids[2])
    assert in_use(app) == []

    out = call(client, "admin_questions_regenerate", session, STUDY, "s01", 1, ids[1])
    assert "rewritten" in out[5]
    assert app.rows("SELECT en FROM question_drafts WHERE id = ?", [ids[1]])[0][0] == GENERATED[3]

    # export, change, import; a bad file changes nothing
    path, msg = client.predict(session, STUDY, api_name="/admin_questions_export")
    path = path if isinstance(path, str) else path["path"]
    with open(path, encoding="utf-8") as f:
        exported = list(csv.DictReader(f))
    assert {r["draft_id"] for r in exported} >= {str(i) for i in ids}
    assert set(exported[0]) == {"draft_id", "starter_id", "status", "origin", "en", "pt", "answer_en"}
    mine = next(r for r in exported if r["draft_id"] == str(ids[1]))
    mine["status"] = "accepted"
    new = {
        "draft_id": "",
        "starter_id": "s01",
        "status": "accepted",
        "origin": "",
        "en": "Which antibiotic is she allergic to?",
        "pt": "A que antibiótico é alérgica?",
        "answer_en": "penicillin",
    }
    good = tmp_path / "good.csv"
    with good.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(exported[0]))
        w.writeheader()
        w.writerows(exported + [new])
    bad = tmp_path / "bad.csv"
    bad.write_text(good.read_text(encoding="utf-8") + ",s99,draft,,Who?,Quem?,\n", encoding="utf-8")
    before = app.rows("SELECT COUNT(*) FROM question_drafts")[0][0]
    out = call(client, "admin_questions_import", session, STUDY, "s01", 1, handle_file(str(bad)))
    assert "Nothing was imported" in out[5] and "unknown starter 's99'" in out[5]
    assert app.rows("SELECT COUNT(*) FROM question_drafts")[0][0] == before and in_use(app) == []
    out = call(client, "admin_questions_import", session, STUDY, "s01", 1, handle_file(str(good)))
    assert "1 new draft(s), 1 updated" in out[5]
    assert in_use(app) == [GENERATED[3], "Which antibiotic is she allergic to?"]


@pytest.mark.browser
def test_rows_are_picked_by_clicking_in_the_browser(client, session, app):
    """A starter's row opens its drafts; a draft's row fills the id and the edit boxes."""
    from pathlib import Path

    from playwright.sync_api import sync_playwright

    from tests.helpers.browser import ARTIFACTS, CHROMIUM, FLAGS

    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is not installed: `make test` installs it (apt-get install chromium)")
    call(client, "admin_questions_view", session, STUDY, "s03", 1)  # its folder questions become drafts
    s03 = app.rows(
        "SELECT id, en FROM question_drafts WHERE study_id = ? AND starter_id = 's03' ORDER BY position, id", [STUDY]
    )
    assert s03
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1200, "height": 1000})
        page.goto(app.admin_url)
        # no password set: the admin opens at once, without a login form (issue 28)
        page.get_by_text("Comprehension questions", exact=True).first.click()
        starters = page.locator("#question-starters [role=gridcell]")
        starters.first.wait_for(timeout=20000)
        row = next(
            i
            for i in range(page.locator("#question-starters [role=row]").count() - 1)
            if page.locator(f"#question-starters [data-testid='cell-{i}-0']").inner_text().strip() == "s03"
        )
        page.locator(f"#question-starters [data-testid='cell-{row}-1']").click()
        first = page.locator("#question-drafts [data-testid='cell-0-0']")
        page.wait_for_function(
            "el => el.innerText.trim() === String(%d)" % s03[0][0],
            arg=first.element_handle(timeout=20000),
            timeout=20000,
        )
        page.locator("#question-drafts [data-testid='cell-0-3']").click()
        box = page.get_by_label("English question")
        page.wait_for_function("([el, v]) => el.value === v", arg=[box.element_handle(), s03[0][1]], timeout=20000)
        assert page.get_by_label("Draft id (click its row)").input_value() == str(s03[0][0])
        page.screenshot(path=str(ARTIFACTS / "admin-questions-picked.png"), full_page=True)
        browser.close()


def test_questions_per_starter_defaults_to_the_study_and_is_range_checked(client, session, app):
    out = call(client, "admin_questions_generate_starter", session, STUDY, "s02", 1, 11)
    assert "Not done" in out[5] and "from 1 to 10" in out[5]
    out = call(client, "admin_questions_generate_starter", session, STUDY, "s02", 1, None)
    assert "Not done" not in out[5]  # empty: the study's n (s02's junk is reported, not refused)


def test_every_questions_event_refuses_without_the_admin_session(client, app):
    for api in APIS:
        dep = next(d for d in client.page().config["dependencies"] if d.get("api_name") == api)
        n = len(dep["inputs"])
        args = ["forged", STUDY] + [None] * (n - 2)
        out = client.predict(*args, api_name=f"/{api}")
        text = str(out).lower()
        assert "log in" in text, (api, text[:200])
    assert app.rows("SELECT COUNT(*) FROM events WHERE actor = 'forged'")[0][0] == 0


def test_without_an_llm_the_notice_and_the_pager_are_apart():
    """Issue 51: "... with model = ... Starters page 1 of 1." read as one sentence, and the
    example URL in the notice became a link."""
    from services.questions.review import llm_status

    said = llm_status({})
    assert said.startswith("**Generating questions is off:**") and "`TRADLAB_LLM_BASE_URL=http://host:port/v1`" in said
