"""The study app: `python app.py` serves it; subcommands import studies and manage participants."""

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent

HELP_NO_LINK = ("### Welcome\nThis is a study platform. Participants: please open the personal link "
                "you were given (it ends in `?t=...`). Study designers: use the Admin tab.")


# Enter submits the visible tab's form when focus is on a slider, a radio or the page itself,
# never from a text box (an answer being typed is not lost to a stray Enter).
KEYBOARD_JS = """() => { document.addEventListener('keydown', (e) => {
  if (e.key !== 'Enter' || e.shiftKey || e.ctrlKey || e.altKey || e.metaKey || e.isComposing) return;
  const t = e.target;
  if (t && (t.tagName === 'TEXTAREA' || t.tagName === 'BUTTON' || t.tagName === 'SELECT' ||
      (t.tagName === 'INPUT' && !['range', 'radio', 'checkbox'].includes(t.type)))) return;
  const btn = [...document.querySelectorAll('.submit-btn button, button.submit-btn')].find(b => b.offsetParent !== null);
  if (btn) { e.preventDefault(); btn.click(); }
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

    auth = admin.AdminAuth(settings.admin_password, database)
    refuse_remote_files()
    site = Site(team_page(settings, database, auth),
                {role: role_page(database, settings, role, label) for role, label in ROLE_PAGES.items()})
    for blocks in site.blocks:
        forget_strangers_uploads(blocks, database, auth)
    return site


def participant_api(database, settings) -> None:
    """The calls of a participant's link, on every page (in the open Blocks)."""
    import gradio as gr

    from services.study.consent import ConsentError, record_consent, submit_demographics
    from services.participation.items import AccessError, get_view, participant_for_token
    from tabs.common import view_dict

    def view(participant_token: str, tab: str) -> dict:
        """The participant's current item on a tab, as the page shows it (resume after reload)."""
        try:
            return view_dict(get_view(database, participant_token, tab, media_dir=settings.media_dir))
        except AccessError as e:
            return view_dict(None, error=str(e))

    def consent(participant_token: str, agreed: bool) -> dict:
        """Agree (true) or decline (false); returns the stage still pending (null: none)."""
        try:
            stage = record_consent(database, participant_for_token(database, participant_token), agreed)
        except (AccessError, ConsentError) as e:
            return {"error": str(e)}
        return {"pending": stage}

    def demographics(participant_token: str, answers: dict) -> dict:
        """The demographics form as {field id: answer}; returns the stage still pending."""
        try:
            stage = submit_demographics(database, participant_for_token(database, participant_token), answers)
        except (AccessError, ConsentError) as e:
            return {"error": str(e)}
        return {"pending": stage}

    gr.api(view, api_name="view", api_visibility="undocumented")
    gr.api(consent, api_name="consent", api_visibility="undocumented")
    gr.api(demographics, api_name="demographics", api_visibility="undocumented")


def team_page(settings, database, auth):
    import gradio as gr

    from services.admin import auth as admin
    from tabs import analysis as analysis_tab
    from tabs import admin as admin_tab
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


def resolve_link(database, request) -> tuple[str, str, dict | None]:
    """(token, problem, participant) of a page's URL: a token from ?t=..., or a Prolific newcomer
    enrolled into an open self-enrolment slot (the URL's signature over study, role, group and
    gender is checked first)."""
    from services.study.participants import ParticipantError, enrol_from_link
    from storage import participants

    q = dict(request.query_params) if request else {}
    tok, problem = q.get("t") or "", ""
    if not tok and q.get("PROLIFIC_PID"):
        try:
            tok = enrol_from_link(database, q)["token"]
        except ParticipantError as e:
            problem = str(e)
    participant = participants.by_token(database, tok) if tok else None
    if tok and participant is None:
        problem = "This link is not valid. Please use the personal link you were given."
    return tok, problem, participant


