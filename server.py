"""The web server: builds the app (a team page at "/" and one page per role), its middlewares and
upload hardening, and serves it (TLS included). The command line that starts it is cli.py."""

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent

HELP_NO_LINK = ("### Welcome\nThis is a study platform. Participants: please open the personal link "
                "you were given (it ends in `?t=...`). Study designers: use the Admin tab.")


# Enter submits the visible tab's form when focus is on a slider, a radio or the page itself,
# never from a text box (an answer being typed is not lost to a stray Enter); copy buttons copy.
KEYBOARD_JS = """() => { document.addEventListener('keydown', (e) => {
  if (e.key !== 'Enter' || e.shiftKey || e.ctrlKey || e.altKey || e.metaKey || e.isComposing) return;
  const t = e.target;
  if (t && (t.tagName === 'TEXTAREA' || t.tagName === 'BUTTON' || t.tagName === 'SELECT' ||
      (t.tagName === 'INPUT' && !['range', 'radio', 'checkbox'].includes(t.type)))) return;
  const btn = [...document.querySelectorAll('.submit-btn button, button.submit-btn')]
    .find(b => b.offsetParent !== null);
  if (btn) { e.preventDefault(); btn.click(); }
});
// a copy button (tabs/common.py copy_button): the Clipboard API where the page is a secure
// context, else the selection and execCommand (a plain-http study server on a LAN)
document.addEventListener('click', async (e) => {
  const b = e.target.closest && e.target.closest('button.copy-btn[data-copy]');
  if (!b) return;
  const text = b.dataset.copy;
  let ok = false;
  try { await navigator.clipboard.writeText(text); ok = true; } catch (err) {
    const t = document.createElement('textarea');
    t.value = text; t.setAttribute('readonly', ''); t.style.position = 'fixed'; t.style.opacity = '0';
    document.body.appendChild(t); t.select();
    try { ok = document.execCommand('copy'); } catch (err2) { ok = false; }
    t.remove();
  }
  b.textContent = ok ? b.dataset.copied : (b.dataset.failed || b.textContent);
  b.classList.toggle('copied', ok);
}); }"""

REDIRECT_JS = """(s) => { if (s && s.status === 'complete' && s.redirect_url) {
  setTimeout(() => { window.location.href = s.redirect_url; }, 3000); } }"""


# One page per role (issue 21): each role's page is a Blocks of its own, mounted at /<role>/, so
# the browser looks up a few dozen components per event and Gradio copies a few dozen blocks'
# config for each new session (its SessionState copies every block of its Blocks: 55-72 ms per
# session with every role in one Blocks, about 7 ms with one role's). "/" is the landing page
# and the study team's (Admin, Analysis); participant links that arrive there are sent on to
# their role's page by RoleRedirect before any page loads.
ROLE_PAGES = {"sender": "Sender", "receiver": "Receptor", "validator": "Validator", "rater": "Rater",
              "da": "Direct assessment", "sd": "Ratings"}


@dataclass
class Site:
    team: object                 # gr.Blocks at "/": the landing page, Admin and Analysis
    pages: dict                  # role -> gr.Blocks mounted at /<role>/
    auth: object = None          # services.admin.auth.AdminAuth of the team page

    @property
    def blocks(self) -> list:
        return [self.team, *self.pages.values()]


def page_of_api(api_name: str) -> str:
    """The page that serves an API endpoint ("" for "/"): a tab's events ("receiver_submit",
    "da_feedback") are on the first role page that holds the tab; the participant calls every
    page has (view, consent, demographics) and the team's events are on "/"."""
    from services.participation.items import ROLE_TABS

    tab = api_name.lstrip("/").split("_", 1)[0]
    return next((role for role, tabs in ROLE_TABS.items() if tab in tabs), "")


def build_app(settings, database) -> Site:
    from services.admin import auth as admin

    auth = admin.AdminAuth(settings.admin_password, database, local_secret=settings.admin_secret)
    refuse_remote_files()
    site = Site(team_page(settings, database, auth),
                {role: role_page(database, settings, role, label) for role, label in ROLE_PAGES.items()}, auth)
    for blocks in site.blocks:
        forget_strangers_uploads(blocks, database, auth)
    return site


def participant_api(database, settings) -> None:
    """The calls of a participant's link, on every page (in the open Blocks)."""
    import gradio as gr

    from services.participation.items import AccessError, get_view, participant_for_token
    from services.study.consent import ConsentError, record_consent, submit_demographics
    from tabs.common import PARTICIPANT_EVENT, view_dict

    def view(participant_token: str, tab: str) -> dict:
        """The participant's current item on a tab, as the page shows it (resume after reload)."""
        try:
            return view_dict(get_view(database, participant_token, tab, media_dir=settings.media_dir))
        except AccessError as e:
            return view_dict(None, error=str(e))

    def next_stage(record, token: str, answer) -> dict:
        """record(participant, answer) -> the stage still pending (null: none), or the reason it was refused."""
        try:
            return {"pending": record(database, participant_for_token(database, token), answer)}
        except (AccessError, ConsentError) as e:
            return {"error": str(e)}

    def consent(participant_token: str, agreed: bool) -> dict:
        """Agree (true) or decline (false); returns the stage still pending (null: none)."""
        return next_stage(record_consent, participant_token, agreed)

    def demographics(participant_token: str, answers: dict) -> dict:
        """The demographics form as {field id: answer}; returns the stage still pending."""
        return next_stage(submit_demographics, participant_token, answers)

    gr.api(view, api_name="view", api_visibility="undocumented", **PARTICIPANT_EVENT)
    gr.api(consent, api_name="consent", api_visibility="undocumented", **PARTICIPANT_EVENT)
    gr.api(demographics, api_name="demographics", api_visibility="undocumented", **PARTICIPANT_EVENT)


def team_page(settings, database, auth):
    import gradio as gr

    from services.admin import auth as admin
    from tabs import admin as admin_tab
    from tabs import analysis as analysis_tab
    from tabs.common import Ctx, plain_markdown

    with gr.Blocks(title="Translation evaluation studies", delete_cache=UPLOADS_EXPIRE) as demo:
        token = gr.Textbox(visible=False, elem_id="participant-token")
        welcome = gr.Markdown()
        ctx = Ctx(database, settings, token)
        with gr.Tabs() as tabset:
            admin_tab_obj, session = admin_tab.build(ctx, auth)
            analysis_obj = analysis_tab.build(ctx, auth, session)

        def on_root_load(request: gr.Request):
            tok, problem, participant = resolve_link(database, request)
            host = (admin.client_address(request.client.host, getattr(request, "headers", None))
                    if request and request.client else None)
            if participant is not None:
                # a link that reached "/" without the redirect (a proxy that drops it): a plain link on
                problem = f"Your page: [continue here](./{participant['role']}/?t={participant['token']})"
                return {token: "", welcome: problem, admin_tab_obj: gr.update(visible=False),
                        analysis_obj: gr.update(visible=False)}
            show_admin = not problem and auth.available(host)
            # the problem may echo URL parameters: shown as plain text, never as Markdown
            return {token: "", welcome: f"**{plain_markdown(problem)}**" if problem else HELP_NO_LINK,
                    admin_tab_obj: gr.update(visible=show_admin), analysis_obj: gr.update(visible=show_admin),
                    tabset: gr.update(selected="admin")}

        demo.load(on_root_load, None, [token, welcome, admin_tab_obj, analysis_obj, tabset], api_visibility="private")
        participant_api(database, settings)
    return demo


