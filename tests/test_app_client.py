"""Links, resume and idempotency through gradio_client against the launched app."""

from __future__ import annotations

import pytest

from harness.app import ADMIN_SECRET
from tests.helpers.app import AppClient, admin_session, receiver_inputs, token_of, validator_inputs


@pytest.fixture(scope="module")
def client(app_server):
    return AppClient(app_server.url)


@pytest.fixture(scope="module")
def links(app_server):
    return app_server.links()


def view(client, token, tab):
    return client.predict(token, tab, api_name="/view")


def survey_inputs(token, item, satisfaction, trust, reliance):
    """Inputs of /survey_submit: the token and the form's value (null: a statement not answered;
    the page sends the chosen point as text, "1".."5")."""
    fields = {"satisfaction": satisfaction, "trust": trust, "reliance": reliance}
    return [token, {"item_id": item, "answer": {k: None if v is None else str(v) for k, v in fields.items()}}]


def test_link_shows_next_item_and_progress(client, links):
    v = view(client, token_of(links["receiver"][0]), "receiver")
    assert v["status"] == "item"
    assert v["progress"] == "0 / 6"
    assert v["content"]["translation"] and v["content"]["questions"]


def test_forged_token_is_refused(client):
    v = view(client, "not-a-real-token", "receiver")
    assert v["status"] == "error"
    assert "não é válida" in v["message"]  # the receiver's page is in Portuguese
    assert "not valid" in view(client, "not-a-real-token", "validator")["message"]


def test_role_sees_only_its_tab(client, links):
    v = view(client, token_of(links["receiver"][0]), "validator")
    assert v["status"] == "error" and "not for your role" in v["message"]  # the validator's page: English


def test_submit_is_idempotent_and_resumes(client, links, app_server):
    tok = token_of(links["receiver"][0])
    first = view(client, tok, "receiver")
    item = first["item_id"]
    n = len(first["content"]["questions"])
    answers = [(f"resposta {i}", False) for i in range(n - 1)] + [("", True)]
    out = client.predict(*receiver_inputs(tok, item, first, answers), api_name="/receiver_submit")
    state = out[0]
    assert state.get("notice") == "Guardado." and state["progress"] == "1 / 6"
    assert state["item_id"] != item
    # the same submission again writes nothing and says so
    out2 = client.predict(*receiver_inputs(tok, item, first, answers), api_name="/receiver_submit")
    assert out2[0].get("notice") == "Esta resposta já tinha sido guardada."
    rows = app_server.rows(
        "SELECT COUNT(*) FROM answers a JOIN assignments s ON s.id = a.assignment_id "
        "WHERE s.item_id = ? AND s.phase = 'receive'",
        (item,),
    )
    assert rows[0][0] == n
    # a reload (a fresh view) resumes at the first unfinished item
    again = view(client, tok, "receiver")
    assert again["item_id"] == state["item_id"] and again["progress"] == "1 / 6"


def test_missing_answers_are_refused_and_nothing_stored(client, links, app_server):
    tok = token_of(links["receiver"][1])
    v = view(client, tok, "receiver")
    out = client.predict(*receiver_inputs(tok, v["item_id"], v, [("só uma", False)]), api_name="/receiver_submit")
    assert "Responda a todas as perguntas" in out[0]["error"]
    assert out[0]["item_id"] == v["item_id"]
    rows = app_server.rows(
        "SELECT COUNT(*) FROM answers a JOIN assignments s ON s.id = a.assignment_id "
        "JOIN participants p ON p.id = s.participant_id WHERE p.token = ?",
        (tok,),
    )
    assert rows[0][0] == 0


def test_item_of_another_participant_is_refused(client, links):
    a, b = token_of(links["receiver"][0]), token_of(links["receiver"][1])
    item_b = view(client, b, "receiver")["item_id"]
    mine = {view(client, a, "receiver")["item_id"]}
    if item_b in mine:
        pytest.skip("both receivers hold the same item")
    answers = [("x", False)] * 10
    out = client.predict(
        *receiver_inputs(a, item_b, {"content": {"questions": [{"idx": i} for i in range(1, 11)]}}, answers),
        api_name="/receiver_submit",
    )
    assert "não está na sua lista" in out[0]["error"]


