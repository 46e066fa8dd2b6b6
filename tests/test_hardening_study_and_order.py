"""Issue 17, points 6, 9, 10 and the per-token request limit:
- an imported study cannot send requests to hosts the server does not allow, name any
  variable as its API key, or run a model's own code unless the server allows it;
- participant text (a receiver's answers) is shown as plain text on the validator's page, and
  the welcome message (which may echo URL parameters) is never Markdown;
- a submit must be for the caller's next open item, is refused when the item is withdrawn or
  the participant deactivated while it runs (nothing stored, no job), DA feedback only from
  DA raters;
- more views and submits per second for one link than the limit are refused."""

from __future__ import annotations

import dataclasses
import shutil
import wave
import zipfile

import gradio as gr
import numpy as np
import pytest
from markdown_it import MarkdownIt

from harness.demo import DEMO_ASSETS
from services.common import protocols
from services.da import campaign as da_campaign
from services.models.backends import BackendUnavailable
from services.models.backends.remote import RemoteMT, host_allowed
from services.participation import rate_limit
from services.participation.items import AccessError, ItemView, TooManyRequests, get_view
from services.participation.submissions import SubmissionError, submit
from services.setup.enrolment import add_participants
from services.setup.importer import import_zip
from services.study.files import StudyValidationError, load_study
from services.usability import protocol as usability_protocol
from storage import assignments, participants

PIXEL = "http://127.0.0.1:9/pixel"
PAYLOAD = f"![x]({PIXEL}) <img src={PIXEL}> [link](javascript:alert(1)) **bold** <{PIXEL}>"


@pytest.fixture(autouse=True)
def fresh_buckets(monkeypatch):
    for var in (
        "TRADLAB_REMOTE_HOSTS",
        "TRADLAB_KEY_PREFIX",
        "TRADLAB_ALLOW_REMOTE_CODE",
        "TRADLAB_RATE_LIMIT",
        "TRADLAB_LLM_BASE_URL",
        "TRADLAB_GEMBA_BASE_URL",
    ):
        monkeypatch.delenv(var, raising=False)
    rate_limit.configure(None)
    yield
    rate_limit.configure(None)


# -- 6: an imported study's remote endpoints, key variables and remote code --------------------


def study_with(tmp_path, systems: str = "", llm: str = "", name: str = "study"):
    folder = tmp_path / name
    shutil.copytree(DEMO_ASSETS, folder)
    toml = (folder / "study.toml").read_text(encoding="utf-8")
    assert "\n[da]\n" in toml
    toml = toml.replace("\n[da]\n", "\n" + systems + "\n[da]\n", 1) + ("\n[llm]\n" + llm if llm else "")
    (folder / "study.toml").write_text(toml, encoding="utf-8")
    return folder


def zipped(folder):
    path = folder.parent / f"{folder.name}.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for f in folder.rglob("*"):
            if f.is_file():
                zf.write(f, f.relative_to(folder))
    return path


def remote_system(base_url: str, key: str = "") -> str:
    return (
        '[[systems]]\nid = "served"\nkind = "remote"\nassign = false\n[systems.params]\n'
        f'base_url = "{base_url}"\nmodel = "m"\nprompt = "Translate."\n' + (f'api_key_env = "{key}"\n' if key else "")
    )


def messages(excinfo) -> str:
    return "\n".join(str(e) for e in excinfo.value.errors)


def test_a_study_zip_naming_a_remote_host_is_refused(tmp_path, database, monkeypatch):
    folder = study_with(
        tmp_path,
        remote_system("https://models.example.com/v1"),
        'model = "m"\nbase_url = "http://169.254.169.254/v1"\n',
    )
    with pytest.raises(StudyValidationError) as e:
        import_zip(database, zipped(folder))
    text = messages(e)
    assert "systems[3], field 'systems[3].params.base_url'" in text or "systems[3].params.base_url" in text
    assert "models.example.com" in text and "TRADLAB_REMOTE_HOSTS" in text
    assert "llm.base_url" in text and "169.254.169.254" in text
    assert database.scalar("SELECT COUNT(*) FROM studies") == 0
    # loopback needs no setting; another host once the server's allow-list names it
    load_study(study_with(tmp_path, remote_system("http://127.0.0.1:8000/v1"), name="loopback"))
    monkeypatch.setenv("TRADLAB_REMOTE_HOSTS", "models.example.com, 169.254.169.254")
    assert import_zip(database, zipped(folder)).study_id == "demo"