def resolve_link(database, request, lang: str = "en") -> tuple[str, str, dict | None]:
    """(token, problem, participant) of a page's URL: a token from ?t=..., or a Prolific newcomer
    enrolled into an open self-enrolment slot (the URL's signature over study, role, group and
    gender is checked first). The problem is in the page's language `lang`."""
    from services.setup.enrolment import ParticipantError, enrol_from_link
    from services.study.texts import Voice, reword
    from storage import participants

    q = dict(request.query_params) if request else {}
    tok, problem = q.get("t") or "", ""
    if not tok and q.get("PROLIFIC_PID"):
        try:
            from services.admin.auth import throttle_key

            client = throttle_key(request.client.host if request.client else None, getattr(request, "headers", None))
            tok = enrol_from_link(database, q, client=client)["token"]
        except ParticipantError as e:
            problem = str(reword(e, Voice(lang)))       # a refusal's key (enrol_<reason>) in the page's words
    participant = participants.by_token(database, tok) if tok else None
    if tok and participant is None:
        problem = Voice(lang)("invalid_link")
    return tok, problem, participant


def role_page(database, settings, role: str, title: str):
    """The page of one role, a Blocks of its own: the consent page, then that role's tabs (a
    sender's Record and Survey; everyone else's one tab), and the participant calls."""
    import gradio as gr

    from services.participation.items import ROLE_TABS
    from services.participation.welcome import page_welcome
    from services.study.texts import Voice, page_language
    from tabs import consent as consent_tab
    from tabs import da, receiver, record, sd, survey, validator
    from tabs.common import PARTICIPANT_EVENT, Ctx, plain_html

    builders = {"record": record.build, "receiver": receiver.build, "validator": validator.build,
                "survey": survey.build, "da": da.build, "sd": sd.build}
    names = ROLE_TABS[role]
    lang = page_language(names[0])      # the receiver's page is in European Portuguese
    with gr.Blocks(title=title, delete_cache=UPLOADS_EXPIRE) as page:
        token = gr.Textbox(visible=False, elem_id="participant-token")
        welcome = gr.HTML()       # no Markdown renderer on a participant's page
        ctx = Ctx(database, settings, token, lang=lang)
        consent_ui = consent_tab.build(ctx)
        with gr.Tabs() as tabset:
            uis = [builders[name](ctx) for name in names]

        def on_load(request: gr.Request):
            tok, problem, participant = resolve_link(database, request, lang)
            out = {token: tok, welcome: ""}
            if participant is not None and participant["role"] != role:
                problem = Voice(lang)("not_your_role")
            elif tok and participant is None:
                problem = Voice(lang)("invalid_link")
            if problem or participant is None:
                out[welcome] = f'<p class="msg error"><b>{plain_html(problem or Voice(lang)("invalid_link"))}</b></p>'
                for ui in uis:
                    out[ui.tab] = gr.update(visible=False)
                return out
            words = page_welcome(database, participant, lang) if participant["active"] else ""
            if words:     # the role's task and its expected time, before consent and the first item
                out[welcome] = f'<div class="role-welcome" lang="{lang}"><p>{plain_html(words)}</p></div>'
            pending = consent_ui.show(participant) if participant["active"] else {}
            if pending:   # consent and the demographics form come before any tab
                out.update(pending)
                for ui in uis:
                    out[ui.tab] = gr.update(visible=False)
                return out
            return {**out, **consent_ui.hide(), **show_tabs(tok)}

        def show_tabs(tok: str) -> dict:
            out = {tabset: gr.update(selected=names[0])}
            for ui in uis:
                out[ui.tab] = gr.update(visible=True)
                out.update(ui.show(ctx, tok))
            return out

        tab_outputs = [tabset] + [ui.tab for ui in uis]
        for ui in uis:
            tab_outputs += ui.outputs
        consent_ui.connect(tab_outputs, show_tabs)
        # the first item without a queue round trip (join, then the event stream): one POST
        page.load(on_load, None, [token, welcome] + consent_ui.outputs, api_visibility="private", **PARTICIPANT_EVENT)
        for ui in uis:   # a finished queue with a Prolific URL sends the participant back there
            ui.outputs[0].change(None, ui.outputs[0], None, js=REDIRECT_JS)
        participant_api(database, settings)
    return page