def role_page(database, settings, role: str, title: str):
    """The page of one role, a Blocks of its own: the consent page, then that role's tabs (a
    sender's Record and Survey; everyone else's one tab), and the participant calls."""
    import gradio as gr

    from services.participation.items import ROLE_TABS
    from services.study.texts import Voice, page_language
    from tabs import consent as consent_tab
    from tabs import da, receiver, record, sd, survey, validator
    from tabs.common import Ctx, plain_markdown

    builders = {"record": record.build, "receiver": receiver.build, "validator": validator.build,
                "survey": survey.build, "da": da.build, "sd": sd.build}
    names = ROLE_TABS[role]
    lang = page_language(names[0])      # the receiver's page is in European Portuguese
    with gr.Blocks(title=title, delete_cache=UPLOADS_EXPIRE) as page:
        token = gr.Textbox(visible=False, elem_id="participant-token")
        welcome = gr.Markdown()
        ctx = Ctx(database, settings, token, lang=lang)
        consent_ui = consent_tab.build(ctx)
        with gr.Tabs() as tabset:
            uis = [builders[name](ctx) for name in names]

        def on_load(request: gr.Request):
            tok, problem, participant = resolve_link(database, request)
            out = {token: tok, welcome: ""}
            if participant is not None and participant["role"] != role:
                problem = Voice(lang)("not_your_role")
            elif tok and participant is None:
                problem = Voice(lang)("invalid_link")
            if problem or participant is None:
                out[welcome] = f"**{plain_markdown(problem or Voice(lang)('invalid_link'))}**"
                for ui in uis:
                    out[ui.tab] = gr.update(visible=False)
                return out
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
        page.load(on_load, None, [token, welcome] + consent_ui.outputs, api_visibility="private")
        for ui in uis:   # a finished queue with a Prolific URL sends the participant back there
            ui.outputs[0].change(None, ui.outputs[0], None, js=REDIRECT_JS)
        participant_api(database, settings)
    return page


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
            path, prefix = scope["path"], scope.get("root_path", "").rstrip("/")
            if prefix and path.startswith(prefix + "/"):     # a server's --root-path
                path = path[len(prefix):]
            location = self.target(path, scope.get("query_string", b"").decode("latin-1"))
            if location:
                await send({"type": "http.response.start", "status": 302,
                            "headers": [(b"location", location.encode("latin-1")),
                                        (b"content-length", b"0"), (b"cache-control", b"no-store")]})
                return await send({"type": "http.response.body", "body": b""})
        return await self.app(scope, receive, send)


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


def forget_strangers_uploads(demo, database, auth) -> None:
    """Anyone may POST a file to /gradio_api/upload. After an event with an upload input, the
    uploads among its arguments are deleted at once unless one of its text arguments is a valid
    participant token or admin session (a valid caller's upload expires with UPLOADS_EXPIRE;
    what a handler keeps, it has copied under the media folder by then)."""
    import contextvars
    import functools
    import inspect
    import os

    from storage import participants

    def valid(value) -> bool:
        if not isinstance(value, str) or not value or len(value) > 200 or "/" in value:
            return False
        participant = participants.by_token(database, value)
        if participant is not None and participant.get("active", 1):
            return True
        try:   # the session alone (the handler checked the address), in a copy of the context:
            # the handler's "admin checked" mark (services.admin.auth.run_checked) is left as it was
            contextvars.copy_context().run(auth.check, value, "127.0.0.1")
            return True
        except PermissionError:
            return False

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