def test_requests_go_only_to_allowed_hosts_whatever_configured_them(monkeypatch):
    """Defence in depth: a study stored before the check (or any other path) still cannot
    make the worker call another host; nothing is sent."""
    with pytest.raises(BackendUnavailable, match="not allowed"):
        RemoteMT("https://models.example.com/v1", "m", "{text}").translate(["Hello."])
    assert not host_allowed("https://models.example.com/v1") and host_allowed("http://[::1]:8000/v1")
    monkeypatch.setenv("TRADLAB_LLM_BASE_URL", "https://models.example.com/v1")  # the server's own URL
    assert host_allowed("https://models.example.com:8443/v1")
    assert not host_allowed("https://other.example.com/v1")


def test_a_study_key_variable_without_the_prefix_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("TRADLAB_ADMIN_PASSWORD", "s3cret")
    folder = study_with(
        tmp_path,
        remote_system("http://127.0.0.1:8000/v1", "TRADLAB_ADMIN_PASSWORD"),
        'model = "m"\nbase_url = "http://127.0.0.1:8000/v1"\napi_key_env = "HOME"\n',
    )
    with pytest.raises(StudyValidationError) as e:
        load_study(folder)
    text = messages(e)
    assert "systems[3].params.api_key_env" in text and "TRADLAB_ADMIN_PASSWORD" in text
    assert "llm.api_key_env" in text and "must start with TRADLAB_KEY_" in text
    ok = study_with(
        tmp_path,
        remote_system("http://127.0.0.1:8000/v1", "TRADLAB_KEY_VLLM"),
        'model = "m"\nbase_url = "http://127.0.0.1:8000/v1"\napi_key_env = "TRADLAB_KEY_LLM"\n',
        name="ok",
    )
    load_study(ok)
    # and at request time the admin password is never sent as a key, whatever named it
    with pytest.raises(BackendUnavailable, match="never sent"):
        RemoteMT("http://127.0.0.1:9/v1", "m", "{text}", api_key_env="TRADLAB_ADMIN_PASSWORD").translate(["Hi."])


def test_trust_remote_code_from_a_study_file_is_refused(tmp_path, monkeypatch):
    direct = (
        '[[systems]]\nid = "own-code"\nkind = "direct"\nassign = false\n[systems.params]\n'
        'model = "some/model"\nprompt = "Translate."\ntrust_remote_code = true\n'
    )
    folder = study_with(tmp_path, direct)
    with pytest.raises(StudyValidationError) as e:
        load_study(folder)
    assert "trust_remote_code" in messages(e) and "TRADLAB_ALLOW_REMOTE_CODE" in messages(e)
    monkeypatch.setenv("TRADLAB_ALLOW_REMOTE_CODE", "1")
    load_study(folder)


# -- 9: participant text shown as plain text ---------------------------------------------------


def rendered(component, value) -> str:
    """What the browser gets to interpret: Markdown rendered (CommonMark), HTML as is."""
    if isinstance(component, gr.Markdown):
        return MarkdownIt("commonmark").render(value)
    return value


def test_an_answer_with_markup_is_shown_as_text_on_the_validators_page():
    from tabs import validator
    from tabs.common import Ctx

    with gr.Blocks():
        ctx = Ctx(None, None, gr.Textbox(visible=False))
        ui = validator.build(ctx)
    content = {
        "source": "An *English* source.",
        "translation": PAYLOAD,
        "questions": [{"idx": 1, "en": "Who?", "pt": "Quem?"}, {"idx": 2, "en": "Where?", "pt": "Onde?"}],
        "answers": [
            {"idx": 1, "text": PAYLOAD, "unanswerable": False},
            {"idx": 2, "text": "<script>alert(1)</script>", "unanswerable": False},
        ],
        "sqm": [],
    }
    out = ui.render(ItemView("validator", "item", "", 0, 6, "validate", "17", content))
    # the item is one HTML form (tabs/item_form.py), the gr.HTML component shows it as is
    form = next(v for v in out.values() if isinstance(v, dict) and "html" in v)["html"]
    assert form.count("Answer:") == 2
    assert "Portuguese translation" in form and "![x](" in form  # the translation, as text
    assert "<img" not in form and "<a " not in form and "<script" not in form and "href" not in form, form
    assert "![x](" + PIXEL + ")" in form.replace("&lt;", "<")  # the text itself is there, as typed