def page_theme():
    """Gradio's default look with the system's fonts: a first page load fetches no web font (the
    default theme's Source Sans and IBM Plex Mono are about 140 KB, more than the page's
    scripts compressed), which matters to a participant on a phone connection."""
    import gradio as gr

    return gr.themes.Default(font=["system-ui", "-apple-system", "Segoe UI", "Roboto", "Helvetica Neue", "Arial",
                                   "sans-serif"],
                             font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"])


def mount_pages(site: Site, **options) -> list:
    """Each role page as a Starlette Mount at /<role>, prepared by gradio's own
    mount_gradio_app (on a throwaway parent) with the options launch() gives "/"; the mounts go
    into the served app's routes ahead of "/"'s. Their queues start with start_pages()."""
    import gradio as gr
    from fastapi import FastAPI

    root_path = options.pop("root_path", None)
    mounts = []
    for role, page in site.pages.items():
        page.queue(default_concurrency_limit=16)
        holder = FastAPI()
        gr.mount_gradio_app(holder, page, f"/{role}",
                            root_path=f"{root_path.rstrip('/')}/{role}" if root_path else None, **options)
        # gradio checks an input's file paths (only uploads to this server) once its Blocks "has
        # launched", which launch() marks and mount_gradio_app does not: without this a page's
        # events would take any path on the server (/etc/passwd, the database) as an upload
        page.has_launched = True
        mounts.append(holder.routes[-1])
    return mounts


# Each Blocks has its own event queue, and a free queue looks for work every millisecond (gradio's
# Queue.sleep_when_free on Linux): with "/" and six role pages that was 7,000 wake-ups a second,
# about 13% of a core with nobody on the site. Every 7 ms per queue keeps the total at one page's
# old rate; an event waits at most 7 ms more to start (3.5 ms on average). The participant pages
# show no progress bars, so their progress loop (every 10 ms) runs every 70 ms.
QUEUE_POLL_S = 0.007
PROGRESS_POLL_S = 0.07


def quiet_queues(site: Site, seconds: float = QUEUE_POLL_S) -> None:
    for blocks in site.blocks:
        blocks._queue.sleep_when_free = seconds
    for page in site.pages.values():
        page._queue.progress_update_sleep_when_free = PROGRESS_POLL_S


def start_pages(site: Site, local_url: str, verify: bool) -> None:
    """Start each mounted page's queue the way launch() starts "/"'s: its startup-events call
    (a mounted app's own lifespan never runs under another app)."""
    import httpx

    for role in site.pages:
        httpx.get(f"{local_url.rstrip('/')}/{role}/gradio_api/startup-events", verify=verify, timeout=60)


def serve_tls(args, settings) -> tuple[str | None, str | None]:
    """(certfile, keyfile) for launch(): the given files, a self-signed pair, or (None, None)."""
    if not args.self_signed:
        if args.tls_hosts:
            raise SystemExit("--tls-hosts goes with --self-signed")
        return args.ssl_certfile, args.ssl_keyfile
    if args.ssl_certfile or args.ssl_keyfile:
        raise SystemExit("--self-signed makes its own certificate: leave out --ssl-certfile/--ssl-keyfile")
    from services.common import tls

    hosts = tls.parse_hosts(args.tls_hosts)
    cert, key = tls.make_self_signed(Path(settings.db_path).parent / "tls", hosts)
    print(f"HTTPS with a self-signed certificate for {', '.join(hosts)}: {cert}\n"
          f"  SHA-256 {tls.fingerprint(cert)} (browsers warn once; compare this fingerprint)")
    return str(cert), str(key)


# After every event Gradio recomputes its monitoring summary with pandas over up to 10,000
# recorded events (queueing.compute_analytics_summary): tens of ms per answer late in a study.
# Every 500 events is fresh enough for the monitoring page, which the app does not enable.
ANALYTICS_EVERY = "500"


def compression():
    """gzip for what the server sends that compresses: every page load carries the whole app's
    config (about 460 KB of JSON, 556 components), which gzip (level 3) shrinks to 41 KB for a
    participant on a phone connection. Audio, images and the event stream are left as they are
    (Starlette's exclusions); large bodies are compressed in a worker thread."""
    from starlette.middleware import Middleware
    from starlette.middleware.gzip import GZipMiddleware

    return Middleware(GZipMiddleware, minimum_size=1024, compresslevel=3)


class SecurityHeaders:
    """Frame protection on every HTTP response (a plain ASGI middleware, added like compression()):
    Content-Security-Policy: frame-ancestors from TRADLAB_FRAME_ANCESTORS ('self' by default; a
    Space lets https://huggingface.co frame it) and, where that maps onto it, X-Frame-Options for
    older browsers ('self' -> SAMEORIGIN, 'none' -> DENY; other origins: CSP only, since
    X-Frame-Options cannot name them). No other page can show the app's pages in a frame and
    trick the designer or a participant into clicks (clickjacking)."""

    def __init__(self, app, frame_ancestors: str = "'self'"):
        self.app = app
        value = " ".join(frame_ancestors.replace(";", " ").replace(",", " ").split()) or "'self'"
        self.headers = [(b"content-security-policy", f"frame-ancestors {value}".encode("latin-1"))]
        xfo = {"'self'": b"SAMEORIGIN", "'none'": b"DENY"}.get(value)
        if xfo:
            self.headers.append((b"x-frame-options", xfo))

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message = {**message, "headers": list(message.get("headers", [])) +
                           [(k, v) for k, v in self.headers if k not in names]}
            await send(message)
        return await self.app(scope, receive, send_with_headers)


def app_path(scope) -> str:
    """A request's path within the app: without the server's --root-path prefix."""
    path, prefix = scope["path"], scope.get("root_path", "").rstrip("/")
    return path[len(prefix):] if prefix and path.startswith(prefix + "/") else path


class RoleRedirect:
    """A participant's link (/?t=TOKEN, or a signed Prolific URL naming its role) opens the page
    of its role: GET "/" or another role's page with such a query answers 302 to the role's page
    (/<role>/) with the same query, before Gradio builds any page; so does a role's page named
    without its final slash. The Location is relative ("receiver/?t=..."), so it holds behind a
    proxy's path prefix. One indexed lookup of the token; a token that names no participant goes
    on to the page, which says the link is not valid."""

    def __init__(self, app, database=None):
        self.app = app
        self.database = database

    def target(self, path: str, query: str) -> str | None:
        """The relative Location to send a GET of path?query to, or None to serve it."""
        from urllib.parse import parse_qs

        from storage import participants

        here = path.rstrip("/").rsplit("/", 1)[-1]
        if here and (here not in ROLE_PAGES or path.rstrip("/") != "/" + here):
            return None
        q = parse_qs(query)
        role = None
        if q.get("t"):
            p = participants.by_token(self.database, q["t"][0])
            role = p["role"] if p else None
        elif q.get("PROLIFIC_PID") and q.get("role"):
            role = q["role"][0]
        slash = path.endswith("/") and bool(here)
        if role not in ROLE_PAGES:
            role = here or None
        if role is None or (role == here and slash):
            return None
        return ("../" if slash else "") + f"{role}/" + (f"?{query}" if query else "")

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] in ("GET", "HEAD"):
            location = self.target(app_path(scope), scope.get("query_string", b"").decode("latin-1"))
            if location:
                await send({"type": "http.response.start", "status": 302,
                            "headers": [(b"location", location.encode("latin-1")),
                                        (b"content-length", b"0"), (b"cache-control", b"no-store")]})
                return await send({"type": "http.response.body", "body": b""})
        return await self.app(scope, receive, send)


def role_language(role: str) -> str:
    """The language of a role's page: its first tab's (the receiver's is European Portuguese)."""
    from services.participation.items import ROLE_TABS
    from services.study.texts import page_language

    return page_language(ROLE_TABS[role][0])


def lang_pin_html(lang: str) -> str:
    """A script that keeps <html lang> at the page's language: Gradio's front end sets it to the
    browser's locale once it starts, and a screen reader or hyphenation then reads Portuguese as
    English (or the other way round)."""
    return ("<script>(() => { const l = %s, d = document.documentElement; const pin = () => "
            "{ if (d.lang !== l) d.lang = l; }; pin(); new MutationObserver(pin).observe(d, "
            "{attributes: true, attributeFilter: ['lang']}); })();</script>") % json.dumps(lang)


class PreloadHints:
    """A role page's HTML names every script and stylesheet the page will load before its first
    item (tabs/preload.py), right after its <base>: the browser fetches them together from the
    first bytes instead of in Gradio's five steps. Only the HTML of GET /<role>/ changes."""

    def __init__(self, app, site=None):
        self.app = app
        self.site = site
        self.hints: dict[str, bytes] = {}

    def hint(self, role: str) -> bytes:
        if role not in self.hints:      # built at the first request: the page's theme is set by then
            from tabs import preload

            page = self.site.pages[role]
            theme = f"./theme.css?v={page.theme_hash}" if getattr(page, "theme_hash", None) else ""
            self.hints[role] = (preload.hint_html(preload.config_types(page), theme)
                                + lang_pin_html(role_language(role))).encode("utf-8")
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
            if start.get("status") == 200 and headers.get(b"content-type", b"").startswith(b"text/html") \
                    and b"content-encoding" not in headers:
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
                headers = [(b"content-type", self.TYPES[name[name.rindex("."):]]),
                           (b"content-length", str(len(body)).encode()),
                           (b"cache-control", b"public, max-age=31536000, immutable"),
                           (b"vary", b"Accept-Encoding")] + ([(b"content-encoding", b"gzip")] if gz else [])
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                return await send({"type": "http.response.body", "body": body})
        return await self.app(scope, receive, send)


def static_assets():
    from starlette.middleware import Middleware

    return Middleware(StaticAssets, pages=tuple(ROLE_PAGES))


def preload_hints(site):
    from starlette.middleware import Middleware

    return Middleware(PreloadHints, site=site)


def role_redirect(database):
    from starlette.middleware import Middleware

    return Middleware(RoleRedirect, database=database)


