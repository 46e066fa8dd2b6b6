"""Issue 29, second round, in headless Chromium at 1280 and 390 px: the semantic differential's
sliders (and the radio setting), the informed survey's outcomes, one language per page (Prolific
refusals and <html lang>), the completion code's copy button and the DA slider's end labels.
Screenshots: round2-*.png (tests/helpers/browser.py ARTIFACTS)."""

from __future__ import annotations

import shutil

import pytest

from harness.app import RunningApp
from harness.demo import DEMO
from tests.helpers.app import token_of
from tests.helpers.browser import ARTIFACTS

pytestmark = pytest.mark.browser

WIDTHS = (1280, 390)


def new_page(browser, width: int, origin: str | None = None):
    phone = width < 640
    ctx = browser.new_context(
        viewport={"width": width, "height": 844 if phone else 1000}, is_mobile=phone, has_touch=phone
    )
    if origin:
        ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=origin)
    return ctx, ctx.new_page()


def app_db(app):
    from storage import open_database

    return open_database(app.env["TRADLAB_DB"])


def no_sideways_scroll(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def to_ratings(page) -> str:
    """Past the welcome and the example pages; returns the welcome's text."""
    page.locator("#sd-form form").wait_for(timeout=20000)
    welcome = page.locator("#sd-form .instruction").inner_text()
    for _ in range(2):
        page.get_by_role("button", name="Next").click()
        page.wait_for_timeout(1200)
    page.locator(".sd-row").first.wait_for(timeout=20000)
    return welcome


def clipped(page) -> list[str]:
    """The adjectives whose text does not fit their box (cut, or spilling over a neighbour)."""
    return page.evaluate("""() => [...document.querySelectorAll('.sd-left, .sd-right')]
        .filter(e => e.offsetParent && e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)""")


# -- 5: the semantic differential ----------------------------------------------------------------
@pytest.mark.parametrize("width", WIDTHS)
def test_sd_is_one_slider_per_pair_from_minus_3_to_plus_3_and_unmoved_is_unanswered(app_server, browser, width):
    link = app_server.links()["sd"][WIDTHS.index(width)]
    ctx, page = new_page(browser, width)
    try:
        page.goto(link)
        welcome = to_ratings(page)
        assert "move the slider" in welcome and "-3 to +3" in welcome
        rows = page.locator(".sd-row")
        n = rows.count()
        assert n >= 5
        assert page.locator(".sd-row input[type=radio]").count() == 0
        for i in range(n):
            s = rows.nth(i).locator("input[type=range]")
            assert s.count() == 1
            assert [s.get_attribute(a) for a in ("min", "max", "step")] == ["-3", "3", "1"]
            assert rows.nth(i).locator(".sd-ticks").inner_text().split() == ["-3", "-2", "-1", "0", "+1", "+2", "+3"]
        assert "move the slider" in page.locator("#sd-form .instruction").inner_text()
        assert clipped(page) == [] and no_sideways_scroll(page)
        page.screenshot(path=str(ARTIFACTS / f"round2-sd-slider-{width}.png"), full_page=True)
        # nothing moved: refused, nothing stored
        page.get_by_role("button", name="Next").click()
        page.locator(".msg.error").wait_for(timeout=15000)
        assert "Please answer every scale" in page.locator(".msg.error").inner_text()
        pid = app_server.rows("SELECT id FROM participants WHERE token = ?", (token_of(link),))[0][0]
        stored = (
            "SELECT count(*) FROM sd_ratings r JOIN assignments a ON a.id = r.assignment_id WHERE a.participant_id = ?"
        )
        assert app_server.rows(stored, (pid,))[0][0] == 0
        # every unmoved slider's row marked in place, the focus on the first
        assert page.locator(".sd-row.field-invalid").count() == n
        assert page.locator(".sd-row .field-error").count() == n
        widths = page.evaluate("""() => [...document.querySelectorAll('.sd-row .field-error')]
            .map(e => e.getBoundingClientRect().width / e.parentElement.getBoundingClientRect().width)""")
        assert min(widths) > 0.9, widths  # each note under its whole row, not in one cell
        first_id = rows.nth(0).locator("input[type=range]").get_attribute("id")
        page.wait_for_function(
            "id => document.activeElement && document.activeElement.id === id", arg=first_id, timeout=5000
        )
        page.screenshot(path=str(ARTIFACTS / f"round2-sd-slider-refused-{width}.png"), full_page=True)
        # the first slider to +2 by keys, the others clicked where they stand (the middle: 0)
        first = rows.nth(0).locator("input[type=range]")
        first.focus()
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        for i in range(1, n):
            rows.nth(i).locator("input[type=range]").click()
        assert first.evaluate("e => e.classList.contains('moved')")
        # all moved: the marks and the error are gone
        assert page.locator(".sd-row.field-invalid").count() == 0 and page.locator(".msg.error").count() == 0
        page.screenshot(path=str(ARTIFACTS / f"round2-sd-slider-moved-{width}.png"), full_page=True)
        page.get_by_role("button", name="Next").click()
        page.locator(".msg.ok").wait_for(timeout=15000)
        values = sorted(
            abs(v)
            for (v,) in app_server.rows(
                "SELECT r.value FROM sd_ratings r JOIN assignments a ON a.id = r.assignment_id "
                "WHERE a.participant_id = ?",
                (pid,),
            )
        )
        assert values == [0] * (n - 1) + [2]
        # the next page's sliders start unmoved again
        assert page.locator(".sd-row input.moved").count() == 0
        # the first sentence's other pages: every one of its pairs shown, none cut ("unprofessional"
        # was cut at 390 px), no sideways scroll
        seen = set()
        for k in range(3):
            page.locator(".sd-page", has_text=f"page {k + 2} of 4").wait_for(timeout=15000)
            assert clipped(page) == [] and no_sideways_scroll(page), k
            seen |= set(page.locator(".sd-left, .sd-right").all_inner_texts())
            for i in range(rows.count()):
                rows.nth(i).locator("input[type=range]").click()
            page.get_by_role("button", name="Next").click()
        assert "unprofessional" in seen, seen
    finally:
        ctx.close()


@pytest.fixture(scope="module")
def radio_app(tmp_path_factory):
    """The demo study with sd.input = "radio" (a lab that prefers seven points)."""
    tmp = tmp_path_factory.mktemp("radio")
    folder = tmp / "study"
    shutil.copytree(DEMO, folder)
    toml = (folder / "study.toml").read_text(encoding="utf-8")
    assert "\n[sd]\n" in toml
    (folder / "study.toml").write_text(toml.replace("\n[sd]\n", '\n[sd]\ninput = "radio"\n', 1), encoding="utf-8")
    app = RunningApp(tmp)
    assert app.setup_cli("import", str(folder)).returncode == 0
    assert app.setup_cli("participants", "add", "--study", "demo", "--role", "sd", "--count", "2").returncode == 0
    app.start()
    yield app
    app.stop()


@pytest.mark.parametrize("width", WIDTHS)
def test_sd_radio_setting_shows_seven_points_with_matching_instructions(radio_app, browser, width):
    ctx, page = new_page(browser, width)
    try:
        page.goto(radio_app.links()["sd"][WIDTHS.index(width)])
        welcome = to_ratings(page)
        assert "slider" not in welcome.lower() and "seven points" in welcome
        assert "slider" not in page.locator("#sd-form .instruction").inner_text().lower()
        rows = page.locator(".sd-row")
        assert page.locator(".sd-row input[type=range]").count() == 0
        for i in range(rows.count()):
            boxes = [b.bounding_box() for b in rows.nth(i).locator("input[type=radio]").all()]
            assert len(boxes) == 7
            assert max(b["y"] for b in boxes) - min(b["y"] for b in boxes) < 2  # one line, in order
            assert [b["x"] for b in boxes] == sorted(b["x"] for b in boxes)
        assert clipped(page) == [] and no_sideways_scroll(page)
        page.screenshot(path=str(ARTIFACTS / f"round2-sd-radio-{width}.png"), full_page=True)
        for i in range(rows.count()):
            rows.nth(i).locator("input[type=radio]").nth(5).check()
        page.get_by_role("button", name="Next").click()
        page.locator(".msg.ok").wait_for(timeout=15000)
    finally:
        ctx.close()


# -- 7: the informed survey ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def informed_rater(app_server) -> str:
    """A rater with informed surveys open: their baselines, a receiver's answers (question 1
    flagged as not answerable) and a validator's marks (1 accepted, 2 incorrect, the rest correct)."""
    from services.participation.items import get_view
    from services.participation.submissions import submit

    db = app_db(app_server)
    links = app_server.links()
    rater, receiver, validator = (token_of(links[r][0]) for r in ("rater", "receiver", "validator"))
    while (b := get_view(db, rater, "survey")).status == "item" and b.item_id.startswith("survey_baseline"):
        submit(db, rater, "survey", b.item_id, {"satisfaction": 4, "trust": 4, "reliance": 5})
    while (v := get_view(db, receiver, "receiver")).status == "item":
        submit(
            db,
            receiver,
            "receiver",
            v.item_id,
            {
                "answers": [
                    {
                        "idx": q["idx"],
                        "text": "" if q["idx"] == 1 else f"resposta número {q['idx']}",
                        "unanswerable": q["idx"] == 1,
                    }
                    for q in v.content["questions"]
                ]
            },
        )
    while (val := get_view(db, validator, "validator")).status == "item":
        submit(
            db,
            validator,
            "validator",
            val.item_id,
            {"score": 70, "marks": {q["idx"]: q["idx"] != 2 for q in val.content["questions"]}},
        )
    assert get_view(db, rater, "survey").item_id.startswith("survey_informed")
    return links["rater"][0]


@pytest.mark.parametrize("width", WIDTHS)
def test_informed_outcomes_read_at_a_glance(app_server, browser, informed_rater, width):
    ctx, page = new_page(browser, width)
    try:
        page.goto(informed_rater)
        page.locator(".outcome").first.wait_for(timeout=20000)
        kinds = {k: page.locator(f".outcome-{k}") for k in ("correct", "incorrect", "accepted")}
        assert all(loc.count() >= 1 for loc in kinds.values())
        looks = {
            k: loc.first.evaluate("e => getComputedStyle(e).backgroundColor + getComputedStyle(e).borderLeftColor")
            for k, loc in kinds.items()
        }
        assert len(set(looks.values())) == 3, looks  # three looks, not one
        assert kinds["correct"].first.locator(".outcome-mark").inner_text().endswith("Correct")
        assert kinds["incorrect"].first.locator(".outcome-mark").inner_text().endswith("Incorrect")
        assert "not answerable" in kinds["accepted"].first.locator(".outcome-mark").inner_text()
        # no list numbers hanging outside the column: every card inside the form
        form = page.locator("#survey-form form").bounding_box()
        for box in (b.bounding_box() for b in page.locator(".outcome").all()):
            assert box["x"] >= form["x"] and box["x"] + box["width"] <= form["x"] + form["width"] + 1
        assert page.locator("ol.outcome-list").evaluate("e => getComputedStyle(e).listStyleType") == "none"
        # the receiver's answer labelled as Portuguese, the English question beside it
        card = kinds["correct"].first
        assert "Their answer (in Portuguese)" in card.locator(".outcome-a").inner_text()
        assert card.locator('.outcome-a [lang="pt-PT"]').inner_text().startswith("resposta número")
        q, a = card.locator(".outcome-q").bounding_box(), card.locator(".outcome-a").bounding_box()
        if width >= 640:
            assert abs(q["y"] - a["y"]) < 2 and q["x"] < a["x"]  # side by side
        else:
            assert a["y"] > q["y"]  # one under the other
        # the validator's score with its DA+SQM label, marked on the scale
        score = page.locator(".outcome-score").first.inner_text()
        assert "70 / 100" in score and "Most meaning preserved and few grammar mistakes" in score
        assert (
            page.locator(".outcome-sqm li.current")
            .first.inner_text()
            .endswith("Most meaning preserved and few grammar mistakes")
        )
        assert no_sideways_scroll(page)
        page.locator(".outcomes").screenshot(path=str(ARTIFACTS / f"round2-informed-{width}.png"))
    finally:
        ctx.close()


# -- 9: one language per page --------------------------------------------------------------------
def prolific_url(app, role: str, **params) -> str:
    from services.setup.enrolment import prolific_links

    url = next(r["url"] for r in prolific_links(app_db(app), "demo", app.url) if r["role"] == role)
    return (
        url.replace("{{%PROLIFIC_PID%}}", params.get("pid", "5f0c1a2b3c4d5e6f7a8b9c01"))
        .replace("{{%STUDY_ID%}}", "study42")
        .replace("{{%SESSION_ID%}}", "sess1")
    )


@pytest.mark.parametrize("width", WIDTHS)
def test_the_receiver_page_is_portuguese_throughout_prolific_refusals_and_lang(app_server, browser, width):
    ctx, page = new_page(browser, width)
    try:
        # no open receiver place in the demo: the refusal is in Portuguese, on a pt-PT page
        page.goto(prolific_url(app_server, "receiver"))
        msg = page.locator(".msg.error")
        msg.wait_for(timeout=20000)
        assert "Não há nenhum lugar disponível" in msg.inner_text() and "open place" not in msg.inner_text()
        assert page.evaluate("document.documentElement.lang") == "pt-PT"
        page.screenshot(path=str(ARTIFACTS / f"round2-receiver-refusal-{width}.png"), full_page=True)
        # an edited link (no signature), also in Portuguese
        url = prolific_url(app_server, "receiver")
        sig = url.split("sig=", 1)[1].split("&", 1)[0]
        page.goto(url.replace(f"&sig={sig}", ""))
        msg.wait_for(timeout=20000)
        assert "Esta ligação do estudo está incompleta" in msg.inner_text()
        # a receiver's own page keeps lang="pt-PT" once Gradio has started; the sender's is English
        page.goto(app_server.links()["receiver"][1])
        page.locator(".progress").first.wait_for(timeout=20000)
        assert page.evaluate("document.documentElement.lang") == "pt-PT"
        page.goto(app_server.links()["sender"][0])
        page.locator(".progress").first.wait_for(timeout=20000)
        assert page.evaluate("document.documentElement.lang") == "en"
        page.goto(prolific_url(app_server, "sender"))
        msg.wait_for(timeout=20000)
        assert "There is no open place" in msg.inner_text()
    finally:
        ctx.close()


# -- 10: the completion code's copy button, the DA slider's labels -------------------------------
@pytest.fixture(scope="module")
def finished_receiver(app_server, informed_rater) -> str:
    """The second receiver, every item answered (after the first took theirs)."""
    from services.participation.items import get_view
    from services.participation.submissions import submit

    db = app_db(app_server)
    link = app_server.links()["receiver"][1]
    tok = token_of(link)
    while (v := get_view(db, tok, "receiver")).status == "item":
        submit(
            db,
            tok,
            "receiver",
            v.item_id,
            {"answers": [{"idx": q["idx"], "text": "sim", "unanswerable": False} for q in v.content["questions"]]},
        )
    assert get_view(db, tok, "receiver").status == "complete"
    return link


@pytest.mark.parametrize("width", WIDTHS)
def test_the_completion_code_has_a_copy_button_in_the_pages_language(app_server, browser, finished_receiver, width):
    ctx, page = new_page(browser, width, origin=app_server.url)
    try:
        page.goto(finished_receiver)
        code = page.locator("#completion-code")
        code.wait_for(timeout=20000)
        assert code.inner_text() == "DEMO-2026"
        button = page.locator(".completion button.copy-btn")
        assert button.inner_text() == "Copiar"
        button.click()
        page.wait_for_function("b => b.textContent === 'Copiado'", arg=button.element_handle(), timeout=5000)
        assert page.evaluate("navigator.clipboard.readText()") == "DEMO-2026"
        assert no_sideways_scroll(page)
        page.screenshot(path=str(ARTIFACTS / f"round2-completion-{width}.png"), full_page=True)
    finally:
        ctx.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_da_slider_is_labelled_at_both_ends(app_server, browser, width):
    ctx, page = new_page(browser, width)
    try:
        page.goto(app_server.links()["da"][WIDTHS.index(width)])
        ends = page.locator("#da-slider .form-slider-ends span")
        ends.first.wait_for(timeout=30000)
        left, right = ends.nth(0), ends.nth(1)
        assert left.inner_text().split() == ["0", "Not", "at", "all"]
        assert right.inner_text().split() == ["Perfectly", "100"]
        slider = page.locator("#da-score").bounding_box()
        lb, rb = left.bounding_box(), right.bounding_box()
        assert lb["x"] >= slider["x"] - 1 and rb["x"] + rb["width"] <= slider["x"] + slider["width"] + 1
        assert lb["x"] + lb["width"] < rb["x"]  # apart, not overlapping
        assert no_sideways_scroll(page)
        page.locator("#da-slider").screenshot(path=str(ARTIFACTS / f"round2-da-slider-{width}.png"))
    finally:
        ctx.close()


def test_the_prolific_redirect_has_its_own_copy_button():
    """A study with a redirect_url: the link comes with a copy button of its own (the page
    follows the link after 3 s; a blocked redirect leaves the participant the link to copy)."""
    from services.participation.items import ItemView
    from tabs.common import header_html

    url = "https://app.prolific.com/submissions/complete?cc=DEMO-2026"
    view = ItemView("da", "complete", "Done.", 2, 2, completion_code="DEMO-2026", redirect_url=url)
    page = header_html(view)
    assert page.count('class="copy-btn"') == 2
    assert 'data-copy="DEMO-2026"' in page and f'data-copy="{url}"' in page


ANNOUNCED = """
window.__said = [];
new MutationObserver(() => document.querySelectorAll('[aria-live]').forEach(e => {
  const t = e.textContent.trim();
  if (t && window.__said.at(-1) !== t) window.__said.push(t);
})).observe(document, {subtree: true, childList: true, characterData: true});
"""


@pytest.mark.parametrize("width", WIDTHS)
def test_screen_readers_hear_words_not_gradios_keys(app_server, browser, width):
    """Issue 51: Gradio's status region announced a finished event as the raw key
    "common.complete" (no language of Gradio's has it); now "Done", "Concluído" in Portuguese."""
    phone = width < 640
    for locale, word in (("en-US", "Done"), ("pt-PT", "Concluído")):
        ctx = browser.new_context(viewport={"width": width, "height": 900}, is_mobile=phone, locale=locale)
        try:
            page = ctx.new_page()
            page.add_init_script(ANNOUNCED)
            page.goto(app_server.links()["receiver"][0])
            # past the load's "Loading" and "Progresso" lines, the event's end is announced
            page.wait_for_function("window.__said.some(s => !/^(Loading|A carregar|Progress)/.test(s))", timeout=20000)
            said = page.evaluate("window.__said")
            assert not [s for s in said if s.startswith(("common.", "status."))], said
            assert word in said, said
        finally:
            ctx.close()
