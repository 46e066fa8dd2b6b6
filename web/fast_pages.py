"""The middlewares of TRADLAB_FAST_PAGES: Gradio's bundle files from memory (StaticAssets) and each
role page's HTML with preload hints and its language pinned (PreloadHints)."""

import html
import re

from services.common import protocols
from tabs.static import script
from web.middleware import app_path
from web.site import role_pages


def role_language(role: str) -> str:
    """The language of a role's page: its first tab's (the receiver's is European Portuguese)."""
    from services.study.texts import page_language

    return page_language(protocols.role(role).tabs[0])


def lang_pin_html(lang: str) -> str:
    """A script that keeps <html lang> at the page's language: Gradio's front end sets it to the
    browser's locale once it starts, and a screen reader or hyphenation then reads Portuguese as
    English (or the other way round). The language is the element's data-lang, which the script
    reads (document.currentScript): its text stays the file's, with no value formatted into it."""
    return f'<script data-lang="{html.escape(lang, quote=True)}">{script("script/lang_pin")}</script>'


class PreloadHints:
    """A role page's HTML names every script and stylesheet the page will load before its first
    item (tabs/preload.py), right after its <base>: the browser fetches them together from the
    first bytes instead of in Gradio's five steps. Only the HTML of GET /<role>/ changes."""

    def __init__(self, app, site=None):
        self.app = app
        self.site = site
        self.hints: dict[str, bytes] = {}

    def hint(self, role: str) -> bytes:
        if role not in self.hints:  # built at the first request: the page's theme is set by then
            from tabs import preload

            page = self.site.pages[role]
            theme = f"./theme.css?v={page.theme_hash}" if getattr(page, "theme_hash", None) else ""
            self.hints[role] = (
                preload.hint_html(preload.config_types(page), theme) + lang_pin_html(role_language(role))
            ).encode("utf-8")
        return self.hints[role]

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "GET":
            return await self.app(scope, receive, send)
        path = app_path(scope)
        role = path.strip("/")
        if not path.endswith("/") or role not in self.site.pages:
            return await self.app(scope, receive, send)
        start, body = {}, []

        async def held(message):
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body":
                return await send(message)
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            html = b"".join(body)
            headers = dict((k.lower(), v) for k, v in start.get("headers", []))
            if (
                start.get("status") == 200
                and headers.get(b"content-type", b"").startswith(b"text/html")
                and b"content-encoding" not in headers
            ):
                at = html.find(b">", html.find(b"<base ")) + 1 if b"<base " in html else html.find(b"</head>")
                if at > 0:
                    html = html[:at] + self.hint(role) + html[at:]
                html = html.replace(b'lang="en"', b'lang="%s"' % role_language(role).encode(), 1)
            out = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
            await send({**start, "headers": out + [(b"content-length", str(len(html)).encode())]})
            await send({"type": "http.response.body", "body": html})

        return await self.app(scope, receive, held)


class StaticAssets:
    """Gradio's hashed front-end files (/assets/<name>, /<role>/assets/<name>) from memory,
    gzip-compressed once, with a year's immutable caching (the name changes with the content).
    Through Gradio's own route each cost about 8 ms of server time (routing, a file response in a
    thread, gzip on every request): some 0.4 s of a 2-core server's time per first page load of
    50-odd files, while the participant's browser waits. A returning participant's browser keeps
    them. Anything else (an unhashed name, a HEAD, a file not in the bundle) goes to Gradio."""

    HASHED = re.compile(r"^[A-Za-z0-9_.]+-[A-Za-z0-9_-]{8,}\.(?:js|css)$")
    TYPES = {".js": b"text/javascript; charset=utf-8", ".css": b"text/css; charset=utf-8"}

    def __init__(self, app, pages=()):
        self.app = app
        self.prefixes = {"", *(f"/{p}" for p in pages)}
        self.cache: dict[str, tuple[bytes, bytes]] = {}

    def files(self, name: str) -> tuple[bytes, bytes] | None:
        """(plain, gzip) bytes of a bundle file, read and compressed on its first request."""
        if name not in self.cache:
            import gzip

            from tabs.preload import ASSETS

            path = ASSETS / "assets" / name
            if not path.is_file() or path.stat().st_size > 4 * 1024 * 1024:
                return None
            raw = path.read_bytes()
            self.cache[name] = (raw, gzip.compress(raw, compresslevel=9, mtime=0))
        return self.cache[name]

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "GET":
            head, _, name = app_path(scope).rpartition("/assets/")
            found = self.files(name) if head in self.prefixes and self.HASHED.match(name) else None
            if found:
                accept = dict(scope.get("headers", [])).get(b"accept-encoding", b"")
                gz = b"gzip" in accept
                body = found[1] if gz else found[0]
                headers = [
                    (b"content-type", self.TYPES[name[name.rindex(".") :]]),
                    (b"content-length", str(len(body)).encode()),
                    (b"cache-control", b"public, max-age=31536000, immutable"),
                    (b"vary", b"Accept-Encoding"),
                ] + ([(b"content-encoding", b"gzip")] if gz else [])
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                return await send({"type": "http.response.body", "body": body})
        return await self.app(scope, receive, send)


def static_assets():
    from starlette.middleware import Middleware

    return Middleware(StaticAssets, pages=tuple(role_pages()))


def preload_hints(site):
    from starlette.middleware import Middleware

    return Middleware(PreloadHints, site=site)