def test_validator_slider_untouched_is_refused(client, links):
    # the receiver's answers above opened validator work for one of the two validators
    views = [(token_of(u), view(client, token_of(u), "validator")) for u in links["validator"]]
    tok, v = next(((t, v) for t, v in views if v["status"] == "item"), (None, views[0][1]))
    assert tok is not None, v
    assert "source" in v["content"]
    marks = ["correct"] * len(v["content"]["questions"]) + [None] * (10 - len(v["content"]["questions"]))
    out = client.predict(*validator_inputs(tok, v["item_id"], v, False, 0, *marks), api_name="/validator_submit")
    assert "move the slider" in out[0]["error"]
    out = client.predict(*validator_inputs(tok, v["item_id"], v, True, 150, *marks), api_name="/validator_submit")
    assert "between 0 and 100" in out[0]["error"]
    missing = ["correct"] + [None] * 9
    out = client.predict(*validator_inputs(tok, v["item_id"], v, True, 73, *missing), api_name="/validator_submit")
    assert "every answer" in out[0]["error"] or "mark" in out[0]["error"]
    out = client.predict(*validator_inputs(tok, v["item_id"], v, True, 73, *marks), api_name="/validator_submit")
    assert out[0]["notice"] == "Saved."


def test_receiver_view_never_carries_source(client, links, app_server):
    tok = token_of(links["receiver"][1])
    v = view(client, tok, "receiver")
    ex = app_server.rows(
        "SELECT st.text FROM assignments a JOIN exchanges e ON e.id = a.exchange_id "
        "JOIN starters st ON st.id = e.starter_id AND st.study_id = e.study_id "
        "WHERE a.phase = 'receive' AND a.item_id = ?",
        (v["item_id"],),
    )
    source = ex[0][0]
    assert source not in str(v)
    assert "source" not in v["content"]


def test_recording_runs_in_the_background_and_is_reviewed_in_the_admin_tab(client, links, app_server, tmp_path):
    """The sender moves on at once; the app's worker transcribes and translates; a recording
    that does not match its starter waits in the admin tab's review queue."""
    import time

    from gradio_client import handle_file

    from tests.speech import spoken_wav

    tok = token_of(links["sender"][0])
    v = view(client, tok, "record")
    wav = spoken_wav(
        "Good evening. I would like to order two pizzas and a bottle of water, please.", tmp_path / "wrong.wav"
    )
    t0 = time.time()
    out = client.predict(tok, v["item_id"], handle_file(str(wav)), api_name="/record_submit")
    assert time.time() - t0 < 10  # no model ran in the request
    assert out[0]["progress"].startswith("1 /")
    ex_id = int(v["item_id"])
    deadline = time.time() + 120
    while time.time() < deadline:
        rows = app_server.rows("SELECT id, qc_status, transcript FROM recordings WHERE exchange_id = ?", (ex_id,))
        if rows and rows[0][1] != "pending":
            break
        time.sleep(1)
    rid, status, transcript = rows[0]
    assert status == "flagged" and "water" in transcript.lower()
    assert app_server.rows("SELECT COUNT(*) FROM translations WHERE exchange_id = ?", (ex_id,))[0][0] == 1
    session = admin_session(client)
    opened = client.predict(session, rid, api_name="/admin_open_recording")
    assert opened[0] == "" and opened[1] and "water" in opened[2].lower() and "**Prompt:**" in opened[2]
    # a forged session cannot review
    refused = client.predict("forged", rid, "demo", "", api_name="/admin_reject_recording")
    assert "log in" in refused[0].lower()
    done = client.predict(session, rid, "demo", "", api_name="/admin_reject_recording")
    assert "rejected" in done[0]
    assert app_server.rows("SELECT qc_status, reviewed_by FROM recordings WHERE id = ?", (rid,))[0][0] == "rejected"
    again = client.predict(session, 99999, "demo", "", api_name="/admin_reject_recording")
    assert "no recording 99999" in again[0]


def test_admin_tries_a_system_on_uploaded_speech(client, tmp_path):
    from gradio_client import handle_file

    from tests.speech import spoken_wav

    session = admin_session(client)
    wav = spoken_wav("I need a doctor tomorrow morning, please.", tmp_path / "try.wav")
    out = client.predict(session, "offline-cascade-greedy", handle_file(str(wav)), api_name="/admin_try_system")
    assert "doctor" in out.lower() and "médico" in out.lower() and "asr" in out
    assert (
        "log in"
        in client.predict("nope", "offline-cascade", handle_file(str(wav)), api_name="/admin_try_system").lower()
    )


