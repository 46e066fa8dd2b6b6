"""The plain ASGI middlewares around every page: compression, frame protection and no referrer
(SecurityHeaders), a participant's link sent on to its role's page (RoleRedirect), remote files
refused (RefuseRemoteFiles); each with its Starlette Middleware factory. Guard is web/guard.py;
SameOriginCORS takes the place of Gradio's CORS middleware (web.gradio_patches.same_origin_cors)."""

from web.site import role_pages
from web.uploads import is_remote_path


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
    trick the designer or a participant into clicks (clickjacking). And Referrer-Policy:
    no-referrer: a page's address carries its key (a participant's ?t=TOKEN, the admin link's
    ?admin=SECRET), which a browser would otherwise send on to every other site it loads from
    or links to."""

    def __init__(self, app, frame_ancestors: str = "'self'"):
        self.app = app
        value = frame_sources(frame_ancestors)
        self.headers = [
            (b"content-security-policy", f"frame-ancestors {value}".encode("latin-1")),
            (b"referrer-policy", b"no-referrer"),
        ]
        xfo = {"'self'": b"SAMEORIGIN", "'none'": b"DENY"}.get(value)
        if xfo:
            self.headers.append((b"x-frame-options", xfo))

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message = {
                    **message,
                    "headers": list(message.get("headers", [])) + [(k, v) for k, v in self.headers if k not in names],
                }
            await send(message)

        return await self.app(scope, receive, send_with_headers)


def frame_sources(frame_ancestors: str) -> str:
    """TRADLAB_FRAME_ANCESTORS as CSP's frame-ancestors takes it: sources separated by spaces."""
    return " ".join(frame_ancestors.replace(";", " ").replace(",", " ").split()) or "'self'"


def trusted_origins(settings) -> tuple[str, ...]:
    """The origins besides a request's own that may read the app's answers in a browser: the
    public address (TRADLAB_PUBLIC_URL, a Space's) and the sites TRADLAB_FRAME_ANCESTORS lets
    frame it (a Space: https://huggingface.co); a wildcard source is not an origin."""
    from urllib.parse import urlsplit

    sources = frame_sources(getattr(settings, "frame_ancestors", "'self'")).split()
    out = []
    for source in [getattr(settings, "public_url", ""), *sources]:
        url = urlsplit(source)
        if url.scheme in ("http", "https") and url.netloc and "*" not in url.netloc:
            out.append(f"{url.scheme}://{url.netloc}".lower())
    return tuple(dict.fromkeys(out))


class SameOriginCORS:
    """Gradio's CORS middleware (route_utils.CustomCORSMiddleware) answered any Origin with
    Access-Control-Allow-Origin and credentials allowed whenever the Host was not localhost: any
    web site a participant or the designer visited could call the app's events with their
    browser's cookies and read the answers. This one allows a request's own origin (its Origin
    names the Host it was sent to) and `origins` (trusted_origins), and no other: a foreign
    Origin gets no CORS header (its preflight a 403), so the browser keeps the answer from its
    page. A request without an Origin (gradio_client, curl, a same-origin GET) passes as before."""

    METHODS = b"GET, HEAD, POST, OPTIONS"

    def __init__(self, app, origins: tuple = (), **gradio_options):
        self.app, self.origins = app, {o.lower().rstrip("/") for o in origins}

    def allowed(self, origin: str, host: str) -> bool:
        origin = origin.strip().lower().rstrip("/")
        scheme, _, netloc = origin.partition("://")
        return origin in self.origins or (scheme in ("http", "https") and bool(host) and netloc == host.strip().lower())

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers", []))
        origin = headers.get(b"origin")
        if origin is None:
            return await self.app(scope, receive, send)
        value = origin.decode("latin-1")
        ok = self.allowed(value, headers.get(b"host", b"").decode("latin-1"))
        allow = [(b"access-control-allow-origin", origin), (b"access-control-allow-credentials", b"true")] if ok else []
        if scope["method"] == "OPTIONS" and b"access-control-request-method" in headers:
            asked = headers.get(b"access-control-request-headers")
            extra = [(b"access-control-allow-methods", self.METHODS), (b"access-control-max-age", b"600")]
            extra += [(b"access-control-allow-headers", asked)] if asked else []
            body = b"OK" if ok else b"Cross-origin requests are not allowed."
            await send(
                {
                    "type": "http.response.start",
                    "status": 200 if ok else 403,
                    "headers": (allow + extra if ok else [])
                    + [
                        (b"vary", b"Origin"),
                        (b"content-type", b"text/plain; charset=utf-8"),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            return await send({"type": "http.response.body", "body": body})

        async def send_with_cors(message):
            if message["type"] == "http.response.start":
                given = list(message.get("headers", []))
                if not any(
                    k.lower() == b"access-control-allow-origin" for k, _ in given
                ):  # else a mounted page's layer did
                    # the answer depends on the Origin: a cache must not give one origin's to another
                    vary = [v for k, v in given if k.lower() == b"vary"]
                    if not any(b"origin" in v.lower() for v in vary):
                        given = [(k, v) for k, v in given if k.lower() != b"vary"]
                        given.append((b"vary", b", ".join(vary + [b"Origin"])))
                    message = {**message, "headers": given + allow}
            await send(message)

        return await self.app(scope, receive, send_with_cors)


def app_path(scope) -> str:
    """A request's path within the app: without the server's --root-path prefix."""
    path, prefix = scope["path"], scope.get("root_path", "").rstrip("/")
    return path[len(prefix) :] if prefix and path.startswith(prefix + "/") else path


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

        pages = role_pages()
        here = path.rstrip("/").rsplit("/", 1)[-1]
        if here and (here not in pages or path.rstrip("/") != "/" + here):
            return None
        q = parse_qs(query)
        role = None
        if q.get("t"):
            p = participants.by_token(self.database, q["t"][0])
            role = p["role"] if p else None
        elif q.get("PROLIFIC_PID") and q.get("role"):
            role = q["role"][0]
        slash = path.endswith("/") and bool(here)
        if role not in pages:
            role = here or None
        if role is None or (role == here and slash):
            return None
        return ("../" if slash else "") + f"{role}/" + (f"?{query}" if query else "")

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] in ("GET", "HEAD"):
            location = self.target(app_path(scope), scope.get("query_string", b"").decode("latin-1"))
            if location:
                await send(
                    {
                        "type": "http.response.start",
                        "status": 302,
                        "headers": [
                            (b"location", location.encode("latin-1")),
                            (b"content-length", b"0"),
                            (b"cache-control", b"no-store"),
                        ],
                    }
                )
                return await send({"type": "http.response.body", "body": b""})
        return await self.app(scope, receive, send)


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
            if "/proxy=" in path or (at >= 0 and is_remote_path(path[at + 6 :])):
                from starlette.responses import PlainTextResponse

                return await PlainTextResponse("Only this server's own files are served.", 403)(scope, receive, send)
        return await self.app(scope, receive, send)


def refuse_remote_files_middleware():
    from starlette.middleware import Middleware

    return Middleware(RefuseRemoteFiles)


def role_redirect(database):
    from starlette.middleware import Middleware

    return Middleware(RoleRedirect, database=database)


def security_headers(settings):
    from starlette.middleware import Middleware

    return Middleware(SecurityHeaders, frame_ancestors=getattr(settings, "frame_ancestors", "'self'"))
