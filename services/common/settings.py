"""One settings object, read from environment variables with laptop-friendly defaults.

Each variable is a field of Settings below, its variable, default and meaning in the field's
metadata; docs/reference.md's settings table is generated from them (python app.py docs settings) and
tests/test_docs.py checks the two agree. Nothing else in the app reads the environment: the server
and the CLI pass a Settings down; deep call sites (model and metric factories, link signing,
figure files) call current().

On a Hugging Face Space (SPACE_ID is set) some defaults change, an explicit variable still
winning: the server listens on 0.0.0.0, participant links use https://SPACE_HOST, and with
persistent storage (SPACE_DATA_ROOT, /data, exists) the database and the media folder live
there (/data/tradlab.db, /data/media) instead of the Space's ephemeral disk.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Mapping

# Where a Space mounts its persistent storage (a module constant so tests can point it elsewhere).
SPACE_DATA_ROOT = Path("/data")


def _s(env: str, text: str, help: str, **kw):
    """A setting: the dataclass field, its environment variable, default (as text) and meaning."""
    return field(metadata={"env": env, "default": text, "help": help}, **kw)


@dataclass(frozen=True)
class Settings:
    """Every environment variable the app reads, read here only (Settings.from_env, or current()
    for the deep call sites: model and metric factories, link signing, figure files)."""

    db_path: Path = _s("TRADLAB_DB", "data/tradlab.db", "SQLite database file (created and migrated on start)")
    media_dir: Path = _s("TRADLAB_MEDIA", "data/media", "folder for recordings and synthesised audio")
    journal_mode: str = _s(
        "TRADLAB_JOURNAL_MODE",
        "auto",
        "auto | wal | delete; auto picks the rollback journal on network mounts (a Space's /data)",
    )
    admin_password: str = _s(
        "TRADLAB_ADMIN_PASSWORD", "", "password of the admin and analysis tabs; empty serves them to localhost only"
    )
    public_url: str = _s(
        "TRADLAB_PUBLIC_URL",
        "http://127.0.0.1:7860",
        "base URL printed in participant links (unset: http://TRADLAB_HOST:TRADLAB_PORT)",
    )
    host: str = _s("TRADLAB_HOST", "127.0.0.1", "address the server listens on")
    port: int = _s("TRADLAB_PORT", "7860", "port the server listens on")
    demo_study: Path = _s("TRADLAB_DEMO_STUDY", "assets/demo_study", "study folder `make run` imports")
    worker: bool = _s(
        "TRADLAB_WORKER",
        "1",
        "1 runs the background job worker (QC, translation) in the app process; 0 leaves jobs queued",
    )
    device: str = _s("TRADLAB_DEVICE", "auto", "auto | cpu | cuda: where models run (auto: CUDA when torch sees a GPU)")
    model_memory_mb: str = _s(
        "TRADLAB_MODEL_MEMORY_MB",
        "",
        "memory budget of the model cache; empty: 90% of GPU memory on CUDA, half the RAM on CPU",
    )
    tts_backend: str = _s(
        "TRADLAB_TTS_BACKEND",
        "auto",
        "auto | google | piper | espeak; auto: Google when credentials are set, else Piper (en) and espeak-ng",
    )
    allow_downloads: bool = _s(
        "TRADLAB_ALLOW_DOWNLOADS",
        "0",
        "1 lets transformers backends fetch a missing model from the hub (a setup run on a GPU host); 0 uses only files on disk",
    )
    da_fonts: str = _s(
        "TRADLAB_DA_FONTS",
        "",
        "extra font files for DA text images, separated by ':' (e.g. a CJK font: Debian's fonts-noto-cjk)",
    )
    gemba_model: str = _s(
        "TRADLAB_GEMBA_MODEL",
        "",
        "the LLM judge of the GEMBA-DA metric: a model folder or id (transformers) or a served model name (remote)",
    )
    gemba_backend: str = _s(
        "TRADLAB_GEMBA_BACKEND", "", "transformers | remote; empty: remote when TRADLAB_GEMBA_BASE_URL is set"
    )
    gemba_base_url: str = _s("TRADLAB_GEMBA_BASE_URL", "", "OpenAI-compatible /v1 URL of the GEMBA-DA judge")
    google_credentials: str = _s(
        "TRADLAB_GOOGLE_CREDENTIALS",
        "",
        "path of a Google Cloud service-account JSON for Text-to-Speech (or set GOOGLE_APPLICATION_CREDENTIALS)",
    )
    max_upload_mb: float = _s(
        "TRADLAB_MAX_UPLOAD_MB",
        "50",
        "largest file the server accepts (recordings, study zips, PAIRS files); larger ones are refused before they are read",
        default=50.0,
    )
    remote_hosts: str = _s(
        "TRADLAB_REMOTE_HOSTS",
        "",
        "hosts (name or name:port, separated by commas) an imported study may send model requests to besides loopback; the hosts of TRADLAB_LLM_BASE_URL and TRADLAB_GEMBA_BASE_URL are always allowed",
        default="",
    )
    key_prefix: str = _s(
        "TRADLAB_KEY_PREFIX",
        "TRADLAB_KEY_",
        "a study's api_key_env must name a variable starting with this (so a study cannot send, say, the admin password as an API key)",
        default="TRADLAB_KEY_",
    )
    allow_remote_code: bool = _s(
        "TRADLAB_ALLOW_REMOTE_CODE",
        "0",
        "1 lets a study file set trust_remote_code = true (runs Python shipped with a model); presets may set it regardless",
        default=False,
    )
    rate_limit: float = _s(
        "TRADLAB_RATE_LIMIT",
        "20",
        "views and submits per second per participant link (burst: twice that; kept in memory); 0 turns the limit off",
        default=20.0,
    )
    fast_pages: bool = _s(
        "TRADLAB_FAST_PAGES",
        "1",
        "1 names every script a participant page loads in its HTML, so the browser fetches them at once (tabs/preload.py), and serves Gradio's hashed script files from memory, compressed once and cached by the browser for a year; 0 leaves both to Gradio",
        default=True,
    )
    form_routes: bool = _s(
        "TRADLAB_FORM_ROUTES",
        "1",
        "1 lets a participant page post its item form's answers to a plain JSON route beside Gradio's event (web/form_routes.py: the same checks, without Gradio's event processing); 0 sends them by the Gradio event only (a proxy that passes only Gradio's paths)",
        default=True,
    )
    frame_ancestors: str = _s(
        "TRADLAB_FRAME_ANCESTORS",
        "'self'",
        "who may show the app in a frame (CSP frame-ancestors): 'self', 'none', or origins; on a Space the default is `'self' https://huggingface.co` (its page embeds the app)",
        default="'self'",
    )
    admin_secret: str = _s(
        "TRADLAB_ADMIN_SECRET",
        "",
        "with no admin password: the secret of the admin link the server prints at start (/?admin=SECRET); empty: a new random one each start (set it only for scripts and tests, long and random)",
        default="",
    )
    max_body_kb: float = _s(
        "TRADLAB_MAX_BODY_KB",
        "1024",
        "largest request body other than an upload (KB); a larger one, or JSON nested deeper than 32 levels or with over 20,000 values, is refused before Gradio reads it",
        default=1024.0,
    )
    body_timeout: float = _s(
        "TRADLAB_BODY_TIMEOUT",
        "30",
        "seconds a request's body may take to arrive (an upload: the longest pause between its parts), and a response may wait for the client to read it; a slower one is cut off",
        default=30.0,
    )
    header_timeout: float = _s(
        "TRADLAB_HEADER_TIMEOUT",
        "10",
        "seconds a connection may take to send a request's headers; a slower one is closed",
        default=10.0,
    )
    uploads_per_minute: int = _s(
        "TRADLAB_UPLOADS_PER_MINUTE",
        "10",
        "uploads one client address may send a minute (a sender sends one or two a recording); more are refused",
        default=10,
    )
    upload_mb_per_client: float = _s(
        "TRADLAB_UPLOAD_MB_PER_CLIENT",
        "200",
        "MB of uploads one client address may have on the server at once (they leave when used, or after 10 minutes); all clients together: 20 times that",
        default=200.0,
    )
    max_connections: int = _s(
        "TRADLAB_MAX_CONNECTIONS",
        "1000",
        "open connections past which a request is answered 503 (behind a proxy: the proxy's connections)",
        default=1000,
    )
    connections_per_client: int = _s(
        "TRADLAB_CONNECTIONS_PER_CLIENT",
        "100",
        "connections and requests one client address may hold open at once (a participant's page holds 2-6: its heartbeat, its event stream, a few requests); more are answered 429. A class behind one address shares it",
        default=100,
    )
    stranger_requests_per_minute: int = _s(
        "TRADLAB_STRANGER_REQUESTS_PER_MINUTE",
        "120",
        "page loads and events one client address may send a minute without a valid link or admin session (at once: a quarter of that, at least 10); more are answered 429. A designer's login costs about 8, a Prolific newcomer's first page about 3; 0 turns the limit off",
        default=120,
    )
    refusal_pause_ms: int = _s(
        "TRADLAB_REFUSAL_PAUSE_MS",
        "500",
        "how long a request refused for its pace (an address past its share without a valid link, a link past TRADLAB_RATE_LIMIT) waits before its 429: a script sending flat out then costs the server a sleeping request, not a stream of refusals; 0 answers at once",
        default=500,
    )
    link_secret: str = _s(
        "TRADLAB_LINK_SECRET",
        "",
        "key that signs Prolific URLs; every process serving or printing links must share it (empty: a random key kept in the database)",
        default="",
    )
    llm_model: str = _s(
        "TRADLAB_LLM_MODEL",
        "",
        "the LLM writing comprehension questions: a model folder or id (transformers) or a served model name (remote); a study's [llm] section wins",
        default="",
    )
    llm_backend: str = _s(
        "TRADLAB_LLM_BACKEND", "", "transformers | remote; empty: remote when TRADLAB_LLM_BASE_URL is set", default=""
    )
    llm_base_url: str = _s(
        "TRADLAB_LLM_BASE_URL", "", "OpenAI-compatible /v1 URL of the question-writing LLM", default=""
    )
    llm_api_key_env: str = _s(
        "TRADLAB_LLM_API_KEY_ENV",
        "",
        "the variable holding the question-writing LLM's API key (its name starts with TRADLAB_KEY_PREFIX)",
        default="",
    )
    gemba_api_key_env: str = _s(
        "TRADLAB_GEMBA_API_KEY_ENV", "", "the variable holding the GEMBA-DA judge's API key", default=""
    )
    gemba_prompt: str = _s(
        "TRADLAB_GEMBA_PROMPT", "", "GEMBA-DA prompt variant (empty: the metric's default)", default=""
    )
    gemba_parser: str = _s(
        "TRADLAB_GEMBA_PARSER", "", "GEMBA-DA answer parser (empty: the metric's default)", default=""
    )
    gemba_scale: str = _s("TRADLAB_GEMBA_SCALE", "", "GEMBA-DA score scale (empty: the metric's default)", default="")
    gemba_max_new_tokens: str = _s(
        "TRADLAB_GEMBA_MAX_NEW_TOKENS",
        "",
        "GEMBA-DA answer length in tokens, a whole number (empty: the metric's default)",
        default="",
    )
    metricx_model: str = _s(
        "TRADLAB_METRICX_MODEL",
        "",
        "MetricX model folder (named checkpoints have their own TRADLAB_<NAME>_MODEL)",
        default="",
    )
    metricx_tokenizer: str = _s(
        "TRADLAB_METRICX_TOKENIZER",
        "",
        "MetricX's mT5 tokenizer folder (named checkpoints: TRADLAB_<NAME>_TOKENIZER)",
        default="",
    )
    metricx_max_input_length: str = _s(
        "TRADLAB_METRICX_MAX_INPUT_LENGTH", "", "MetricX input length in tokens (empty: the version's)", default=""
    )
    metricx_version: str = _s(
        "TRADLAB_METRICX_VERSION",
        "",
        "MetricX version of TRADLAB_METRICX_MODEL (empty: read from the checkpoint)",
        default="",
    )
    comet_checkpoint: str = _s(
        "TRADLAB_COMET_CHECKPOINT",
        "",
        "COMET checkpoint folder (named checkpoints: TRADLAB_<NAME>_CHECKPOINT)",
        default="",
    )
    cometkiwi_checkpoint: str = _s("TRADLAB_COMETKIWI_CHECKPOINT", "", "CometKiwi checkpoint folder", default="")
    xcomet_checkpoint: str = _s("TRADLAB_XCOMET_CHECKPOINT", "", "xCOMET checkpoint folder", default="")
    e5_threads: str = _s(
        "TRADLAB_E5_THREADS", "", "threads of the e5-cosine metric's engine (empty: the engine's default)", default=""
    )
    figure_png: str = _s(
        "TRADLAB_FIGURE_PNG",
        "",
        "0 | false | no | off: no PNG copies of analysis figures (default: made when kaleido is installed)",
        default="",
    )
    qe_context_mt: str = _s(
        "TRADLAB_QE_CONTEXT_MT", "", "MT model translating contexts for the QE audit's 'bil' variant", default=""
    )
    qe_context_mt_langs: str = _s(
        "TRADLAB_QE_CONTEXT_MT_LANGS", "", "language codes of that model, e.g. en=eng_Latn,pt=por_Latn", default=""
    )
    google_application_credentials: str = _s(
        "GOOGLE_APPLICATION_CREDENTIALS",
        "",
        "Google Cloud's own credentials variable (read like TRADLAB_GOOGLE_CREDENTIALS)",
        default="",
    )
    plugins: str = _s(
        "TRADLAB_PLUGINS",
        "",
        "protocols to register beside the built-in ones: comma-separated module paths or module:attribute (docs/development.md, Add a protocol)",
        default="",
    )
    space_id: str = _s(
        "SPACE_ID", "", "set by Hugging Face on a Space: changes the defaults above (see below)", default=""
    )
    space_host: str = _s("SPACE_HOST", "", "set by Hugging Face on a Space: its public host name", default="")
    zero_gpu: str = _s("SPACES_ZERO_GPU", "", "set by Hugging Face on a ZeroGPU Space", default="")
    # the environment the settings were read from: get() reads the variables a name is computed for
    # (a named checkpoint's TRADLAB_<NAME>_MODEL, the API-key variable a study names)
    environ: dict = field(default_factory=dict, repr=False, compare=False)

    def get(self, name: str) -> str:
        """A variable whose name is computed at run time (a named checkpoint's, a study's API key)."""
        return self.environ.get(name, "")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, data_root: str | Path | None = None) -> "Settings":
        env = os.environ if env is None else env
        space = space_defaults(env, data_root)
        get = {
            f.metadata["env"]: env.get(f.metadata["env"], space.get(f.metadata["env"], f.metadata["default"]))
            for f in fields(cls)
            if "env" in f.metadata
        }
        text = {f.name: get[f.metadata["env"]] for f in fields(cls) if "env" in f.metadata}
        db_path = Path(get["TRADLAB_DB"])
        return cls(
            **{
                **text,
                "db_path": db_path,
                "media_dir": Path(get["TRADLAB_MEDIA"]),
                "journal_mode": _journal_mode(get["TRADLAB_JOURNAL_MODE"], db_path, env),
                # unset: the Space's own https address, else the address the server itself listens on
                "public_url": (
                    env.get("TRADLAB_PUBLIC_URL")
                    or space.get("TRADLAB_PUBLIC_URL")
                    or f"http://{get['TRADLAB_HOST']}:{get['TRADLAB_PORT']}"
                ).rstrip("/"),
                "port": int(get["TRADLAB_PORT"]),
                "demo_study": Path(get["TRADLAB_DEMO_STUDY"]),
                "worker": get["TRADLAB_WORKER"].strip() not in ("0", "false", "no", ""),
                "allow_downloads": get["TRADLAB_ALLOW_DOWNLOADS"].strip() == "1",
                "max_upload_mb": float(get["TRADLAB_MAX_UPLOAD_MB"] or 50),
                "key_prefix": get["TRADLAB_KEY_PREFIX"].strip() or "TRADLAB_KEY_",
                "allow_remote_code": get["TRADLAB_ALLOW_REMOTE_CODE"].strip() == "1",
                "rate_limit": _float(get["TRADLAB_RATE_LIMIT"], 20.0),
                "max_body_kb": _float(get["TRADLAB_MAX_BODY_KB"], 1024.0) or 1024.0,
                "body_timeout": _float(get["TRADLAB_BODY_TIMEOUT"], 30.0) or 30.0,
                "header_timeout": _float(get["TRADLAB_HEADER_TIMEOUT"], 10.0) or 10.0,
                "max_connections": int(_float(get["TRADLAB_MAX_CONNECTIONS"], 1000.0)) or 1000,
                "connections_per_client": int(_float(get["TRADLAB_CONNECTIONS_PER_CLIENT"], 100.0)) or 100,
                "uploads_per_minute": int(_float(get["TRADLAB_UPLOADS_PER_MINUTE"], 10.0)) or 10,
                "stranger_requests_per_minute": max(0, int(_float(get["TRADLAB_STRANGER_REQUESTS_PER_MINUTE"], 120.0))),
                "refusal_pause_ms": min(10_000, max(0, int(_float(get["TRADLAB_REFUSAL_PAUSE_MS"], 500.0)))),
                "upload_mb_per_client": _float(get["TRADLAB_UPLOAD_MB_PER_CLIENT"], 200.0) or 200.0,
                "fast_pages": get["TRADLAB_FAST_PAGES"].strip() not in ("0", "false", "no"),
                "form_routes": get["TRADLAB_FORM_ROUTES"].strip() not in ("0", "false", "no"),
                "frame_ancestors": " ".join(get["TRADLAB_FRAME_ANCESTORS"].split()) or "'self'",
                "environ": dict(env),
            }
        )

    @property
    def on_space(self) -> bool:
        return bool(self.space_id)


def current() -> Settings:
    """The settings as the environment has them now: the one accessor for deep call sites (model
    and metric factories, link signing, figure files) where passing the settings down would change
    many signatures. Read afresh on each call (cheap), so a variable set later (a rotated key, a
    test's monkeypatch) is seen as before."""
    return Settings.from_env()


def _journal_mode(setting: str, db_path: Path, env) -> str:
    """auto on a Space with the database on its persistent storage (/data, a network mount) is the
    rollback journal; storage.db resolves the other autos by the file system's type."""
    if (setting or "auto").lower() == "auto" and env.get("SPACE_ID") and str(db_path.resolve()).startswith("/data"):
        return "delete"
    return setting


def _float(raw: str, default: float) -> float:
    try:
        return max(float(raw), 0.0) if str(raw).strip() else default
    except ValueError:
        return default


def on_space(env: Mapping[str, str] | None = None) -> bool:
    """Running on a Hugging Face Space (the platform sets SPACE_ID)."""
    env = os.environ if env is None else env
    return bool(env.get("SPACE_ID"))


def space_defaults(env: Mapping[str, str] | None = None, data_root: str | Path | None = None) -> dict[str, str]:
    """The defaults a Space changes (empty off a Space); explicit variables override them.

    data_root stands for the persistent-storage mount (default SPACE_DATA_ROOT, read at call time)."""
    env = os.environ if env is None else env
    if not on_space(env):
        return {}
    out = {
        "TRADLAB_HOST": "0.0.0.0",  # the Space's proxy reaches the app from outside
        # the Space's page on huggingface.co shows the app in an iframe
        "TRADLAB_FRAME_ANCESTORS": "'self' https://huggingface.co",
    }
    if env.get("SPACE_HOST"):
        out["TRADLAB_PUBLIC_URL"] = f"https://{env['SPACE_HOST']}"
    root = Path(SPACE_DATA_ROOT if data_root is None else data_root)
    if root.is_dir():
        out["TRADLAB_DB"] = str(root / "tradlab.db")
        out["TRADLAB_MEDIA"] = str(root / "media")
    return out


def space_storage_warning(env: Mapping[str, str] | None = None, data_root: str | Path | None = None) -> str | None:
    """A warning when a Space keeps the study data on its ephemeral disk (no persistent storage)."""
    env = os.environ if env is None else env
    if not on_space(env) or "TRADLAB_DB" in space_defaults(env, data_root) or env.get("TRADLAB_DB"):
        return None
    root = SPACE_DATA_ROOT if data_root is None else data_root
    return (
        f"WARNING: this Space has no persistent storage ({root} does not exist): the database and "
        f"recordings are on the Space's ephemeral disk and are lost when it restarts or is rebuilt. "
        f"Enable persistent storage in the Space's settings before running a study."
    )


# (variable, default, meaning) of every setting, in the dataclass's order
SETTINGS = [
    (f.metadata["env"], f.metadata["default"], f.metadata["help"]) for f in fields(Settings) if "env" in f.metadata
]


def settings_table_markdown() -> str:
    """docs/reference.md's settings table (cli.py docs prints it; tests/test_docs.py compares)."""
    rows = ["| variable | setting | default | meaning |", "| --- | --- | --- | --- |"]
    rows += [
        f"| `{f.metadata['env']}` | `{f.name}` | `{f.metadata['default']}` | {f.metadata['help'].replace('|', chr(92) + '|')} |"
        for f in fields(Settings)
        if "env" in f.metadata
    ]
    return "\n".join(rows)
