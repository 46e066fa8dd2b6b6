"""Issue 18 point 6: the validator's DA+SQM scale reads as 0-100, and a "move the slider" error
goes once the slider moves (the browser side: tests/test_browser.py)."""

from __future__ import annotations

import re

from services.da.protocol import validate as validate_da
from services.participation.items import ItemView
from services.participation.submissions import SubmissionError
from services.study.texts import defaults
from tabs.common import header_html, refusal_text
from tabs.item_form import FORM_JS
from tabs.validator import _sqm_html


def test_the_ticks_are_numbered_on_the_0_to_100_score():
    page = _sqm_html(defaults()["sqm"])
    nums = re.findall(r'<span class="sqm-num">([^<]*)</span>', page)
    assert nums == ["0", "17", "33", "50", "67", "83", "100"]
    assert "Score from 0 to 100" in page
    # the legend gives each label's place on the score, not its tick number 0-6
    assert "(score 67)" in page and "(score 100)" in page and "(4)" not in page


def test_a_move_the_slider_error_is_marked_so_moving_the_slider_takes_it_away():
    try:
        validate_da(None, {}, {"score": None})  # the same refusal as the validator's (its own: test_form_errors)
    except SubmissionError as e:
        error = refusal_text(e)
    assert error.key == "score_missing" and "move the slider" in error
    view = ItemView("validator", "item", done=0, total=6)
    page = header_html(view, error=error)
    assert '<div class="msg error" role="alert" data-key="score_missing" data-fields="' in page
    # the item form's script takes it away on the slider's first move (and records the move)
    assert '.msg.error[data-key="score_missing"]' in FORM_JS and "remove()" in FORM_JS
    assert "moved.add(e.target.name)" in FORM_JS
