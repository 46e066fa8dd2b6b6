"""Driving the DA page in a browser: its slider, its submit button and its progress line."""

from __future__ import annotations


def wait_progress(page, done: int) -> None:
    page.wait_for_function(
        "(n) => [...document.querySelectorAll('.progress')].some("
        "e => e.offsetParent && e.innerText.includes(n + ' / '))",
        arg=str(done),
        timeout=20000,
    )


def slider(page):
    return page.locator("#da-slider input[type=range]").first


def move(page, steps: int) -> None:
    slider(page).focus()
    for _ in range(steps):
        page.keyboard.press("ArrowRight")


def submit(page) -> None:
    page.get_by_role("button", name="Submit").click()