def test_survey_refuses_missing_and_out_of_range_then_saves_once(client, links, app_server):
    tok = token_of(links["rater"][0])  # third-person ratings of imported exchanges
    v = view(client, tok, "survey")
    assert v["status"] == "item" and v["content"]["stage"] == "baseline"
    out = client.predict(*survey_inputs(tok, v["item_id"], None, 3, 3), api_name="/survey_submit")
    assert "satisfaction" in out[0]["error"] and out[0]["item_id"] == v["item_id"]
    out = client.predict(*survey_inputs(tok, v["item_id"], 6, 3, 3), api_name="/survey_submit")
    assert "between 1 and 5" in out[0]["error"]
    # a refused answer comes back with the choices written in
    assert 'name="trust" value="3" checked' in out[0]["html"]
    out = client.predict(*survey_inputs(tok, v["item_id"], 4, 3, 5), api_name="/survey_submit")
    assert out[0]["notice"] == "Saved."
    again = client.predict(*survey_inputs(tok, v["item_id"], 1, 1, 1), api_name="/survey_submit")
    assert again[0]["notice"] == "This answer was already saved."
    rows = app_server.rows(
        "SELECT s.satisfaction, s.trust, s.reliance, s.perspective FROM surveys s "
        "JOIN assignments a ON a.id = s.assignment_id "
        "JOIN participants p ON p.id = a.participant_id "
        "WHERE p.token = ?",
        (tok,),
    )
    assert rows == [(4, 3, 5, "third")]


def test_a_silent_recording_is_refused_with_the_reason(client, links, app_server, tmp_path):
    import numpy as np
    import soundfile as sf
    from gradio_client import handle_file

    tok = token_of(links["sender"][1])
    v = view(client, tok, "record")
    silent = tmp_path / "silent.wav"
    sf.write(str(silent), np.zeros(48000 * 3, np.float32), 48000)
    before = app_server.rows("SELECT COUNT(*) FROM recordings")[0][0]
    out = client.predict(tok, v["item_id"], handle_file(str(silent)), api_name="/record_submit")
    assert "silent" in out[0]["error"] and out[0]["item_id"] == v["item_id"]
    notes = tmp_path / "notes.wav"
    notes.write_text("not audio")
    out = client.predict(tok, v["item_id"], handle_file(str(notes)), api_name="/record_submit")
    assert "not an audio recording" in out[0]["error"]
    assert app_server.rows("SELECT COUNT(*) FROM recordings")[0][0] == before


def test_da_rating_in_order_with_resume(client, links, app_server):
    tok = token_of(links["da"][0])  # the first rater does the text modality
    v = view(client, tok, "da")
    assert v["status"] == "item" and v["content"]["modality"] == "text" and v["content"]["image"].endswith(".png")
    out = client.predict(tok, {"item_id": v["item_id"], "answer": {"score": None}}, api_name="/da_submit")
    assert "move the slider" in out[0]["error"]
    later = app_server.rows(
        "SELECT a.item_id FROM assignments a JOIN participants p ON p.id = a.participant_id "
        "WHERE p.token = ? AND a.position = 5",
        (tok,),
    )[0][0]
    out = client.predict(tok, {"item_id": later, "answer": {"score": 40}}, api_name="/da_submit")
    assert "in order" in out[0]["error"]
    out = client.predict(tok, {"item_id": v["item_id"], "answer": {"score": 64}}, api_name="/da_submit")
    assert out[0]["notice"] == "Saved." and out[0]["progress"].startswith("1 /")
    # no going back: the same item again changes nothing
    again = client.predict(tok, {"item_id": v["item_id"], "answer": {"score": 3}}, api_name="/da_submit")
    assert again[0]["notice"] == "This answer was already saved."
    assert app_server.rows(
        "SELECT score FROM da_judgments j JOIN assignments a ON a.id = j.assignment_id WHERE a.item_id = ?",
        (v["item_id"],),
    ) == [(64.0,)]
    # a reload resumes at the next unrated item
    assert view(client, tok, "da")["item_id"] == out[0]["item_id"]


