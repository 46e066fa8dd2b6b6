"""Issue 28, point 1: every analysis of the Analysis tab runs on its defaults, and a blank number
field means its default everywhere (the admin's id boxes too); point 6: without a password the
admin opens at once. The buttons are clicked in process through gradio's own processing of an
event (Blocks.process_api: the component's preprocess, the handler, the postprocess), with the
values a browser sends for an untouched page: an empty gr.Number is shown and sent as 0 (Gradio's
Number sets a missing value to 0)."""

from __future__ import annotations

import asyncio
import re

import gradio as gr
import pandas as pd
import pytest

from harness.app import ADMIN_SECRET
from tests.helpers.da import da_study
from tests.helpers.team_page import TeamPage, rate_da_and_sd

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

ANALYSIS_BUTTONS = ("run", "run_usability", "run_da", "run_sd", "do_audit", "do_paper")
FAILED = ("Error", "failed", "Traceback", "unexpected")


def texts(out: dict) -> list[str]:
    return [v for c, v in out.items() if isinstance(c, gr.Markdown) and isinstance(v, str)]


def click_every_analysis_button(page: TeamPage) -> dict[str, list[str]]:
    page.show()
    shown = {}
    for name in ANALYSIS_BUTTONS:
        out = page.click(name)  # a gr.Error (a refused input, a handler's exception) raises here
        shown[name] = texts(out)
        for text in shown[name]:
            assert not any(word in text for word in FAILED), (name, text)
        assert_reads_well(name, out)
    return shown


UNROUNDED = re.compile(r"^-?\d+\.\d{4,}$")


def assert_table_reads_well(where, table: dict):
    """A table as the page gets it: never Gradio's placeholder headers "1 2 3"; no rows means one
    header that is a sentence saying what is missing; no float shown with more than 3 decimals."""
    headers, data = table["headers"], table["data"]
    assert headers != ["1", "2", "3"], where
    if not data:
        assert len(headers) == 1 and " " in headers[0] and headers[0].endswith("."), (where, headers)
    for row in data:
        for cell in row:
            assert not (isinstance(cell, float) and not cell.is_integer()), (where, headers, row)
            assert not (isinstance(cell, str) and UNROUNDED.match(cell)), (where, headers, row)


def assert_reads_well(name, out: dict):
    """Every table output of the click (or, left as it was, its initial value) reads well, and a
    plot without a figure is hidden."""
    for c, v in out.items():
        if isinstance(c, gr.Dataframe) and not c.interactive:  # an editable table shows its headers
            kept = isinstance(v, dict) and v.get("__type__") == "update" and "value" not in v
            value = c.value if kept else (v["value"] if isinstance(v, dict) and "value" in v else v)
            assert isinstance(value, dict), (name, c.label, v)
            assert_table_reads_well((name, c.label), value)
        elif isinstance(c, gr.Plot):
            updated = isinstance(v, dict) and v.get("__type__") == "update"
            figure = v.get("value") if updated else v
            if figure is None:
                visible = v.get("visible", c.visible) if updated else c.visible
                assert visible is False, (name, c.label, v)


@pytest.fixture
def empty_demo(database, tmp_path):
    db, _ = da_study(database, tmp_path, modality='"text"', keep_fast="true")
    return db


def test_every_analysis_button_runs_on_its_defaults_on_an_empty_study(empty_demo):
    shown = click_every_analysis_button(TeamPage(empty_demo))
    assert "No SD ratings yet" in shown["run_sd"][0] and "No DA judgments yet" in shown["run_da"][0]
    assert "Upload a PAIRS.csv first." in shown["do_audit"][0]


def test_every_analysis_button_runs_on_its_defaults_after_a_study(mixed_study, tmp_path):  # noqa: F811
    """The demo after its participants did everything: four senders (two dropped out), six
    raters, receivers and validators (tests/test_usability_export.py), two DA raters in text
    mode and six SD raters; every analysis of the tab then shows results on its defaults."""
    db, _ = mixed_study
    rate_da_and_sd(db, tmp_path / "media")
    page = TeamPage(db)
    shown = click_every_analysis_button(page)
    assert "judgments by" in shown["run_da"][0]
    assert "ratings" in shown["run_sd"][0]
    assert "Too few" not in shown["run_usability"][0]
    # the QE audit on a PAIRS file with its scores (no metric runs), then the paper's tables
    pairs = tmp_path / "pairs.csv"
    pd.DataFrame(
        {
            "instance_id": range(8),
            "lang": "pt",
            "source": "s",
            "hyp_f": "f",
            "hyp_m": "m",
            "gold": ["F", "M"] * 4,
            "score_f": [0.9, 0.4, 0.8, 0.5, 0.7, 0.3, 0.9, 0.6],
            "score_m": [0.5, 0.8, 0.6, 0.7, 0.4, 0.9, 0.5, 0.8],
        }
    ).to_csv(pairs, index=False)
    out = page.click("do_audit", **{"PAIRS.csv": {"path": str(pairs), "meta": {"_type": "gradio.FileData"}}})
    assert not any(w in t for t in texts(out) for w in FAILED), texts(out)
    assert any(isinstance(v, dict) and v.get("data") for v in out.values())  # the ratio table