def cmd_serve(args, settings):
    import dataclasses
    import os

    from services.participation import rate_limit

    rate_limit.configure(settings.rate_limit)      # per participant link, in the served app only

    os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", ANALYTICS_EVERY)

    from services.common.settings import on_space, space_storage_warning
    from storage import open_database

    certfile, keyfile = serve_tls(args, settings)
    if certfile and not os.environ.get("TRADLAB_PUBLIC_URL") and settings.public_url.startswith("http://"):
        settings = dataclasses.replace(settings, public_url="https://" + settings.public_url[len("http://"):])
    warning = space_storage_warning()
    if warning:
        print(warning, file=sys.stderr)
    host = args.host or settings.host
    from services.admin.auth import exposure_warning

    exposed = exposure_warning(host, settings.admin_password, on_space(), args.root_path)
    if exposed:
        print(exposed, file=sys.stderr)
    database = open_database(settings.db_path, settings.journal_mode)
    if args.demo:
        ensure_demo(database, settings)
    site = build_app(settings, database)
    demo = site.team
    demo.queue(default_concurrency_limit=16)
    patient_start_probe()
    page_options = dict(css_paths=[ROOT / "assets" / "style.css"], js=KEYBOARD_JS,
                        allowed_paths=[str(settings.media_dir)],
                        # an unexpected exception's text never reaches a participant (gradio shows a
                        # generic "Error"); gr.Error messages still show, and the admin tabs raise
                        # them with details
                        show_error=False,
                        # no "Use via API / Built with Gradio / Settings" footer under a participant's task
                        footer_links=[],
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
                            "middleware": [role_redirect(database), refuse_remote_files_middleware(), compression(),
                                           security_headers(settings)]}, prevent_thread_lock=True)
    start_pages(site, demo.local_url, verify=not certfile)
    # the worker starts once the server answers: jobs resumed at start (model loads, a HIT's
    # images or audio) would otherwise slow gradio's own start-up probe of "/" past its 3 s
    # timeout, and launch() gives up ("localhost is not accessible")
    if settings.worker:
        from services.participation import maintenance
        from services.usability import pipeline
        from services.common.jobs_worker import Worker

        maintenance.schedule_all(database)      # drop-out detection and the workflow's repair, periodic
        Worker(database, pipeline.handlers(database, media_dir=settings.media_dir)).start()
    demo.block_thread()


def ensure_demo(database, settings):
    """Import the demo study and give it one participant per role (only the first time)."""
    from services.study.participants import add_participants, links
    from services.study.importer import import_study
    from storage import participants

    from services.study.files import StudyValidationError

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
        add_participants(database, sid, "sender", 1, "USW", "Woman", actor="demo")
        for role in ("receiver", "validator", "rater", "da", "sd"):
            add_participants(database, sid, role, 1, actor="demo")
    print(f"Demo study '{sid}' ({status}). One link per role:")
    seen = set()
    for row in links(database, sid, settings.public_url):
        if row["role"] not in seen:
            seen.add(row["role"])
            print(f"  {row['role']:<10} {row['url']}")
    print(f"  admin      {settings.public_url}/  (Admin tab)")


def cmd_import(args, settings):
    from services.study.files import StudyValidationError
    from services.study.importer import import_study
    from storage import open_database

    database = open_database(settings.db_path, settings.journal_mode)
    try:
        res = import_study(database, args.folder)
    except StudyValidationError as e:
        print(f"Nothing was imported: {len(e.errors)} problem(s) in {args.folder}", file=sys.stderr)
        for err in e.errors:
            print(f"  {err}", file=sys.stderr)
        return 2
    print(f"study '{res.study_id}': {res.status} " + ", ".join(f"{k} {v}" for k, v in res.counts.items()))
    return 0


def cmd_repair(args, settings):
    from services.admin import progress as admin_progress
    from storage import open_database

    print(admin_progress.repair_workflow(open_database(settings.db_path, settings.journal_mode), args.study))
    return 0


def cmd_participants_add(args, settings):
    from services.study.participants import ParticipantError, add_from_csv, add_participants, link
    from storage import open_database

    database = open_database(settings.db_path, settings.journal_mode)
    try:
        if args.csv:
            made = add_from_csv(database, args.study, args.csv)
        else:
            if not args.role:
                print("--role is required (or --csv FILE)", file=sys.stderr)
                return 2
            made = add_participants(database, args.study, args.role, args.count, args.group, args.gender,
                                    self_enrol=args.self_enrol)
    except (ParticipantError, OSError) as e:
        print(f"Nothing was added: {e}", file=sys.stderr)
        return 2
    for p in made:
        print(f"{p.id}\t{p.role}\t{p.group or ''}\t{p.gender or ''}\t{link(settings.public_url, p.token)}")
    return 0