def test_da_audio_items_come_after_rendering(client, links, app_server):
    import time

    tok = token_of(links["da"][1])  # the second rater does the audio modality
    deadline = time.time() + 120
    v = view(client, tok, "da")
    while v["status"] == "waiting" and time.time() < deadline:
        assert "being prepared" in v["message"]
        time.sleep(1)
        v = view(client, tok, "da")
    assert v["status"] == "item" and v["content"]["modality"] == "audio", v
    # the reference as an image (paper 001, Figure 2); the demo does not lock the slider (the
    # paper's default: da.lock_until_played = false), so a score at once is taken
    assert v["content"]["audio"].endswith(".wav") and v["content"]["image"].endswith(".png")
    assert "reference" not in v["content"] and v["content"]["lock"] is False
    out = client.predict(tok, {"item_id": v["item_id"], "answer": {"score": 50}}, api_name="/da_submit")
    assert out[0]["notice"] == "Saved."


def test_admin_imports_a_study_zip_and_names_its_errors(client, tmp_path, app_server):
    import shutil
    import zipfile

    from gradio_client import handle_file

    from harness.demo import DEMO

    session = admin_session(client)
    folder = tmp_path / "pilot"
    shutil.copytree(DEMO, folder)
    toml = (folder / "study.toml").read_text().replace('id = "demo"', 'id = "pilot"', 1)
    (folder / "study.toml").write_text(toml.replace("hit_size = 24", "hit_size = 0"))

    def pack(name):
        z = tmp_path / name
        with zipfile.ZipFile(z, "w") as zf:
            for f in folder.iterdir():
                zf.write(f, f"pilot/{f.name}")
        return z

    bad = client.predict(session, handle_file(str(pack("bad.zip"))), api_name="/admin_import")
    assert "Nothing was imported" in bad[0] and "da.hit_size" in bad[0]
    assert app_server.rows("SELECT COUNT(*) FROM studies WHERE id = 'pilot'")[0][0] == 0
    (folder / "study.toml").write_text(toml)
    good = client.predict(session, handle_file(str(pack("good.zip"))), api_name="/admin_import")
    assert "pilot" in good[0] and "created" in good[0]
    assert app_server.rows("SELECT COUNT(*) FROM da_hits WHERE study_id = 'pilot'")[0][0] == 2
    refused = client.predict("forged", handle_file(str(pack("good.zip"))), api_name="/admin_import")
    assert "log in" in refused[0].lower()


def test_admin_runs_the_qe_audit_on_uploaded_pairs(client, tmp_path):
    from gradio_client import handle_file

    session = admin_session(client)
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(
        "instance_id,lang,source,hyp_f,hyp_m,gold\n"
        "1,pt,The teacher arrived.,A professora chegou.,O professor chegou.,F\n"
        "2,pt,The nurse left early.,A enfermeira saiu cedo.,O enfermeiro saiu cedo.,M\n"
        "3,pt,My neighbour is a doctor.,A minha vizinha é médica.,O meu vizinho é médico.,F\n"
        "4,pt,The lawyer called.,A advogada ligou.,O advogado ligou.,M\n",
        encoding="utf-8",
    )
    out = client.predict(
        session, handle_file(str(pairs)), "e5-cosine", "none", "0.8,0.9", False, api_name="/analysis_qe_audit"
    )
    notice, ratios, errors, retention, files = out[:5]
    assert "e5-cosine" in notice and "4 instances" in notice
    rows = {r[0]: r for r in ratios["data"]}
    assert set(rows) >= {"pt", "mean", "pooled"}
    assert [r[1] for r in retention["data"]][:2] == ["0.800", "0.900"]  # shown to 3 decimals (paper 003)
    assert {"ratios.csv", "errors.csv", "retention.csv", "scores.csv"} <= {
        f.rsplit("/", 1)[-1] for f in [x if isinstance(x, str) else x["path"] for x in files]
    }
    bad = tmp_path / "bad.csv"
    bad.write_text("instance_id,lang,source,hyp_f\n1,pt,x,y\n", encoding="utf-8")
    msg = client.predict(session, handle_file(str(bad)), "e5-cosine", "none", "", False, api_name="/analysis_qe_audit")[
        0
    ]
    assert "could not run" in msg and "hyp_m" in msg
    assert (
        "log in"
        in client.predict(
            "nope", handle_file(str(pairs)), "e5-cosine", "none", "", False, api_name="/analysis_qe_audit"
        )[0].lower()
    )