def security_headers(settings):
    from starlette.middleware import Middleware

    return Middleware(SecurityHeaders, frame_ancestors=getattr(settings, "frame_ancestors", "'self'"))


# -- files: only uploads to this server, kept briefly (issue 17, points 3 and 7) ----------------
# Gradio stores what an event's inputs point at while it preprocesses them, before any handler
# sees a token: a FileData whose path is an http(s) URL is downloaded then
# (processing_utils.async_move_files_to_cache -> Block.async_move_resource_to_block_cache ->
# async_ssrf_protected_download, which refuses private addresses but lets any public host and
# hf.co / huggingface.co through). No launch() or GRADIO_* setting turns that off (allowed_paths
# and blocked_paths only concern local paths), so the check sits in front of that step.
# delete_cache: every 10 minutes, what gradio stored more than an hour ago (uploads, and its copies
# of served files and downloads) is deleted, and all of it when the server stops. A copy it serves
# again is made again when missing.
UPLOADS_EXPIRE = (600, 3600)
REMOTE_FILE = "Only files uploaded to this server are accepted."


def _remote(path) -> bool:
    return isinstance(path, str) and ("://" in path[:16] or path.startswith("//"))


def refuse_remote_files() -> None:
    """Every event input that carries a file whose path is a URL (any scheme) is refused with
    gr.Error before gradio fetches or copies anything; uploads (paths on this server) pass."""
    from gradio import processing_utils
    from gradio.exceptions import Error
    from gradio_client import utils as client_utils

    move = processing_utils.async_move_files_to_cache
    if getattr(move, "refuses_remote", False):
        return

    def check(d: dict) -> dict:
        if _remote(d.get("path")):
            raise Error(REMOTE_FILE)
        return d

    async def guarded(data, block, postprocess=False, *args, **kwargs):
        if not postprocess:     # inputs only: the app's own outputs are local files
            plain = data.model_dump() if hasattr(data, "model_dump") else data
            # what gradio would fetch (a FileData with its meta) in any input; in a file input,
            # anything with a path (a JSON input's own {"path": ...} is left alone)
            files = (client_utils.is_file_obj if type(block).__name__ in UPLOAD_KINDS
                     else client_utils.is_file_obj_with_meta)
            client_utils.traverse(plain, check, files)
        return await move(data, block, postprocess, *args, **kwargs)

    guarded.refuses_remote = True
    processing_utils.async_move_files_to_cache = guarded


class RefuseRemoteFiles:
    """ASGI middleware: /gradio_api/file=<http(s) URL> makes gradio fetch that URL and stream it
    back (a proxy for anyone), and /gradio_api/proxy= serves apps loaded with gr.load (this app
    loads none). Gradio has no switch for either: both answer 403 here, before gradio sees them."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            path = scope.get("path", "")
            at = path.find("/file=")
            if "/proxy=" in path or (at >= 0 and _remote(path[at + 6:])):
                from starlette.responses import PlainTextResponse

                return await PlainTextResponse("Only this server's own files are served.", 403)(scope, receive, send)
        return await self.app(scope, receive, send)


def refuse_remote_files_middleware():
    from starlette.middleware import Middleware

    return Middleware(RefuseRemoteFiles)


UPLOAD_KINDS = ("Audio", "File", "UploadButton", "Image", "Video", "Gallery", "Model3D", "MultimodalTextbox")


def known_credential(database, auth, value) -> bool:
    """Whether value is an active participant's token or a live admin session."""
    import contextvars

    from storage import participants

    if not isinstance(value, str) or not value or len(value) > 200 or "/" in value:
        return False
    participant = participants.by_token(database, value)
    if participant is not None and participant.get("active", 1):
        return True
    try:   # the session alone (the handler checks the address), in a copy of the context:
        # the handler's "admin checked" mark (services.admin.auth.run_checked) is left as it was
        contextvars.copy_context().run(auth.check, value, "127.0.0.1")
        return True
    except PermissionError:
        return False


def forget_strangers_uploads(demo, database, auth) -> None:
    """Anyone may POST a file to /gradio_api/upload. After an event with an upload input, the
    uploads among its arguments are deleted at once unless one of its text arguments is a valid
    participant token or admin session (a valid caller's upload expires with UPLOADS_EXPIRE;
    what a handler keeps, it has copied under the media folder by then)."""
    import functools
    import inspect
    import os

    def valid(value) -> bool:
        return known_credential(database, auth, value)

    def forget(values) -> None:
        if any(valid(v) for v in values):
            return
        for v in values:
            for path in (v if isinstance(v, (list, tuple)) else [v]):
                if isinstance(path, str) and path in demo.upload_file_set:
                    try:
                        os.remove(path)
                    except OSError:
                        pass
                    demo.upload_file_set.discard(path)

    def wrap(fn):
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def wrapped_async(*args, **kwargs):
                try:
                    return await fn(*args, **kwargs)
                finally:
                    forget([*args, *kwargs.values()])
            return wrapped_async

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            finally:
                forget([*args, *kwargs.values()])
        return wrapped

    for block_fn in demo.fns.values():
        fn = block_fn.fn
        if fn is None or inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
            continue
        if any(type(c).__name__ in UPLOAD_KINDS and c.interactive is not False for c in block_fn.inputs):
            block_fn.fn = wrap(fn)


# -- bounded work per request, only the routes the pages use (issue 30, points 1, 2 and 8) ------
# Gradio parses an event's JSON body on the event loop and walks every input twice there (our
# refuse_remote_files check, then its own file-moving walk) before any handler runs: one 23 MB
# body stalled every other request for 22 s. Guard reads a body first, bounded in size and time,
# and checks its shape off the loop; only what passes reaches Gradio. Honest bodies are small (a
# receiver's ten answers of 2,000 characters: about 25 KB; a study zip goes through /upload).
MAX_JSON_DEPTH = 32
MAX_JSON_VALUES = 20_000
MAX_FILES_PER_UPLOAD = 4        # a page sends one file per upload; gradio's own cap is 1,000
UPLOAD_OVERHEAD = 64 * 1024     # the multipart framing around one file
UNUSED_UPLOAD_S = 600           # an upload no event has used by then is deleted (gradio: about 70 min)

# Paths within a page (after /<role>) that the pages and gradio_client use; everything else
# Gradio serves (/gradio_api/file/<URL>, process_recording, monitoring, run-history, vibe-edit,
# login, streams...) answers 404 before Gradio sees it.
OPEN_GET = re.compile(r"/?|/config/?|/theme\.css|/favicon\.ico|/robots\.txt|/(?:assets|static)/.+|"
                      r"/gradio_api/(?:info/?|heartbeat/[^/]+|queue/data|call/[^/]+/[^/]+|file=.+|startup-events)")
OPEN_POST = re.compile(r"/gradio_api/(?:queue/join|api/[^/]+/?|call/[^/]+/?|run/[^/]+/?|cancel|reset/?)")
UPLOAD = re.compile(r"/gradio_api/(?:upload|upload_progress)")


STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
BRACKETS = re.compile(rb"[\[\]{}]")


