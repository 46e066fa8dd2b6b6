"""A participant page's first load (issue 21 point 4): the page's HTML names every script and
stylesheet Gradio will load for it, read from the installed Gradio's bundle (tabs/preload.py),
so the browser fetches them together instead of in five steps; and Gradio's hashed bundle files
are served from memory, compressed once and cached for a year (web.fast_pages.StaticAssets). The browser
side (nothing loaded unhinted, nothing twice) is in tests/test_item_form_browser.py."""

from __future__ import annotations

import asyncio
import gzip
import re
import urllib.request
from urllib.parse import urljoin

import pytest

from tabs import preload
from web.fast_pages import PreloadHints, StaticAssets, lang_pin_html
from web.site import role_pages


def test_the_installed_gradio_bundle_is_read():
    """The parse finds what a page needs in this Gradio release: if a release writes its bundle
    differently, this fails (the pages would still load, only without the head start)."""
    assert preload.entry().startswith("index-") and preload.entry().endswith(".js")
    chunks = preload.component_chunks()
    # the component types the participant pages use, each with its chunk on disk
    for kind in ("html", "textbox", "button", "group", "tabs", "tabitem", "timer", "column", "row", "audio", "state"):
        assert kind in chunks, kind
        assert chunks[kind] and chunks[kind][0].endswith(".js"), (kind, chunks[kind])
    files = preload.page_files({"html", "tabs", "tabitem"})
    assert files[0] == preload.entry()  # first: its <script> comes after the hints
    assert any(f.startswith("Blocks-") for f in files)
    assert chunks["html"][0] in files and chunks["tabitem"][0] in files
    assert len(files) == len(set(files))
    for f in files:
        assert (preload.ASSETS / "assets" / f).is_file(), f


def test_unknown_types_add_nothing_and_tags_match_vites_own():
    assert preload.page_files({"no-such-component"}) == preload.page_files(set())
    html = preload.hint_html({"html"}, "./theme.css?v=abc")
    for f in preload.page_files({"html"}):
        kind = 'rel="modulepreload" crossorigin' if f.endswith(".js") else 'rel="preload" as="style" crossorigin'
        assert f'<link {kind} href="./assets/{f}">' in html
    assert html.endswith('<link rel="preload" as="style" href="./theme.css?v=abc">')


def test_each_role_page_names_its_scripts_and_the_team_page_is_left_alone(app_server):
    for role in role_pages():
        with urllib.request.urlopen(f"{app_server.url}/{role}/", timeout=30) as r:
            page = r.read().decode()
        hrefs = re.findall(r'<link rel="(?:modulepreload|preload)"[^>]*href="([^"]+)"', page)
        assert len(hrefs) > 30, (role, len(hrefs))
        # right after <base>, so they resolve as Gradio's own URLs do, and before its scripts
        base = page.index("<base ")
        assert page.index('<link rel="modulepreload"') == page.index(">", base) + 1
        assert page.index(hrefs[0]) < page.index('<script type="module"')
        base_href = re.search(r'<base href="([^"]*)"', page).group(1)
        root = urljoin(f"{app_server.url}/{role}/", base_href)
        for href in hrefs[:3] + hrefs[-3:]:  # the files are served where they are named
            with urllib.request.urlopen(urljoin(root, href), timeout=30) as r:
                assert r.status == 200, href
    with urllib.request.urlopen(f"{app_server.url}/", timeout=30) as r:
        assert "modulepreload" not in r.read().decode()


class _Page:
    theme_hash = "t1"

    def get_config_file(self):
        return {"components": [{"type": "html"}, {"type": "button"}]}


PAGE = (b'<html><head><base href="./" /><title>', b"x</title></head></html>")


def _run(middleware, path: str, status=200, headers=None, request_headers=(), chunks=PAGE):
    """One GET through the middleware in front of an app that answers with the given parts."""
    sent = []

    async def app(scope, receive, send):
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": headers
                or [
                    (b"content-type", b"text/html; charset=utf-8"),
                    (b"content-length", str(sum(map(len, chunks))).encode()),
                ],
            }
        )
        for i, c in enumerate(chunks):
            await send({"type": "http.response.body", "body": c, "more_body": i < len(chunks) - 1})

    async def send(message):
        sent.append(message)

    mw = middleware(app)
    asyncio.run(
        mw(
            {"type": "http", "method": "GET", "path": path, "root_path": "", "headers": list(request_headers)},
            None,
            send,
        )
    )
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start, body