def cmd_links(args, settings):
    from services.study.participants import ParticipantError, links, prolific_links
    from storage import open_database

    database = open_database(settings.db_path, settings.journal_mode)
    try:
        rows = links(database, args.study, settings.public_url)
    except ParticipantError as e:
        print(e, file=sys.stderr)
        return 2
    print("id\trole\tgroup\tgender\texternal_id\turl")
    for r in rows:
        print(f"{r['id']}\t{r['role']}\t{r['group'] or ''}\t{r['gender'] or ''}\t{r['external_id'] or ''}\t{r['url']}")
    signed = prolific_links(database, args.study, settings.public_url)
    if signed:
        print("\n# Prolific study URLs (signed; they fill only the open self-enrolment slots made with"
              " `participants add --self-enrol`; the count after the role is how many are open):")
        for r in signed:
            print(f"{r['role']} ({r['open']} open)\t{r['group'] or ''}\t{r['gender'] or ''}\t{r['url']}")
    return 0


def cmd_translate(args, settings):
    import json

    from services.usability.audio_intake import IntakeError
    from services.models.backends import BackendUnavailable
    from services.models.batch import translate_files

    try:
        rows = translate_files(args.audio, args.system)
    except (IntakeError, BackendUnavailable, ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(rows if len(rows) > 1 else rows[0], ensure_ascii=False, indent=2))
        return 0
    for r in rows:
        stages = ", ".join(f"{k} {v:.2f} s" for k, v in r["seconds"].items())
        print(f"{r['file']} ({r['audio_s']:.1f} s of audio, system {r['system']})")
        if r["transcript"] is not None:
            print(f"  transcript:  {r['transcript']}")
        print(f"  translation: {r['translation']}")
        print(f"  time: {stages}; real-time factor {r['real_time_factor']}")
    return 0


def cmd_analyze(args, settings):
    from services.da import analysis as da_analysis
    from services.sd import analysis as sd_analysis

    try:
        if args.analysis == "qe-audit":
            return cmd_qe_audit(args, settings)
        if args.analysis == "qe-rerank":
            return cmd_qe_rerank(args, settings)
        if args.analysis == "usability":
            from services.usability import analysis as usability_analysis
            print(usability_analysis.run_cli(args.exchanges, args.out, corpus_reference=args.corpus_reference))
        elif args.analysis == "sd":
            print(sd_analysis.run_cli(args.ratings, args.out, n_factors=args.factors,
                                      expected_seconds=args.expected_seconds, prune=args.prune))
        else:
            print(da_analysis.run_cli(args.judgments, args.out, alpha=args.alpha, wmt=args.wmt, fmt=args.format))
    except (ValueError, FileNotFoundError) as e:      # DAInputError names file, row and column
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def _thresholds(text):
    if not text:
        return None
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--thresholds takes numbers separated by commas, not {text!r}") from None


def _progress_printer():
    last = {"desc": None}

    def progress(fraction, desc):
        if desc != last["desc"]:
            print(f"  [{100 * fraction:3.0f}%] {desc}", file=sys.stderr, flush=True)
            last["desc"] = desc
    return progress


def cmd_qe_audit(args, settings):
    from services.qe import audit as qe_audit
    from services.qe import service as qe_service
    from services.models.backends import BackendUnavailable
    from storage import open_database

    try:
        database = None if args.no_cache else open_database(settings.db_path)
        result, files = qe_service.run_audit(args.pairs, args.out, metric=args.metric, context=args.context,
                                             thresholds=_thresholds(args.thresholds), database=database,
                                             progress=_progress_printer(), n_resamples=args.resamples,
                                             seed=args.seed)
    except (BackendUnavailable, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"QE audit of {args.pairs}\n{qe_audit.summary(result)}\n{len(files)} files written to {args.out}")
    return 0