def json_problem(body: bytes) -> str | None:
    """Why a JSON body is refused (None: it may go on), from counts, never by parsing it: its
    texts taken out (their commas and brackets are no structure), the brackets and commas left
    bound its values and its depth. Counting (C speed) clears an honest body at once."""
    if body.count(b"[") + body.count(b"{") <= MAX_JSON_DEPTH and body.count(b",") < MAX_JSON_VALUES:
        return None
    bare = STRINGS.sub(b'""', body)
    opened = bare.count(b"[") + bare.count(b"{")
    if opened + bare.count(b",") > MAX_JSON_VALUES or bare.count(b"]") + bare.count(b"}") > MAX_JSON_VALUES:
        return f"more than {MAX_JSON_VALUES:,} values"
    depth = 0
    for b in BRACKETS.findall(bare):
        depth += 1 if b in (b"[", b"{") else -1
        if depth > MAX_JSON_DEPTH:
            return f"nested deeper than {MAX_JSON_DEPTH} levels"
    return None


class Guard:
    """ASGI middleware, outermost: a request reaches Gradio only on a route the pages use, uploads
    only on a page that takes a file (the sender's and the team's), and a request's body is read
    here first: at most max_body bytes (an upload: one file of max_upload bytes) within
    body_timeout seconds, and a JSON body no deeper than MAX_JSON_DEPTH with at most
    MAX_JSON_VALUES values. Then an event's caller is looked at (Callers: a known session, or the
    team page's participant calls refused to strangers) and an upload counted against its
    client's UploadBudget. Refusals answer at once and close the connection."""

    def __init__(self, app, max_body: int = 1024 * 1024, max_upload: int = 50 * 1024 * 1024,
                 body_timeout: float = 30.0, upload_pages: tuple = (), callers: "Callers | None" = None,
                 uploads: "UploadBudget | None" = None):
        self.app, self.max_body, self.body_timeout = app, max_body, body_timeout
        self.max_upload = max_upload + UPLOAD_OVERHEAD
        self.upload_pages = set(upload_pages)
        self.callers, self.uploads = callers, uploads

    @staticmethod
    async def refuse(send, status: int, text: str, as_json: bool = False) -> None:
        # an event's refusal as JSON {"error": ...}, which gradio's clients show as the call's error
        body = json.dumps({"error": text}).encode() if as_json else text.encode()
        kind = b"application/json" if as_json else b"text/plain; charset=utf-8"
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", kind), (b"connection", b"close"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    def route(self, scope) -> tuple[str, str]:
        """(page, path within it) of a request."""
        path = app_path(scope)
        head, _, rest = path[1:].partition("/")
        if head in ROLE_PAGES:
            return head, "/" + rest if rest or path.endswith("/") else ""
        return "", path

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        page, path = self.route(scope)
        method = scope["method"]
        upload = UPLOAD.fullmatch(path) is not None
        if upload and page not in self.upload_pages:
            return await self.refuse(send, 403, "This page takes no files.")
        if not upload and not (OPEN_POST if method == "POST" else OPEN_GET).fullmatch(path) \
                or method not in ("GET", "HEAD", "POST"):
            return await self.refuse(send, 404, "Not found.")
        if method != "POST":
            return await self.app(scope, receive, send)
        limit = self.max_upload if upload else self.max_body
        length = dict(scope.get("headers", [])).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            if upload:      # in the words of gradio's own refusal, which a part past the size gets
                mb = (limit - UPLOAD_OVERHEAD) / 1024 / 1024
                return await self.refuse(send, 413, f"The file is larger than the maximum allowed size ({mb:.1f} MB).")
            return await self.refuse(send, 413, f"The request is larger than this server takes ({limit:,} bytes).")
        if upload:
            if self.uploads is None:
                return await self.app(scope, self.bounded_stream(receive, limit), send)
            from services.admin.auth import throttle_key

            client = throttle_key((scope.get("client") or ("?",))[0], scope.get("headers", []))
            refusal = self.uploads.admit(client, int(length) if length is not None else 0)
            if refusal:
                return await self.refuse(send, 429, refusal)
            stream, seen = self.bounded_stream(receive, limit), [0]

            async def counted():
                message = await stream()
                seen[0] += len(message.get("body", b""))
                return message
            return await self.app(scope, counted, self.kept_uploads(client, send, seen))
        import anyio

        body = bytearray()
        try:
            with anyio.fail_after(self.body_timeout):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return
                    body += message.get("body", b"")
                    if len(body) > limit:
                        return await self.refuse(
                            send, 413, f"The request is larger than this server takes ({limit:,} bytes).")
                    if not message.get("more_body"):
                        break
        except TimeoutError:
            return await self.refuse(send, 408, f"The request's body did not arrive within {self.body_timeout:g} s.")
        body = bytes(body)
        problem = await anyio.to_thread.run_sync(json_problem, body) if len(body) > 4096 else json_problem(body)
        if problem:
            return await self.refuse(send, 413, f"The request's data is too complex ({problem}).")
        refusal = self.callers.admit(page, path, scope.get("query_string", b""), body) if self.callers else None
        if refusal:
            return await self.refuse(send, 403, refusal, as_json=True)
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()
        return await self.app(scope, replay, send)

    def kept_uploads(self, client: str, send, seen: list):
        """send, noting the files an upload's answer names (a JSON list of their paths) as the
        client's, with the bytes its body had (gradio moves the files in after answering)."""
        status, parts = 0, []

        async def noting(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message.get("status", 0)
            elif message["type"] == "http.response.body" and status == 200 and sum(map(len, parts)) < 65536:
                parts.append(message.get("body", b""))
                if not message.get("more_body"):
                    try:
                        paths = json.loads(b"".join(parts))
                    except ValueError:
                        paths = []
                    if isinstance(paths, list):
                        self.uploads.keep(client, [p for p in paths if isinstance(p, str)], seen[0])
            await send(message)
        return noting

    def bounded_stream(self, receive, limit: int):
        """An upload's body as it arrives, ended (a disconnect, which Gradio drops) when it passes
        `limit` bytes or stalls for body_timeout seconds."""
        import anyio

        seen = 0

        async def bounded():
            nonlocal seen
            try:
                with anyio.fail_after(self.body_timeout):
                    message = await receive()
            except TimeoutError:
                return {"type": "http.disconnect"}
            seen += len(message.get("body", b""))
            return {"type": "http.disconnect"} if seen > limit else message
        return bounded


# -- sessions: cheap for anyone, kept for the callers the app knows (issue 30, point 3) ---------
# Gradio keeps a SessionState per session hash (the client chooses it), and built each with a copy
# of every block's config: on "/" (314 blocks) 33-57 ms and about 500 KB a session, kept up to
# 10,000 sessions a page. That copy only serves deep links (/gradio_api/deep_link, closed here):
# an event fills in the config of the blocks it touches anyway. A session that came with an
# active participant's token or a live admin session (Callers.admit) is kept as Gradio keeps it;
# any other is one of at most STRANGER_SESSIONS a page, each dropped STRANGER_SESSION_S after its
# last use. Past that number a stranger's session still lives STRANGER_GRACE_S after its last use:
# a session becomes known only with its next request after a password login (the dashboard's
# tick, 10 s) or a Prolific newcomer's first page (its token comes back in the load's answer).
# Gradio's own cap (10,000 a page) then drops strangers first, never a known caller for them.
STRANGER_SESSIONS = 200
STRANGER_SESSION_S = 600.0
STRANGER_GRACE_S = 20.0
PARTICIPANT_CALLS = ("view", "consent", "demographics")
NOT_YOUR_LINK = "This link is not valid. Please use the personal link you were given."
SESSION_HASH = re.compile(rb'"session_hash"\s*:\s*"([^"\\]{1,64})"')
CREDENTIAL = re.compile(rb'"([A-Za-z0-9_-]{16,64})"')
EVENT = re.compile(r"/gradio_api/(?:api|call|run)/([^/]+)/?")
FN_INDEX = re.compile(rb'"fn_index"\s*:\s*(\d{1,6})')
_SESSION_CLASSES: list = []


def session_classes() -> tuple:
    """(LeanSession, CallerSessions): gradio's SessionState without its up-front copy of every
    block's config, and a StateHolder that keeps known callers' sessions apart from strangers'."""
    if _SESSION_CLASSES:
        return tuple(_SESSION_CLASSES)
    import time
    from collections import OrderedDict
    from types import SimpleNamespace

    from gradio.state_holder import SessionState, StateHolder

    class LeanSession(SessionState):
        def __init__(self, blocks):
            # gradio's own __init__, given no blocks to copy the config of up front
            super().__init__(SimpleNamespace(default_config=blocks.default_config, blocks={}))

    class CallerSessions(StateHolder):
        def __init__(self, strangers: int = STRANGER_SESSIONS, ttl: float = STRANGER_SESSION_S,
                     grace: float = STRANGER_GRACE_S, clock=time.monotonic):
            super().__init__()
            self.known: set[str] = set()        # hashes that came with a valid link or admin session
            self.strangers: OrderedDict[str, float] = OrderedDict()     # the others: hash -> last use
            self.stranger_cap, self.ttl, self.grace, self.clock = strangers, ttl, grace, clock

        def vouch(self, session_id: str) -> None:
            with self.lock:
                self.known.add(session_id)
                self.strangers.pop(session_id, None)
                if len(self.known) > 2 * self.capacity:      # those gradio evicted
                    self.known &= set(self.session_data)

        def __getitem__(self, session_id: str):
            if session_id not in self.session_data:
                self.session_data[session_id] = LeanSession(self.blocks)
            if session_id not in self.known:
                with self.lock:
                    self.strangers[session_id] = self.clock()
                    self.strangers.move_to_end(session_id)
                    self.drop_strangers(keep=session_id)
            return super().__getitem__(session_id)

        def drop_strangers(self, keep: str | None = None) -> None:
            """Past the cap, the least recently used unused for grace seconds; any unused for ttl
            seconds (under the lock)."""
            now = self.clock()
            while self.strangers:
                sid, used = next(iter(self.strangers.items()))
                if sid == keep or now - used < (self.grace if len(self.strangers) > self.stranger_cap else self.ttl):
                    break
                self.forget(sid)

        def forget(self, sid: str) -> None:
            self.strangers.pop(sid, None)
            self.session_data.pop(sid, None)
            self.time_last_used.pop(sid, None)

        def update(self, session_id: str):
            """Gradio's: the session to the end, and past capacity the oldest goes; a stranger first."""
            with self.lock:
                if session_id in self.session_data:
                    self.session_data.move_to_end(session_id)
                while len(self.session_data) > self.capacity:
                    oldest = next((s for s in self.strangers if s != session_id), None)
                    if oldest is None:
                        evicted, _ = self.session_data.popitem(last=False)
                        self.time_last_used.pop(evicted, None)
                        self.known.discard(evicted)
                    else:
                        self.forget(oldest)

        def delete_all_expired_state(self):     # gradio calls it every second
            with self.lock:
                self.drop_strangers()
            super().delete_all_expired_state()

    _SESSION_CLASSES.extend([LeanSession, CallerSessions])
    return LeanSession, CallerSessions


def lean_sessions() -> None:
    """Every gradio App built after this keeps its sessions in CallerSessions, and a request
    without a session hash gets a LeanSession (gradio builds one for it and throws it away)."""
    from gradio import route_utils, routes

    lean, holder = session_classes()
    routes.StateHolder = holder
    route_utils.SessionState = lean


class Callers:
    """Who an event request comes from, read in Guard from its query (?t=, ?admin=) and its body:
    a session hash seen with an active participant's token or a live admin session (or the admin
    link's secret) is marked known to its page's CallerSessions. On "/" the participant calls
    (view, consent, demographics), which only scripts use there, are refused to a caller without
    a valid token or admin session before Gradio builds anything (an honest link is sent on to
    its role's page by RoleRedirect)."""

    MAX_LOOKUPS = 8      # token-shaped strings looked up per request, at most

    def __init__(self, site: Site, database):
        self.site, self.database = site, database
        self.team_calls = {i for i, fn in getattr(site.team, "fns", {}).items()
                           if getattr(fn, "api_name", None) in PARTICIPANT_CALLS}

    def holder(self, page: str):
        blocks = self.site.pages.get(page) if page else self.site.team
        holder = getattr(blocks, "state_holder", None)
        return holder if hasattr(holder, "vouch") else None

    def valid(self, query: bytes, body: bytes) -> bool:
        import hmac
        from urllib.parse import parse_qs

        auth = self.site.auth
        q = parse_qs(query.decode("latin-1")) if query else {}
        secret = getattr(auth, "local_secret", None)
        if secret and any(hmac.compare_digest(v.encode(), secret.encode()) for v in q.get("admin", [])[:1]):
            return True
        values = q.get("t", [])[:1] + [m.decode() for m in CREDENTIAL.findall(body)[:self.MAX_LOOKUPS]]
        return any(known_credential(self.database, auth, v) for v in values[:self.MAX_LOOKUPS])

    def participant_call(self, path: str, body: bytes) -> bool:
        m = EVENT.fullmatch(path)
        if m:
            return m.group(1) in PARTICIPANT_CALLS
        m = FN_INDEX.search(body)
        return bool(m) and int(m.group(1)) in self.team_calls

    def admit(self, page: str, path: str, query: bytes, body: bytes) -> str | None:
        """None: on to Gradio (the session marked known when it came with a valid caller);
        else the refusal's text."""
        holder = self.holder(page)
        m = SESSION_HASH.search(body)
        sid = m.group(1).decode("latin-1") if m else None
        if sid and holder is not None and sid in holder.known:
            return None
        valid = self.valid(query, body)
        if valid and sid and holder is not None:
            holder.vouch(sid)
        if not valid and not page and self.participant_call(path, body):
            return NOT_YOUR_LINK
        return None


# -- uploads per client (issue 30, point 2): the upload request carries no session hash ---------
class UploadBudget:
    """Uploads per client address (services.admin.auth.throttle_key: behind a proxy, the address
    it appended): at most per_minute a minute, and at most held bytes of its uploads still on the
    server (an upload leaves when its event is done with it or after UNUSED_UPLOAD_S); all clients
    together at most total bytes (a direct client forging X-Forwarded-For gets a new key each
    time). An honest sender uploads one or two recordings an item. In memory."""

    def __init__(self, per_minute: int, held: int, total: int, clock=None):
        import time

        self.per_minute, self.held_cap, self.total_cap = per_minute, held, total
        self.clock = clock or time.monotonic
        self.recent: dict[str, list[float]] = {}            # client -> times of its uploads this minute
        self.files: dict[str, list[tuple]] = {}     # client -> (paths, bytes, when) of each upload

    def _held(self, client: str) -> int:
        import os

        now = self.clock()
        # a file gradio is still moving into place (just after its answer) counts as held
        kept = [f for f in self.files.get(client, []) if now - f[2] < 10 or any(os.path.exists(p) for p in f[0])]
        if kept:
            self.files[client] = kept
        else:
            self.files.pop(client, None)
        return sum(f[1] for f in kept)

    def admit(self, client: str, incoming: int = 0) -> str | None:
        """None (counted as one upload) or why the upload is refused."""
        now = self.clock()
        recent = [t for t in self.recent.get(client, []) if now - t < 60]
        if len(self.recent) > 10_000:       # forget the clients with nothing this minute
            self.recent = {k: v for k, v in self.recent.items() if v and now - v[-1] < 60}
        if len(recent) >= self.per_minute:
            self.recent[client] = recent
            return (f"Too many uploads from your address: at most {self.per_minute} a minute. "
                    "Please wait a minute and try again.")
        mb = 1024 * 1024
        held = self._held(client)
        if held + incoming > self.held_cap:
            return (f"Your address already has {held / mb:.1f} MB of uploads on the server, and the limit is "
                    f"{self.held_cap / mb:.0f} MB: they are removed within {UNUSED_UPLOAD_S // 60} minutes. "
                    "Please try again then.")
        if sum(self._held(k) for k in list(self.files)) + incoming > self.total_cap:
            return "The server holds too many uploads just now. Please try again in a few minutes."
        self.recent[client] = recent + [now]
        return None

    def keep(self, client: str, paths: list, size: int) -> None:
        """An upload the server stored: its files count against the client while they exist."""
        if paths:
            self.files.setdefault(client, []).append((tuple(str(p) for p in paths), size, self.clock()))


def upload_pages(site: Site) -> tuple:
    """The pages ("" for "/") with a file input a visitor can fill."""
    out = []
    for page, blocks in [("", site.team), *site.pages.items()]:
        if any(type(b).__name__ in UPLOAD_KINDS and getattr(b, "interactive", None) is not False
               for b in blocks.blocks.values()):
            out.append(page)
    return tuple(out)


def guard(site: Site, settings, database=None):
    from starlette.middleware import Middleware

    held = int(settings.upload_mb_per_client * 1024 * 1024)
    return Middleware(Guard, max_body=int(settings.max_body_kb * 1024),
                      max_upload=int(settings.max_upload_mb * 1024 * 1024),
                      body_timeout=settings.body_timeout, upload_pages=upload_pages(site),
                      callers=Callers(site, database) if database is not None else None,
                      uploads=UploadBudget(settings.uploads_per_minute, held, 20 * held))


def few_files_per_upload() -> None:
    """Gradio's upload parser takes up to 1,000 files and 1,000 fields a request: a page sends one."""
    from gradio import route_utils

    parser = route_utils.GradioMultiPartParser
    if getattr(parser, "bounded", False):
        return

    class Bounded(parser):
        bounded = True

        def __init__(self, *args, **kwargs):
            kwargs.update(max_files=MAX_FILES_PER_UPLOAD, max_fields=MAX_FILES_PER_UPLOAD * 4)
            super().__init__(*args, **kwargs)
    route_utils.GradioMultiPartParser = Bounded


def expire_unused_uploads(site: Site, seconds: float = UNUSED_UPLOAD_S, every: float = 60.0) -> None:
    """Every `every` seconds, delete the uploads older than `seconds` (what a handler keeps, it
    copied under the media folder when its event ran; delete_cache removes the rest only after
    an hour)."""
    import os
    import threading
    import time

    def sweep():
        while True:
            time.sleep(every)
            now = time.time()
            for blocks in site.blocks:
                for path in list(blocks.upload_file_set):
                    try:
                        if now - os.path.getmtime(path) > seconds:
                            os.remove(path)
                            blocks.upload_file_set.discard(path)
                    except OSError:
                        blocks.upload_file_set.discard(path)

    threading.Thread(target=sweep, name="upload-expiry", daemon=True).start()


def slow_clients_cut_off(header_timeout: float, max_connections: int) -> None:
    """uvicorn (as Gradio starts it) waits for a request's headers forever and takes any number of
    connections: each connection now has header_timeout seconds to send its request line and
    headers (a new one, and a kept-alive one from its next byte), and past max_connections open
    connections a request is answered 503 (uvicorn's limit_concurrency). The body's limit is
    Guard's."""
    import asyncio

    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol

    if getattr(uvicorn.Config, "cuts_slow_clients", False):
        return

    class TimedH11(H11Protocol):
        header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport):
            super().connection_made(transport)
            self.header_timer = self.loop.call_later(header_timeout, self.too_slow)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            waiting = self.cycle is None or self.cycle.response_complete
            if not waiting and self.header_timer is not None:
                self.header_timer.cancel()
                self.header_timer = None
            elif waiting and self.header_timer is None and not self.transport.is_closing():
                self.header_timer = self.loop.call_later(header_timeout, self.too_slow)

        def too_slow(self) -> None:
            self.header_timer = None
            if (self.cycle is None or self.cycle.response_complete) and not self.transport.is_closing():
                self.transport.close()

        def connection_lost(self, exc):
            if self.header_timer is not None:
                self.header_timer.cancel()
            super().connection_lost(exc)

    class Config(uvicorn.Config):
        cuts_slow_clients = True

        def __init__(self, *args, **kwargs):
            kwargs.setdefault("http", TimedH11)
            kwargs.setdefault("limit_concurrency", max_connections)
            super().__init__(*args, **kwargs)
    uvicorn.Config = Config