def test_a_welcome_problem_echoing_url_text_is_plain():
    from tabs.common import plain_markdown

    problem = f"Unknown study '{PAYLOAD}'."
    html = MarkdownIt("commonmark").render(f"**{plain_markdown(problem)}**")
    assert "<img" not in html and "<a " not in html and "href" not in html
    assert "<strong>" in html and "![x](" in html  # shown, bold, as typed
    assert "<img" in MarkdownIt("commonmark").render(f"**{problem}**")  # what it was before


# -- 10: order, withdrawn items, deactivated participants, DA feedback -------------------------


def write_wav(path, seconds=4.0, rate=16000):
    t = np.arange(int(seconds * rate)) / rate
    sig = 0.3 * np.sin(2 * np.pi * 220 * t) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t))
    sig[: int(0.3 * rate)] = 0.0
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((sig * 32767).astype("<i2").tobytes())
    return str(path)


@pytest.fixture
def people(demo_db):
    roles = {r: add_participants(demo_db, "demo", r, 1)[0] for r in ("receiver", "validator", "rater", "da")}
    roles["sender"] = add_participants(demo_db, "demo", "sender", 1, "USB", "Man")[0]
    return roles


def count(db, sql, *args):
    return db.scalar(sql, list(args))


def answers_for(view):
    return {"answers": [{"idx": q["idx"], "text": "sim", "unanswerable": False} for q in view.content["questions"]]}


def test_a_senders_later_record_item_is_refused_while_an_earlier_one_is_next(demo_db, people, tmp_path):
    tok, pid = people["sender"].token, people["sender"].id
    shown = get_view(demo_db, tok, "record")
    later = [
        a
        for a in assignments.open_assignments(demo_db, pid)
        if a["phase"] == "record" and a["item_id"] != shown.item_id
    ]
    assert later
    with pytest.raises(SubmissionError, match="in order"):
        submit(
            demo_db,
            tok,
            "record",
            later[0]["item_id"],
            {"audio": write_wav(tmp_path / "a.wav")},
            media_dir=tmp_path / "media",
        )
    assert count(demo_db, "SELECT COUNT(*) FROM recordings") == 0
    assert count(demo_db, "SELECT COUNT(*) FROM jobs WHERE kind = 'process_recording'") == 0
    assert submit(
        demo_db, tok, "record", shown.item_id, {"audio": write_wav(tmp_path / "b.wav")}, media_dir=tmp_path / "media"
    ).saved


def survey_placed_first(db, pid: int, shown, phase: str) -> int:
    """Another exchange's survey of `phase` given to the participant ahead of every item in their
    queue (position -1); its exchange id."""
    other = int(
        db.scalar("SELECT id FROM exchanges WHERE id != ? ORDER BY id LIMIT 1", [int(shown.item_id.split(":")[1])])
    )
    with db.write() as d:
        assignments.insert_assignment(d, "demo", pid, phase, other, -1.0, exchange_id=other)
    return other


def test_an_informed_survey_before_the_baseline_is_refused(demo_db, people):
    tok, pid = people["rater"].token, people["rater"].id
    base = get_view(demo_db, tok, "survey")
    assert base.phase == "survey_baseline"
    other = survey_placed_first(demo_db, pid, base, "survey_informed")
    with pytest.raises(SubmissionError, match="in order"):
        submit(demo_db, tok, "survey", f"survey_informed:{other}", {"satisfaction": 3, "trust": 3, "reliance": 3})
    assert count(demo_db, "SELECT COUNT(*) FROM surveys") == 0
    assert submit(demo_db, tok, "survey", base.item_id, {"satisfaction": 3, "trust": 3, "reliance": 3}).saved


def test_a_record_item_withdrawn_during_the_submit_is_refused_and_starts_no_job(demo_db, people, tmp_path, monkeypatch):
    tok, pid = people["sender"].token, people["sender"].id
    shown = get_view(demo_db, tok, "record")
    a = assignments.find_assignment(demo_db, pid, "record", shown.item_id)
    original = usability_protocol.store_recording

    def withdrawn_meanwhile(*args, **kwargs):  # the admin withdraws it while the audio is checked
        with demo_db.write() as db:
            assignments.withdraw(db, a["id"])
        return original(*args, **kwargs)

    monkeypatch.setattr(usability_protocol, "store_recording", withdrawn_meanwhile)
    with pytest.raises(SubmissionError, match="withdrawn"):
        submit(
            demo_db,
            tok,
            "record",
            shown.item_id,
            {"audio": write_wav(tmp_path / "a.wav")},
            media_dir=tmp_path / "media",
        )
    assert count(demo_db, "SELECT COUNT(*) FROM recordings") == 0
    assert count(demo_db, "SELECT COUNT(*) FROM jobs WHERE kind = 'process_recording'") == 0
    assert assignments.assignment(demo_db, a["id"])["status"] == "withdrawn"


