"""Uploads: only files uploaded to this server, kept briefly; a stranger's upload forgotten at
once, an unused one after UNUSED_UPLOAD_S; uploads per client bounded (UploadBudget)."""

from web.sessions import known_credential
from web.site import Site

# -- files: only uploads to this server, kept briefly ---------------------------------------------
# Files given as URLs are refused before Gradio fetches them (gradio_patches.refuse_remote_files).
# delete_cache: every 10 minutes, what gradio stored more than an hour ago (uploads, and its copies
# of served files and downloads) is deleted, and all of it when the server stops. A copy it serves
# again is made again when missing.
UPLOADS_EXPIRE = (600, 3600)
REMOTE_FILE = "Only files uploaded to this server are accepted."
MAX_FILES_PER_UPLOAD = 4  # a page sends one file per upload; gradio's own cap is 1,000
UNUSED_UPLOAD_S = 600  # an upload no event has used by then is deleted (gradio: about 70 min)


def is_remote_path(path) -> bool:
    return isinstance(path, str) and ("://" in path[:16] or path.startswith("//"))


UPLOAD_KINDS = ("Audio", "File", "UploadButton", "Image", "Video", "Gallery", "Model3D", "MultimodalTextbox")


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
            for path in v if isinstance(v, (list, tuple)) else [v]:
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


# -- uploads per client: the upload request carries no session hash ------------------------------
class UploadBudget:
    """Uploads per client address (services.admin.auth.throttle_key: behind a proxy, the address
    it appended): at most per_minute a minute, and at most held bytes of its uploads on the server
    (an upload counts from its first byte, as it arrives, until it leaves: when its event is done
    with it or after UNUSED_UPLOAD_S); all clients together at most total bytes (a direct client
    forging X-Forwarded-For gets a new key each time). An honest sender uploads one or two
    recordings an item. In memory."""

    def __init__(self, per_minute: int, held: int, total: int, clock=None):
        import time

        self.per_minute, self.held_cap, self.total_cap = per_minute, held, total
        self.clock = clock or time.monotonic
        self.recent: dict[str, list[float]] = {}  # client -> times of its uploads this minute
        self.files: dict[str, list[tuple]] = {}  # client -> (paths, bytes, when) of each upload
        # bytes of the uploads still arriving, per client: a chunked upload (no Content-Length)
        # had counted as 0 until it was stored, and any number arriving at once as nothing
        self.arriving: dict[str, int] = {}
        self.stored = 0  # everyone's bytes stored, as the last admit saw them

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

    def _too_much(self, held: int) -> str:
        mb = 1024 * 1024
        return (
            f"Your address already has {held / mb:.1f} MB of uploads on the server, and the limit is "
            f"{self.held_cap / mb:.0f} MB: they are removed within {UNUSED_UPLOAD_S // 60} minutes. "
            "Please try again then."
        )

    FULL = "The server holds too many uploads just now. Please try again in a few minutes."

    def admit(self, client: str, incoming: int = 0) -> str | None:
        """None (counted as one upload) or why the upload is refused; incoming: its declared
        length (0 when it came without one: it is counted as it arrives, arrive())."""
        now = self.clock()
        recent = [t for t in self.recent.get(client, []) if now - t < 60]
        if len(self.recent) > 10_000:  # forget the clients with nothing this minute
            self.recent = {k: v for k, v in self.recent.items() if v and now - v[-1] < 60}
        if len(recent) >= self.per_minute:
            self.recent[client] = recent
            return (
                f"Too many uploads from your address: at most {self.per_minute} a minute. "
                "Please wait a minute and try again."
            )
        held = self._held(client) + self.arriving.get(client, 0)
        if held + incoming > self.held_cap:
            return self._too_much(held)
        stored = sum(self._held(k) for k in list(self.files))
        if stored + sum(self.arriving.values()) + incoming > self.total_cap:
            return self.FULL
        self.recent[client] = recent + [now]
        self.stored = stored
        return None

    def arrive(self, client: str, size: int) -> str | None:
        """size more bytes of an admitted upload of client's arrived: None, or why it is cut off
        (its files stored and everyone's as the last admit saw them, and every upload arriving)."""
        self.arriving[client] = self.arriving.get(client, 0) + size
        mine = self._held(client) if client in self.files else 0
        if mine + self.arriving[client] > self.held_cap:
            return self._too_much(mine + self.arriving[client] - size)
        if self.stored + sum(self.arriving.values()) > self.total_cap:
            return self.FULL
        return None

    def leave(self, client: str, size: int) -> None:
        """An upload that arrive() counted size bytes of is over (stored, kept() or cut off)."""
        left = self.arriving.get(client, 0) - size
        if left > 0:
            self.arriving[client] = left
        else:
            self.arriving.pop(client, None)

    def keep(self, client: str, paths: list, size: int) -> None:
        """An upload the server stored: its files count against the client while they exist."""
        if paths:
            self.files.setdefault(client, []).append((tuple(str(p) for p in paths), size, self.clock()))


def upload_pages(site: Site) -> tuple:
    """The pages ("" for "/") with a file input a visitor can fill."""
    out = []
    for page, blocks in [("", site.team), *site.pages.items()]:
        if any(
            type(b).__name__ in UPLOAD_KINDS and getattr(b, "interactive", None) is not False
            for b in blocks.blocks.values()
        ):
            out.append(page)
    return tuple(out)


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