def test_admin_builds_paper_003_tables_from_the_sessions_audits(client, tmp_path):
    """Issue 27 point 8, paper 003 appendix B.5 Table 8 and section 6 Figure 4 in the Analysis
    tab: the audits run in the session (here precomputed scores: a counterfactual pair of rows,
    feminine pairs lower) feed the cross-metric tables; the run list names each run's hypotheses."""
    import pandas as pd
    from gradio_client import handle_file

    own = AppClient(client.url)  # a session of its own: its run list starts empty
    session = admin_session(own)
    empty = own.predict(session, {"headers": ["run"], "data": []}, api_name="/analysis_qe_paper")[0]
    assert "Run the audit above" in empty
    cf = tmp_path / "cf.csv"
    lines = [(0.8, 0.9), (0.7, 0.75), (0.85, 0.88), (0.6, 0.66)]
    rows = ["instance_id,lang,source,hyp_f,hyp_m,gold,score_f,score_m"]
    for i, (ff, mm) in enumerate(lines):
        rows += [f"{i}F,pt,she {i},a {i},o {i},F,{ff},0.1", f"{i}M,pt,he {i},a {i},o {i},M,0.1,{mm}"]
    cf.write_text("\n".join(rows) + "\n", encoding="utf-8")
    amb = tmp_path / "amb.csv"
    amb.write_text(
        "instance_id,lang,source,hyp_f,hyp_m,score_f,score_m\n1,pt,x,a,o,0.5,0.6\n2,pt,y,b,p,0.7,0.8\n",
        encoding="utf-8",
    )
    for path in (cf, amb):
        out = own.predict(
            session, handle_file(str(path)), "e5-cosine", "none", "", False, api_name="/analysis_qe_audit"
        )
        assert "precomputed" in out[0]
    run_list = out[-1]
    assert [r[0] for r in run_list["data"]] == [1, 2]
    run_list["data"][0][-1] = "GT"
    notice, t8, marks = own.predict(session, run_list, api_name="/analysis_qe_paper")[:3]
    # the notes box of paper 003's part (issue 28): its title, the runs, what a missing item needs
    assert "(paper 003)" in notice and "2 audit run(s)" in notice and "Figure 4 needs an unambiguous run" in notice
    t8 = pd.DataFrame(t8["data"], columns=t8["headers"]).set_index("lang")
    assert t8.loc["pt", "hypotheses"] == "GT"
    # shown to paper 003's three decimals (the CSV keeps every digit)
    assert float(t8.loc["pt", "mean_ratio"]) == pytest.approx(sum(f / m for f, m in lines) / 4, abs=5e-4)
    assert marks["headers"] == ["metric", "GT pt"] and marks["data"][0][1] == "⚠"
    assert "log in" in own.predict("nope", run_list, api_name="/analysis_qe_paper")[0].lower()


def test_admin_exports_the_study_as_a_zip(client, links):
    import zipfile

    session = admin_session(client)
    path, msg = client.predict(session, "demo", "csv", False, False, api_name="/admin_export")
    path = path if isinstance(path, str) else path["path"]
    assert "README.md" in msg
    names = zipfile.ZipFile(path).namelist()
    assert any(n.endswith("participants.csv") for n in names) and any(n.endswith("README.md") for n in names)
    blob = b"".join(zipfile.ZipFile(path).read(n) for n in names)
    for url in links["receiver"] + links["sender"]:
        assert token_of(url).encode() not in blob  # link secrets never leave the app
    assert "log in" in client.predict("nope", "demo", "csv", False, False, api_name="/admin_export")[1].lower()


def test_passwordless_admin_refuses_a_request_through_a_proxy(app_server):
    proxied = AppClient(app_server.url, headers={"X-Forwarded-For": "203.0.113.9"})
    out = proxied.predict("", api_name="/admin_login")
    assert not isinstance(out[0], str) or not out[0]  # no session handed out
    assert "localhost" in str(out[1])
    direct = AppClient(app_server.url).predict(ADMIN_SECRET, api_name="/admin_login")
    assert direct[0]


def test_the_page_is_sent_compressed(app_server):
    """Every page load carries the whole app's config (~460 KB); gzip shrinks it about tenfold."""
    import httpx

    r = httpx.get(app_server.url + "/", headers={"Accept-Encoding": "gzip"}, timeout=30)
    assert r.status_code == 200 and r.headers["content-encoding"] == "gzip"
    assert r.num_bytes_downloaded * 5 < len(r.content) and '"components"' in r.text
    plain = httpx.get(app_server.url + "/", headers={"Accept-Encoding": "identity"}, timeout=30)
    assert "content-encoding" not in plain.headers and abs(len(plain.content) - len(r.content)) < 1000