# A gr.State's config holds its delete_callback, a function that the JSON encoder writes as its
# repr ("<function ... at 0x7f...>"): every page's /config and HTML showed memory addresses. The
# page needs none of that.
ADDRESS = re.compile(r"<[^<>]* at 0x[0-9a-fA-F]+>")


def without_addresses(config):
    """The config without the values that would show a memory address (in place)."""
    if isinstance(config, dict):
        for key in [k for k, v in config.items() if callable(v) or isinstance(v, str) and ADDRESS.search(v)]:
            del config[key]
        for v in config.values():
            without_addresses(v)
    elif isinstance(config, list):
        for v in config:
            without_addresses(v)
    return config


def patient_start_probe(seconds: float = 60.0) -> None:
    """Gradio's launch() checks that it can reach its own "/" (a HEAD with a 3 s timeout) and
    gives up on the first timeout with "localhost is not accessible". A restart while
    participants' browsers reconnect all at once (a Space rebuild, a kill -9 mid-study) keeps
    the server busy past that: probe again until `seconds` have passed instead."""
    import time

    from gradio import networking

    once = networking.url_ok
    if getattr(once, "patient", False):
        return

    def url_ok(url: str) -> bool:
        deadline = time.monotonic() + seconds
        while not once(url):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.5)
        return True
    url_ok.patient = True
    networking.url_ok = url_ok