def test_a_handlers_exception_is_a_message_naming_what_failed(empty_demo, monkeypatch, caplog):
    """Before: the handler's exception became a gr.Error (every output "Error", a toast);
    now the section's message says which analysis failed, with the type and text, and the log
    has the traceback."""
    from services.sd import study_analysis

    def broken(*a, **k):
        raise RuntimeError("the factor analysis diverged")

    monkeypatch.setattr(study_analysis, "analyse", broken)
    page = TeamPage(empty_demo)
    page.show()
    text = "\n".join(texts(page.click("run_sd")))
    assert text == "**The analysis failed:** RuntimeError: the factor analysis diverged (The SD analysis)"
    assert "the analysis failed" in caplog.text and "Traceback" in caplog.text


@pytest.mark.parametrize(
    "value, shown",
    [
        (None, "No DA judgments yet"),  # cleared: the study's reliability_alpha
        (0, "No DA judgments yet"),  # what an untouched empty field sends: blank too
        (-0.1, "significance level (alpha) must be above 0 and at most 0.5 (paper 001: 0.05), not -0.1"),
        (0.7, "not 0.7"),
    ],
)
def test_the_da_significance_level_blank_is_the_default_and_a_bad_one_names_the_field(empty_demo, value, shown):
    """Paper 001, section 2.2.3: "A lower p-value (p < 0.05) indicates higher reliability". A
    cleared field (or the 0 an untouched empty one sends) is the study's reliability_alpha, that
    default unless the study sets another; below 0 or above 0.5 is refused by a message naming the field
    (before: Gradio's "Value 0 is less than minimum value 0.0001", every output "Error")."""
    page = TeamPage(empty_demo)
    page.show()
    label = "Significance level (worker reliability, clusters; empty: the study's reliability_alpha, paper 001: 0.05)"
    text = "\n".join(texts(page.click("run_da", **{label: value})))
    assert shown in text


def test_the_cli_refuses_a_bad_alpha_naming_it(tmp_path):
    from tests.helpers.app import run_cli

    judgments = tmp_path / "j.csv"
    judgments.write_text("worker_id,hit_id,modality,system,segment_id,item_type,score\n")
    res = run_cli("analyze", "da", judgments, "--out", tmp_path / "out", "--alpha", "0")
    assert res.returncode != 0 and "significance level (alpha)" in res.stderr, res.stderr


def test_blank_id_boxes_ask_for_a_row(empty_demo):
    """'Accept' (and Open) before choosing a row: before, "There is no recording 0."."""
    page = TeamPage(empty_demo)
    for name in ("open_recording", "handler"):
        fns = [
            f
            for f in page.demo.fns.values()
            if getattr(f.fn, "__name__", "") == name
            and any(getattr(c, "label", "") == "Recording id (click its row above)" for c in f.inputs)
        ]
        for fn in fns:
            out = asyncio.run(
                page.demo.process_api(fn, [page.session, 0, None][: len(fn.inputs)], state=page.state, request=None)
            )
            assert "Pick a recording first: click its row in the table above." in out["data"]


def test_a_blank_number_stands_for_its_default():
    from tabs.admin_common import blank_number

    with gr.Blocks():
        ident = blank_number(zero_is_blank=True, precision=0)
        count = blank_number(value=1, blank=1, precision=0, minimum=1)
    assert [ident.preprocess(v) for v in (None, "", " ", 0, "0", float("nan"), 3.0, "3")] == [None] * 6 + [3, 3]
    assert [count.preprocess(v) for v in (None, "", 0, 5, "5")] == [1, 1, 0, 5, 5]  # 0 reaches the handler's check
    said = ident.preprocess("five")  # said by admin_only once the admin check has passed
    assert type(said).__name__ == "NotANumber" and said.endswith("'five' is not a number.")
    # shown blank: Gradio 6's Number drew a missing value as 0 (issue 51); no subclass (no .pyi written)
    assert type(ident) is gr.Textbox and ident.value is None
    assert type(count) is gr.Number and count.value == 1  # a value to show: Gradio's Number