def patch_validate(monkeypatch, phase: str, validate) -> None:
    """The phase's validation replaced for one test, in the registry's index (restored after)."""
    index = protocols._index("phases")
    spec, found = index[phase]
    monkeypatch.setitem(index, phase, (spec, dataclasses.replace(found, validate=validate)))


def test_a_receive_item_withdrawn_during_the_submit_opens_nothing(demo_db, people, monkeypatch):
    tok, pid = people["receiver"].token, people["receiver"].id
    shown = get_view(demo_db, tok, "receiver")
    a = assignments.find_assignment(demo_db, pid, "receive", shown.item_id)
    original = protocols.phase("receive").validate

    def withdrawn_meanwhile(database, a_, payload):
        with demo_db.write() as db:
            assignments.withdraw(db, a["id"])
        return original(database, a_, payload)

    patch_validate(monkeypatch, "receive", withdrawn_meanwhile)
    with pytest.raises(SubmissionError, match="withdrawn"):
        submit(demo_db, tok, "receiver", shown.item_id, answers_for(shown), lang="en")
    assert count(demo_db, "SELECT COUNT(*) FROM answers") == 0
    assert count(demo_db, "SELECT COUNT(*) FROM assignments WHERE phase = 'validate'") == 0


def test_a_participant_deactivated_during_the_submit_is_refused(demo_db, people, monkeypatch):
    tok, pid = people["receiver"].token, people["receiver"].id
    shown = get_view(demo_db, tok, "receiver")
    original = protocols.phase("receive").validate

    def deactivated_meanwhile(database, a, payload):
        with demo_db.write() as db:
            participants.set_active(db, pid, False)
        return original(database, a, payload)

    patch_validate(monkeypatch, "receive", deactivated_meanwhile)
    with pytest.raises(AccessError, match="deactivated"):
        submit(demo_db, tok, "receiver", shown.item_id, answers_for(shown), lang="en")
    assert count(demo_db, "SELECT COUNT(*) FROM answers") == 0
    assert count(demo_db, "SELECT COUNT(*) FROM assignments WHERE phase = 'validate'") == 0


def test_da_feedback_only_from_da_raters(demo_db, people):
    with pytest.raises(da_campaign.DAError, match="only for its raters"):
        da_campaign.save_feedback(demo_db, people["receiver"].id, "![x](http://127.0.0.1:9/p)")
    assert count(demo_db, "SELECT COUNT(*) FROM da_feedback") == 0
    da_campaign.save_feedback(demo_db, people["da"].id, "Fine.")
    assert count(demo_db, "SELECT COUNT(*) FROM da_feedback") == 1


def test_da_feedback_is_rate_limited_and_written_only_when_it_changes(demo_db, people, monkeypatch):
    """Issue 49: one DA link posted feedback 216-336 times a second, each an upsert and an audit
    row under the write lock. Now the same text again takes no write at all, a change is one
    upsert and one audit row, and the link's request limit (as views and submits) refuses a flood."""
    pid = people["da"].id
    writes = []
    real = demo_db.write
    monkeypatch.setattr(demo_db, "write", lambda: writes.append(1) or real())
    logged = "SELECT COUNT(*) FROM events WHERE action = 'feedback'"
    for _ in range(200):
        da_campaign.save_feedback(demo_db, pid, "The audio was clear.")
    assert (len(writes), count(demo_db, logged)) == (1, 1)  # before: 200 writes, 200 audit rows
    identical = len(writes)
    assert not da_campaign.save_feedback(demo_db, pid, "  The audio was clear.\n")  # the same once stripped
    assert da_campaign.save_feedback(demo_db, pid, "Clear, but long.")
    assert (len(writes), count(demo_db, logged)) == (2, 2)
    assert demo_db.one("SELECT text FROM da_feedback WHERE participant_id = ?", [pid])["text"] == "Clear, but long."
    rate_limit.configure(1)  # 1 per second, a burst of 2
    refused = 0
    for i in range(20):
        try:
            da_campaign.save_feedback(demo_db, pid, f"Version {i}.")
        except TooManyRequests as e:
            assert "slow down" in str(e)
            refused += 1
    assert refused >= 17, refused  # before: none refused
    assert count(demo_db, logged) <= 2 + 3
    print(f"200 identical feedbacks: {identical} write; 20 changed ones at once, 1/s allowed: {refused} refused")