def link_base(settings, host: str | None, port: int | None, tls: bool) -> str:
    """The base of the participant links the server prints: TRADLAB_PUBLIC_URL or the Space's
    address when there is one, else the address the server listens on (--host and --port
    included: `app.py --demo --port 7891` printed links to :7860), https when it serves TLS."""
    url = settings.public_url
    if settings.get("TRADLAB_PUBLIC_URL") or settings.on_space:
        return url
    url = f"http://{host or settings.host}:{port or settings.port}"
    return "https://" + url[len("http://"):] if tls else url


def serve(args, settings, connect):
    """Serve the app until stopped: args are `serve`'s options, connect() opens the database."""
    import dataclasses
    import os

    from services.participation import rate_limit

    rate_limit.configure(settings.rate_limit)      # per participant link, in the served app only

    # not a setting of this app: gradio's own variable, given a value for the served process
    os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", ANALYTICS_EVERY)

    from services.common.settings import space_storage_warning

    certfile, keyfile = serve_tls(args, settings)
    settings = dataclasses.replace(settings, public_url=link_base(settings, args.host, args.port, bool(certfile)))
    warning = space_storage_warning(settings.environ)
    if warning:
        print(warning, file=sys.stderr)
    host = args.host or settings.host
    from services.admin.auth import exposure_warning

    exposed = exposure_warning(host, settings.admin_password, settings.on_space, args.root_path)
    if exposed:
        print(exposed, file=sys.stderr)
    if not settings.admin_password and not settings.admin_secret:
        # the passwordless admin's key, new each start; only this terminal sees it (admin_link)
        import secrets

        settings = dataclasses.replace(settings, admin_secret=secrets.token_urlsafe(24))
    database = connect()
    if args.demo:
        ensure_demo(database, settings)
    elif not settings.admin_password:
        print(admin_link(settings), flush=True)
    site = build_app(settings, database)
    demo = site.team
    demo.queue(default_concurrency_limit=16)
    patient_start_probe()
    lean_sessions()
    slow_clients_cut_off(settings.header_timeout, settings.max_connections)
    few_files_per_upload()
    page_options = dict(css_paths=[ROOT / "assets" / "style.css"], js=KEYBOARD_JS, theme=page_theme(),
                        allowed_paths=[str(settings.media_dir)],
                        # an unexpected exception's text never reaches a participant (gradio shows a
                        # generic "Error"); gr.Error messages still show, and the admin tabs raise
                        # them with details
                        show_error=False,
                        # no "Use via API / Built with Gradio / Settings" footer under a participant's task
                        footer_links=[],
                        # no "run history" store in the participant's browser (nor its script)
                        run_history=False,
                        # gradio refuses a larger upload before it is stored or decoded
                        max_file_size=int(settings.max_upload_mb * 1024 * 1024))
    mounts = mount_pages(site, root_path=args.root_path, server_name=host,
                         server_port=args.port or settings.port, **page_options)
    demo.launch(server_name=host, server_port=args.port or settings.port,
                # ssl_verify only concerns gradio's start-up probe of its own local URL
                # (https://localhost:PORT), which a self-signed or a public-name certificate fails
                ssl_certfile=certfile, ssl_keyfile=keyfile, ssl_verify=not certfile,
                root_path=args.root_path, **page_options,
                app_kwargs={"routes": mounts,
                            # static_assets first: a bundle file needs none of the others
                            "middleware": [guard(site, settings, database)]
                                          + ([static_assets()] if settings.fast_pages else [])
                                          + [role_redirect(database), refuse_remote_files_middleware(), compression(),
                                             security_headers(settings)]
                                          + ([preload_hints(site)] if settings.fast_pages else [])},
                prevent_thread_lock=True)
    for blocks in site.blocks:
        without_addresses(blocks.config)
    expire_unused_uploads(site)
    quiet_queues(site)
    start_pages(site, demo.local_url, verify=not certfile)
    warm_up(site, demo.local_url, verify=not certfile)
    # the worker starts once the server answers: jobs resumed at start (model loads, a HIT's
    # images or audio) would otherwise slow gradio's own start-up probe of "/" past its 3 s
    # timeout, and launch() gives up ("localhost is not accessible")
    if settings.worker:
        from services.common.jobs_worker import Worker
        from services.participation import maintenance
        from services.usability import pipeline

        maintenance.schedule_all(database)      # drop-out detection and the workflow's repair, periodic
        Worker(database, pipeline.handlers(database, media_dir=settings.media_dir)).start()
    demo.block_thread()