def cmd_qe_rerank(args, settings):
    import pandas as pd

    from services.qe import audit as qe_audit
    from services.qe import service as qe_service
    from services.models.backends import BackendUnavailable
    from storage import open_database

    try:
        pairs = qe_audit.read_pairs(args.pairs) if args.pairs else None
        candidates = pd.read_csv(args.candidates, dtype=str, keep_default_na=False) if args.candidates else None
        sampler = None
        if args.mt_model:
            sampler = qe_service.mt_sampler(args.mt_model, args.mt_kind, args.mt_prompt, args.epsilon, args.seed,
                                            args.mt_lang)
        database = None if args.no_cache else open_database(settings.db_path)
        res = qe_service.run_rerank(candidates, args.metric, pairs=pairs, out_dir=args.out, context=args.context,
                                    sampler=sampler, n=args.n, database=database,
                                    include_greedy=args.include_greedy)
    except (BackendUnavailable, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(res.table.to_string(index=False))
    for note in res.notes:
        print(f"note: {note}")
    print(f"selected.csv and accuracy.csv written to {args.out}")
    return 0


def cmd_data(args, settings):
    from services.qe import gate_gente
    from services.qe import mtgeneval

    try:
        if args.dataset == "gate":
            frame = gate_gente.gate(args.root, args.lang, split=args.split)
            what = f"GATE en-{args.lang}, {args.split}"
        elif args.dataset == "gente":
            frame = gate_gente.gente(args.root, subset=args.subset)
            what = f"GeNTE {args.subset}, en-it"
        else:
            frame = mtgeneval.convert(args.root, args.lang, subset=args.subset, split=args.split,
                                      setting=args.setting)
            what = f"MT-GenEval {args.subset}, {args.setting}, en-{args.lang}, {args.split}"
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out, index=False)
    gold = frame["gold"].value_counts().to_dict() if "gold" in frame.columns else {}
    print(f"{args.out}: {len(frame)} instances ({what}){'; gold ' + str(gold) if gold else ''}")
    return 0