@pytest.mark.parametrize("password", ["", "pw"])
def test_the_admin_opens_at_once_without_a_password(empty_demo, password):
    """docs/security.md: with no TRADLAB_ADMIN_PASSWORD a direct local request is the admin, so
    the page opens the panel on load (no form); with a password the form shows, saying why."""
    page = TeamPage(empty_demo, password)
    fn = page.fn("open_at_once")

    class Local:
        client = type("C", (), {"host": "127.0.0.1"})()
        headers = {"host": "127.0.0.1:7860"}
        query_params = {"admin": ADMIN_SECRET}  # the admin link the server printed

    got = fn.fn(Local())
    by_label = {getattr(c, "label", None) or type(c).__name__: v for c, v in got.items()}
    rows = [v for c, v in got.items() if isinstance(c, gr.Row)]
    if password:
        assert rows == [{"visible": True, "__type__": "update"}]
        assert any("TRADLAB_ADMIN_PASSWORD" in str(v) and "needed" in str(v) for v in got.values())
        assert "Progress by role and phase" not in by_label
    else:
        assert rows == [{"visible": False, "__type__": "update"}]
        assert by_label["Progress by role and phase"] is not None
        session = [v for c, v in got.items() if isinstance(c, gr.Textbox) and not c.visible][0]
        page.auth.check(session, "127.0.0.1")


def test_a_remote_request_without_a_password_is_still_refused(empty_demo):
    page = TeamPage(empty_demo, "")
    fn = page.fn("open_at_once")

    class Remote:
        client = type("C", (), {"host": "127.0.0.1"})()
        headers = {"host": "127.0.0.1:7860", "x-forwarded-for": "203.0.113.9"}

    got = fn.fn(Remote())
    assert list(got.values()) == ["The admin tab is served only to localhost until TRADLAB_ADMIN_PASSWORD is set."]


def test_no_table_shows_placeholder_headers_and_floats_are_rounded(empty_demo):
    """Issue 28, point 2: "Empty tables show placeholder headers '1 2 3'; numbers are not rounded;
    DA figures are blank with no reason given." Before: every Dataframe of the Analysis tab and the
    admin started (and, after an analysis that found nothing, stayed) at Gradio's headers 1 2 3."""
    page = TeamPage(empty_demo)
    for c in page.demo.blocks.values():
        if isinstance(c, gr.Dataframe) and not c.interactive:
            assert_table_reads_well(c.label, c.value)
    page.show()
    out = page.click("run_da")
    assert_reads_well("run_da", out)
    by_label = {getattr(c, "label", None): v for c, v in out.items()}
    assert by_label["Systems (ranked by z; clusters of significance)"]["headers"][0].startswith("No DA judgments yet")


def test_a_table_is_rounded_for_reading_and_its_csv_keeps_every_digit(tmp_path):
    """Floats to 3 decimals (or the paper's precision: paper 001's Table 1, section 2.1, prints
    the document length to one decimal), ints made float by a gap without decimals, text as it
    is; the CSV the analysis writes (services.common.analysis_output) is not touched."""
    from services.common.analysis_output import write_tables
    from tabs.common import shown_table

    df = pd.DataFrame({"z": [0.123456, -1.0 / 3], "n": [3.0, None], "system": ["A", "B"], "len": [12.345, 2.0]})
    shown = shown_table(df, "No systems yet.", {"len": 1})
    assert shown.to_dict("list") == {
        "z": ["0.123", "-0.333"],
        "n": ["3", ""],
        "system": ["A", "B"],
        "len": ["12.3", "2.0"],
    }
    (path,) = write_tables(tmp_path, {"t.csv": df})
    assert pd.read_csv(path)["z"].tolist() == df["z"].tolist()
    assert list(shown_table(df.iloc[:0], "No systems yet.").columns) == ["No systems yet."]
    assert list(shown_table(None, "No systems yet.").columns) == ["No systems yet."]
    # paper 000's Table 1: Δu is blank on the baseline rows and 0 in every group of a flat study;
    # it is a measure to the paper's 2 decimals, not a count
    table1 = pd.DataFrame({"Δu": [0.0, None, 0.0, None], "n": [4, 4, 5, 5]})
    assert shown_table(table1, "No groups yet.", 2)["Δu"].tolist() == ["0.00", "", "0.00", ""]


def test_a_number_fields_wrong_text_is_said_only_after_the_admin_check():
    """A stranger learns nothing of the form (the admin check's refusal comes first); the admin
    is told which field holds no number, in the section's message, and the handler never runs."""
    from tabs.admin_common import NotANumber, admin_only

    class Auth:
        def check(self, sess, host):
            if sess != "admin-session":
                raise PermissionError("Please log in first.")

    ran = []

    @admin_only(Auth())
    def handler(sess, rid, request=None):
        ran.append(rid)
        return "ran"

    wrong = NotANumber("Recording id (click its row above): 'abc' is not a number.")
    assert handler("a-participant-token", wrong) == "Please log in first."
    assert handler("admin-session", wrong) == str(wrong) and ran == []
    assert handler("admin-session", 7) == "ran" and ran == [7]