@pytest.fixture
def middleware():
    site = type("Site", (), {"pages": {"da": _Page()}})()
    return lambda app: PreloadHints(app, site=site)


def test_the_middleware_inserts_after_base_and_fixes_the_length(middleware):
    start, body = _run(middleware, "/da/")
    hint = preload.hint_html({"html", "button"}, "./theme.css?v=t1").encode()
    # then the script that keeps <html lang> at the page's language (issue 29.9)
    pin = lang_pin_html("en").encode()
    assert body == b'<html><head><base href="./" />' + hint + pin + b"<title>x</title></head></html>"
    assert dict(start["headers"])[b"content-length"] == str(len(body)).encode()


@pytest.mark.parametrize(
    "path, status, headers",
    [
        ("/", 200, None),  # the team's page
        ("/da/gradio_api/info", 200, None),  # not the page
        ("/da/", 404, None),
        ("/da/", 200, [(b"content-type", b"application/json")]),
        ("/da/", 200, [(b"content-type", b"text/html"), (b"content-encoding", b"gzip")]),
    ],
)
def test_anything_else_passes_unchanged(middleware, path, status, headers):
    chunks = (b'<html><head><base href="./" /><title>', b"x</title></head></html>")
    _, body = _run(middleware, path, status, headers, chunks=chunks)
    assert body == b"".join(chunks)


def test_bundle_files_come_from_memory_compressed_and_cached():
    name = preload.entry()
    raw = (preload.ASSETS / "assets" / name).read_bytes()
    for path in (f"/assets/{name}", f"/da/assets/{name}", f"/receiver/assets/{name}"):
        start, body = _run(
            lambda app: StaticAssets(app, pages=("da", "receiver")),
            path,
            request_headers=[(b"accept-encoding", b"gzip, deflate, br")],
        )
        headers = dict(start["headers"])
        assert gzip.decompress(body) == raw and headers[b"content-encoding"] == b"gzip"
        assert headers[b"content-type"].startswith(b"text/javascript")  # a module script needs it
        assert headers[b"cache-control"] == b"public, max-age=31536000, immutable"
        assert headers[b"content-length"] == str(len(body)).encode()
    start, body = _run(lambda app: StaticAssets(app, pages=("da",)), f"/da/assets/{name}")
    assert body == raw and b"content-encoding" not in dict(start["headers"])  # no gzip asked: plain


@pytest.mark.parametrize(
    "path",
    [
        "/assets/favicon.png",  # not a hashed name: Gradio's route
        "/assets/index-NoSuchFile.js",  # not in the bundle
        "/da/assets/../../server-abcdefgh.js",  # a path, not a file name
        "/other/assets/{entry}",  # not a page of the app
        "/da/gradio_api/assets/{entry}",
    ],
)
def test_anything_else_goes_to_gradio(path):
    chunks = (b"from gradio",)
    _, body = _run(
        lambda app: StaticAssets(app, pages=("da",)),
        path.format(entry=preload.entry()),
        headers=[(b"content-type", b"text/plain")],
        chunks=chunks,
    )
    assert body == b"from gradio"


def test_the_served_app_sends_bundle_files_from_memory(app_server):
    req = urllib.request.Request(f"{app_server.url}/da/assets/{preload.entry()}", headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.headers["Cache-Control"] == "public, max-age=31536000, immutable"
        assert gzip.decompress(r.read()) == (preload.ASSETS / "assets" / preload.entry()).read_bytes()


def test_the_warm_up_asks_for_each_page_and_each_named_file_once(monkeypatch):
    from services.da import render
    from web.serving import warm_pages

    class Page:
        def __init__(self, kind):
            self.kind = kind

        def get_config_file(self):
            return {"components": [{"type": "html"}, {"type": self.kind}]}

    fonts = []
    monkeypatch.setattr(render, "font_chain", lambda: fonts.append(1))
    asked = warm_pages({"da": Page("button"), "receiver": Page("textbox")}, lambda path: None)
    assert fonts == [1] and asked[0] == "/da/" and "/receiver/" in asked
    files = [p.rsplit("/", 1)[-1] for p in asked if "/assets/" in p]
    assert len(files) == len(set(files))  # each file once, whichever page named it
    assert set(files) == set(preload.page_files({"html", "button"})) | set(preload.page_files({"html", "textbox"}))
