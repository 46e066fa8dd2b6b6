"""The span page of ESA and MQM (assets/js/script/esa.js) as the tests and benchmarks/browser.py drive
it in Chromium."""

from __future__ import annotations

import json


def drag(page, form, first: int, last: int) -> None:
    """The mouse pressed on character `first` of the output, moved across to `last`, released."""
    a = form.locator(f'.esa-output .esa-ch[data-i="{first}"]').bounding_box()
    b = form.locator(f'.esa-output .esa-ch[data-i="{last}"]').bounding_box()
    page.mouse.move(a["x"] + a["width"] / 2, a["y"] + a["height"] / 2)
    page.mouse.down()
    page.mouse.move(b["x"] + b["width"] / 2, b["y"] + b["height"] / 2, steps=8)
    page.mouse.up()


def spans_of(form) -> list[dict]:
    """The form's hidden spans field, as the submit sends it."""
    return json.loads(form.locator('input[name="spans"]').input_value())