def cmd_speak(args, settings):
    from services.models.backends import BackendUnavailable
    from services.models.batch import speak_to_file

    try:
        r = speak_to_file(args.text, args.lang, args.out, args.backend or settings.tts_backend, args.voice)
    except (BackendUnavailable, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{r['out']}: {r['bytes']} bytes from {r['backend']} ({r['voice']}) in {r['seconds']:.2f} s")
    return 0


def cmd_backup(args, settings):
    from storage import backup

    try:
        info = backup.backup(settings.db_path, args.out)
    except (FileNotFoundError, ValueError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{info['path']}: {info['bytes']} bytes, {info['tables']} tables (a consistent copy of {settings.db_path})")
    return 0


def cmd_export(args, settings):
    from services.study.export import ExportError, export_study
    from storage import open_database

    database = open_database(settings.db_path, settings.journal_mode)
    try:
        res = export_study(database, args.study, args.out, fmt=args.format, media_dir=settings.media_dir,
                           include_external_ids=args.include_external_ids, include_events=args.include_events,
                           include_audio=not args.no_audio)
    except (ExportError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"study '{args.study}' exported to {res.summary()}")
    if args.include_external_ids:
        print("note: participants carry external and Prolific ids: keep this export private", file=sys.stderr)
    return 0


def _progress_bar(desc: str):
    """A tqdm bar on stderr driven by progress(done, total[, label]) callbacks."""
    from tqdm import tqdm

    bar = None

    def update(done, total, label=""):
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, desc=desc, unit="item", file=sys.stderr)
        bar.n = done
        bar.set_postfix_str(str(label or ""), refresh=False)
        bar.refresh()
        if done >= total:
            bar.close()
    return update


def cmd_questions(args, settings):
    from services.models.backends import BackendUnavailable
    from services.questions.gen import generate
    from storage import open_database

    database = open_database(settings.db_path, settings.journal_mode)
    try:
        report = generate(database, args.study, n=args.n, starter_id=args.starter,
                          progress=_progress_bar("starters"))
    except (BackendUnavailable, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for s in report.starters:
        print(s.summary())
    print(report.summary())
    return 0


def cmd_metrics(args, settings):
    from services.metrics import exchange as exchange_metrics
    from services.models.backends import BackendUnavailable
    from storage import open_database

    database = open_database(settings.db_path, settings.journal_mode)
    try:
        out = exchange_metrics.score_auto_qa(database, args.study, progress=_progress_bar("exchanges"))
    except (BackendUnavailable, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    mean = "-" if out["mean"] is None else f"{out['mean']:.3f}"
    print(f"auto-qa: {out['scored']} of {out['exchanges']} exchanges scored (mean {mean}); {out['none']} without "
          "a score (no accepted questions, or none answerable from the starter)")
    return 0


def main(argv=None):
    import os

    os.umask(0o077)     # the database, media, backups and exports: readable by this user only
    sys.path.insert(0, str(ROOT))
    from services.common.settings import Settings

    parser = argparse.ArgumentParser(prog="app.py", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="start the web app (the default)")
    for p in (parser, serve):
        p.add_argument("--host")
        p.add_argument("--port", type=int)
        p.add_argument("--demo", action="store_true", help="import the demo study and print its links first")
        p.add_argument("--ssl-certfile")
        p.add_argument("--ssl-keyfile")
        p.add_argument("--root-path", help="URL prefix when served behind a reverse proxy")
        p.add_argument("--self-signed", action="store_true",
                       help="serve HTTPS with a self-signed certificate made once in data/tls/ (beside the database)")
        p.add_argument("--tls-hosts", help="host names and IPs the self-signed certificate covers, comma-separated "
                                           "(default: this machine's host name, localhost, 127.0.0.1)")
    imp = sub.add_parser("import", help="validate and import a study folder")
    imp.add_argument("folder")
    part = sub.add_parser("participants", help="manage participants")
    psub = part.add_subparsers(dest="action", required=True)
    add = psub.add_parser("add", help="add participants (or slots for Prolific self-enrolment)")
    add.add_argument("--study", required=True)
    add.add_argument("--role")
    add.add_argument("--group")
    add.add_argument("--gender")
    add.add_argument("--count", type=int, default=1)
    add.add_argument("--csv", help="CSV with columns role, group, gender, external_id")
    add.add_argument("--self-enrol", action="store_true",
                     help="slots for Prolific self-enrolment (taken only through the signed Prolific URL; "
                          "other slots are for private links and are never handed to Prolific newcomers)")
    rp = sub.add_parser("repair", help="the four-phase workflow's repair and drop-out check, now (the worker "
                                      "runs it every 10 minutes)")
    rp.add_argument("--study", required=True)
    lk = sub.add_parser("links", help="print every participant's private link")
    lk.add_argument("--study", required=True)
    tr = sub.add_parser("translate", help="translate audio files with a speech-translation system")
    tr.add_argument("audio", nargs="+")
    tr.add_argument("--system", default="offline-cascade",
                    help="a preset from assets/systems.toml (default: offline-cascade)")
    tr.add_argument("--json", action="store_true", help="print JSON (one object per file)")
    sp = sub.add_parser("speak", help="synthesise a text to a WAV file")
    sp.add_argument("text")
    sp.add_argument("--lang", required=True, help="en | pt (or a language tag)")
    sp.add_argument("--out", required=True)
    sp.add_argument("--backend", help="auto | google | piper | espeak (default: TRADLAB_TTS_BACKEND)")
    sp.add_argument("--voice")
    an = sub.add_parser("analyze", help="run a protocol's analysis on a file of judgments")
    asub = an.add_subparsers(dest="analysis", required=True)
    da = asub.add_parser("da", help="direct assessment (paper 001): reliability, z-scores, rankings")
    da.add_argument("judgments", help="CSV (worker_id, hit_id, modality, system, segment_id, item_type, score), "
                                      "a WMT DA TSV or an Appraise CSV export")
    da.add_argument("--out", required=True, help="folder for the CSV tables and HTML figures")
    da.add_argument("--alpha", type=float, default=0.05)
    da.add_argument("--wmt", action="store_true", help="score as WMT publishes: system + repeat items, every worker")
    da.add_argument("--format", default="auto", choices=["auto", "csv", "wmt", "appraise"])
    sdp = asub.add_parser("sd", help="semantic differential (paper 002): cleansing and factor analysis")
    sdp.add_argument("ratings", help="CSV: participant_id, sentence_id, pair_id, value (-3..3), is_repeat, duration_s")
    sdp.add_argument("--out", required=True)
    sdp.add_argument("--factors", type=int, help="number of factors (default: parallel analysis)")
    sdp.add_argument("--expected-seconds", type=float, default=600)
    sdp.add_argument("--prune", action="store_true", help="drop items with communality < 0.3 or cross-loadings within 0.2")
    us = asub.add_parser("usability", help="the four-phase study (paper 000): groups, correlations, LMM, thresholds")
    us.add_argument("exchanges", help="CSV: exchange_id, sender_id, receiver_id, validator_id, group, gender, system, "
                                      "topic, source, satisfaction, trust, reliance, *_b, translation_score, qa_score, "
                                      "metric_* columns; optional starter_id, perspective and respondent_id, "
                                      "respondent_role, respondent_group, respondent_gender (group and gender "
                                      "are then the speaker's), corpus (the models' Source factor, Table 4)")
    us.add_argument("--out", required=True)
    us.add_argument("--corpus-reference", default="", help="reference level of the corpus factor (default: "
                                                           "BConTrasT when present, else the first corpus in "
                                                           "sorted order)")
    qa = asub.add_parser("qe-audit", help="gender audit of a QE metric (paper 003): ratios, error rates, retention")
    qa.add_argument("pairs", help="CSV: instance_id, lang, source, hyp_f + hyp_m (or hyp_n + hyp_g); optional gold "
                                  "(F|M), context, precomputed score_f + score_m")
    qa.add_argument("--out", required=True)
    qa.add_argument("--metric", default="e5-cosine", help="a metric name (default e5-cosine); ignored when the "
                                                          "file has scores")
    qa.add_argument("--context", default="none", choices=["none", "mon", "bil"])
    qa.add_argument("--thresholds", help="retention thresholds, e.g. 0.5,0.8 (default: 0.8 on a 0-1 scale)")
    qa.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples for the Phi interval")
    qa.add_argument("--seed", type=int, default=0)
    qa.add_argument("--no-cache", action="store_true", help="do not keep scores in the app database")
    qr = asub.add_parser("qe-rerank", help="quality-aware reranking and gender accuracy vs greedy (paper 003 s. 5)")
    qr.add_argument("candidates", nargs="?", help="CSV: instance_id, lang, source, gold, hypothesis, [is_greedy], "
                                                  "[ref_f, ref_m], [context]")
    qr.add_argument("--pairs", help="PAIRS CSV with gold: the references (hyp_f/hyp_m), or the sources to sample for")
    qr.add_argument("--out", required=True)
    qr.add_argument("--metric", default="e5-cosine")
    qr.add_argument("--context", default="none", choices=["none", "mon", "bil"])
    qr.add_argument("--mt-model", help="a local transformers MT model to sample candidates from (with --pairs)")
    qr.add_argument("--mt-kind", default="seq2seq", choices=["seq2seq", "causal"])
    qr.add_argument("--mt-prompt", help="prompt with {text}, for a causal MT model")
    qr.add_argument("--mt-lang", help="target-language code of a multilingual seq2seq model")
    qr.add_argument("--n", type=int, default=50, help="samples per source (default 50, as the paper)")
    qr.add_argument("--epsilon", type=float, default=0.02)
    qr.add_argument("--seed", type=int, default=0)
    qr.add_argument("--include-greedy", action="store_true", help="let the greedy output compete in the reranking")
    qr.add_argument("--no-cache", action="store_true")
    dt = sub.add_parser("data", help="convert public data sets to the analyses' input files")
    dsub = dt.add_subparsers(dest="dataset", required=True)
    mg = dsub.add_parser("mt-geneval", help="MT-GenEval -> PAIRS.csv for the QE audit")
    mg.add_argument("--root", default=str(ROOT.parent / "shared" / "data" / "mt-geneval"),
                    help="the MT-GenEval checkout (its data/ folder inside)")
    mg.add_argument("--lang", required=True, help="pt, es, it, ...")
    mg.add_argument("--subset", default="contextual", choices=["contextual", "counterfactual"])
    mg.add_argument("--setting", default="ambiguous", choices=["ambiguous", "unambiguous"])
    mg.add_argument("--split", default="test", choices=["test", "dev"])
    mg.add_argument("--out", required=True)
    ga = dsub.add_parser("gate", help="GATE (two-variant files) -> PAIRS.csv of F/M instances (paper 003, B.1)")
    ga.add_argument("--root", required=True, help="the GATE repository folder, or one of its files")
    ga.add_argument("--lang", required=True, choices=["es", "fr", "it"])
    ga.add_argument("--split", default="test", choices=["test", "dev", "all"])
    ga.add_argument("--out", required=True)
    ge = dsub.add_parser("gente", help="GeNTE (GeNTE.tsv) -> PAIRS.csv of neutral/gendered instances (paper 003, B.2)")
    ge.add_argument("--root", required=True, help="the folder holding GeNTE.tsv, or the file")
    ge.add_argument("--subset", default="set-n", choices=["set-n", "set-g", "all"])
    ge.add_argument("--out", required=True)
    bk = sub.add_parser("backup", help="copy the live database (SQLite online backup), safe while the app runs")
    bk.add_argument("out", help="the copy's file path, or a folder for tradlab-backup.db")
    ex = sub.add_parser("export", help="export a study's data: one tidy table per entity, pseudonymous, with a "
                                       "data dictionary (README.md)")
    ex.add_argument("--study", required=True)
    ex.add_argument("--out", required=True, help="a new (or empty) folder")
    ex.add_argument("--format", default="csv", choices=["csv", "jsonl", "parquet", "hf-audio"],
                    help="hf-audio: a Hugging Face audiofolder (audio/ + metadata.jsonl + dataset card)")
    ex.add_argument("--include-external-ids", action="store_true",
                    help="add external and Prolific ids to participants (tokens are never exported)")
    ex.add_argument("--include-events", action="store_true", help="add the study's audit-log events")
    ex.add_argument("--no-audio", action="store_true", help="leave the recordings' audio files out")
    qs = sub.add_parser("questions", help="comprehension questions written by an LLM, as drafts to review")
    qsub = qs.add_subparsers(dest="action", required=True)
    qg = qsub.add_parser("generate", help="drafts for starters without questions (review them in the Admin tab)")
    qg.add_argument("--study", required=True)
    qg.add_argument("--n", type=int, help="questions per starter, 1-10 (default: the study's [questions] n, 10)")
    qg.add_argument("--starter", help="only this starter (new questions differ from its existing ones)")
    mt = sub.add_parser("metrics", help="compute an exchange metric for a whole study")
    msub = mt.add_subparsers(dest="metric", required=True)
    maq = msub.add_parser("auto-qa", help="LLM question answering: source vs translation, per exchange")
    maq.add_argument("--study", required=True)
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    if args.command in (None, "serve"):
        return cmd_serve(args, settings)
    if args.command == "import":
        return cmd_import(args, settings)
    if args.command == "participants":
        return cmd_participants_add(args, settings)
    if args.command == "links":
        return cmd_links(args, settings)
    if args.command == "repair":
        return cmd_repair(args, settings)
    if args.command == "analyze":
        return cmd_analyze(args, settings)
    if args.command == "translate":
        return cmd_translate(args, settings)
    if args.command == "speak":
        return cmd_speak(args, settings)
    if args.command == "data":
        return cmd_data(args, settings)
    if args.command == "backup":
        return cmd_backup(args, settings)
    if args.command == "export":
        return cmd_export(args, settings)
    if args.command == "questions":
        return cmd_questions(args, settings)
    if args.command == "metrics":
        return cmd_metrics(args, settings)
    parser.error(f"unknown command {args.command}")


if __name__ == "__main__":
    sys.exit(main())