def warm_up(site: Site, local_url: str, verify: bool) -> None:
    """What a process does once, done in the background before the first participant asks
    (warm_pages): the first load of each page was 0.3-0.6 s slower than the next without it."""
    import threading

    import httpx

    def run():
        with httpx.Client(verify=verify, timeout=60, headers={"accept-encoding": "gzip"}) as client:
            try:
                warm_pages(site.pages, lambda path: client.get(local_url.rstrip("/") + path))
            except httpx.HTTPError:       # a warm-up only: the first participant pays instead
                pass

    threading.Thread(target=run, name="warm-up", daemon=True).start()


def warm_pages(pages: dict, get) -> list[str]:
    """Find the fonts of the DA text images (fontconfig, a dozen subprocesses: about 0.15 s on the
    first DA item), then get(path) each role's page and each bundle file it names once, as a
    browser would: Gradio's first render of a page, its preload hints, the in-memory bundle
    files. pages: role -> its Blocks. Returns the paths asked for."""
    from services.da.render import font_chain
    from tabs import preload

    font_chain()
    asked, seen = [], set()
    for role, page in pages.items():
        asked.append(f"/{role}/")
        get(asked[-1])
        for name in preload.page_files(preload.config_types(page)):
            if name not in seen:
                seen.add(name)
                asked.append(f"/{role}/assets/{name}")
                get(asked[-1])
    return asked


def ensure_demo(database, settings):
    """Import the demo study and give it one participant per role (only the first time)."""
    from services.setup.enrolment import add_participants, links
    from services.setup.importer import import_study
    from services.study.files import StudyValidationError
    from storage import participants

    try:
        res = import_study(database, settings.demo_study, actor="demo")
        sid, status = res.study_id, res.status
    except StudyValidationError:
        # a database whose demo has participants and predates this version's demo files: it is
        # kept as it is (its data stays); a new TRADLAB_DB gets the current demo
        sid, status = "demo", "kept: this database's demo has participants and older content"
        if not participants.list_for_study(database, sid):
            raise
    if not participants.list_for_study(database, sid):
        stays = add_participants(database, sid, "sender", 1, "USW", "Woman", actor="demo")[0]
        for role in ("receiver", "validator", "rater", "da", "sd"):
            add_participants(database, sid, role, 1, actor="demo")
        # the rater's work: a sender who dropped out after one recording (issue 29)
        from services.setup.demo import add_dropped_out_sender
        print("Demo: " + add_dropped_out_sender(database, sid, settings.media_dir, stays.id))
    print(f"Demo study '{sid}' ({status}). One link per role:")
    seen = set()
    for row in links(database, sid, settings.public_url):
        if row["role"] not in seen:
            seen.add(row["role"])
            print(f"  {row['role']:<10} {row['url']}")
    print(f"  admin      {settings.public_url}/  (Admin tab)" if settings.admin_password
          else f"  {admin_link(settings)}")


def admin_link(settings) -> str:
    """The line naming the passwordless admin's link (services.admin.auth: the secret is its key)."""
    return (f"Admin link (no TRADLAB_ADMIN_PASSWORD set; the link is the key, keep it to yourself): "
            f"{settings.public_url}/?admin={settings.admin_secret}")