# -- 8 (part): a per-token request limit -------------------------------------------------------


def test_too_many_requests_for_one_link_are_refused(demo_db, people, monkeypatch):
    rate_limit.configure(1)  # 1 per second, a burst of 2
    tok = people["receiver"].token
    refused = []
    for _ in range(4):
        try:
            view = get_view(demo_db, tok, "receiver", lang="en")
        except TooManyRequests as e:
            refused.append(str(e))
    assert refused and "slow down" in refused[0]
    with pytest.raises(AccessError, match="slow down"):
        submit(demo_db, tok, "receiver", view.item_id, answers_for(view), lang="en")
    assert count(demo_db, "SELECT COUNT(*) FROM answers") == 0
    assert get_view(demo_db, people["validator"].token, "validator")  # another link is not held up
    rate_limit.configure(0)  # 0: no limit
    for _ in range(5):
        get_view(demo_db, tok, "receiver")


def test_made_up_tokens_leave_no_state_behind(demo_db, people):
    """Issue 30.3: the limiter keys a bucket on the participant a token names, after the lookup;
    40 made-up tokens of 2 MB each (a view and a submit each) are refused and leave no bucket
    (before: one per token string, 75 MB held in the server)."""
    rate_limit.configure(20)
    try:
        for k in range(40):
            forged = str(k) * 2_000_000
            with pytest.raises(AccessError, match="not valid"):
                get_view(demo_db, forged, "receiver", lang="en")
            with pytest.raises(AccessError, match="not valid"):
                submit(demo_db, forged, "receiver", "1", {}, lang="en")
        assert len(rate_limit.BUCKETS._buckets) == 0
        get_view(demo_db, people["receiver"].token, "receiver")  # a real link has its bucket
        assert list(rate_limit.BUCKETS._buckets) == [str(people["receiver"].id)]
    finally:
        rate_limit.configure(0)


def test_the_bucket_refills_with_time():
    now = [0.0]
    b = rate_limit.TokenBuckets(rate=20, burst=40, clock=lambda: now[0])
    assert sum(b.allow("t") for _ in range(60)) == 40
    now[0] += 0.5  # 10 more after half a second
    assert sum(b.allow("t") for _ in range(20)) == 10
    assert b.allow("other")


def test_text_from_speech_and_studies_is_shown_as_typed_on_every_page():
    """The receiver's and the survey's translation and the reviewer's transcript go through the
    same escaping as the validator's answers: rendered as CommonMark (markdown-it, as a browser's
    Markdown renderer would), markup in them is shown, not interpreted."""
    from pathlib import Path

    from tabs.common import plain_markdown

    hostile = "![x](http://127.0.0.1:9/pixel) <img src=x onerror=alert(1)> [a](javascript:alert(1)) **b**"
    rendered = MarkdownIt("commonmark").render(plain_markdown(hostile))
    assert "<img" not in rendered and "<a " not in rendered and "<strong>" not in rendered, rendered
    assert MarkdownIt("commonmark").render(hostile).count("<img") == 2  # the check can fail
    for name in ("receiver", "survey", "admin_usability"):  # the review of recordings: admin_usability
        src = (Path(__file__).resolve().parents[1] / "tabs" / f"{name}.py").read_text()
        assert "plain_markdown(" in src or "plain_html(" in src, name


def test_an_item_on_screen_is_answered_when_a_newcomer_takes_a_place_before_it(demo_db, people):
    """A survey handed to a rater while another is on their screen may sort before it: the one
    shown is saved, the newcomer comes next (the 200% simulation's rater 397 was refused)."""
    tok, pid = people["rater"].token, people["rater"].id
    shown = get_view(demo_db, tok, "survey")
    assert shown.phase == "survey_baseline"
    other = survey_placed_first(demo_db, pid, shown, "survey_baseline")
    res = submit(demo_db, tok, "survey", shown.item_id, {"satisfaction": 3, "trust": 3, "reliance": 3})
    assert res.saved and res.next.item_id == f"survey_baseline:{other}"
    assert count(demo_db, "SELECT COUNT(*) FROM surveys") == 1
