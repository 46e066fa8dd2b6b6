"""One settings object, read from environment variables with laptop-friendly defaults.

The README's settings table is generated from SETTINGS below, so the two never disagree.

On a Hugging Face Space (SPACE_ID is set) some defaults change, an explicit variable still
winning: the server listens on 0.0.0.0, participant links use https://SPACE_HOST, and with
persistent storage (SPACE_DATA_ROOT, /data, exists) the database and the media folder live
there (/data/tradlab.db, /data/media) instead of the Space's ephemeral disk.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path

# Where a Space mounts its persistent storage (a module constant so tests can point it elsewhere).
SPACE_DATA_ROOT = Path("/data")

# name, default, meaning
SETTINGS = [
    ("TRADLAB_DB", "data/tradlab.db", "SQLite database file (created and migrated on start)"),
    ("TRADLAB_MEDIA", "data/media", "folder for recordings and synthesised audio"),
    ("TRADLAB_JOURNAL_MODE", "auto", "auto | wal | delete; auto picks the rollback journal on network mounts (a Space's /data)"),
    ("TRADLAB_ADMIN_PASSWORD", "", "password of the admin and analysis tabs; empty serves them to localhost only"),
    ("TRADLAB_PUBLIC_URL", "http://127.0.0.1:7860", "base URL printed in participant links (unset: http://TRADLAB_HOST:TRADLAB_PORT)"),
    ("TRADLAB_HOST", "127.0.0.1", "address the server listens on"),
    ("TRADLAB_PORT", "7860", "port the server listens on"),
    ("TRADLAB_DEMO_STUDY", "assets/demo_study", "study folder `make run` imports"),
    ("TRADLAB_WORKER", "1", "1 runs the background job worker (QC, translation) in the app process; 0 leaves jobs queued"),
    ("TRADLAB_DEVICE", "auto", "auto | cpu | cuda: where models run (auto: CUDA when torch sees a GPU)"),
    ("TRADLAB_MODEL_MEMORY_MB", "", "memory budget of the model cache; empty: 90% of GPU memory on CUDA, half the RAM on CPU"),
    ("TRADLAB_TTS_BACKEND", "auto", "auto | google | piper | espeak; auto: Google when credentials are set, else Piper (en) and espeak-ng"),
    ("TRADLAB_ALLOW_DOWNLOADS", "0", "1 lets transformers backends fetch a missing model from the hub (a setup run on a GPU host); 0 uses only files on disk"),
    ("TRADLAB_DA_FONTS", "", "extra font files for DA text images, separated by ':' (e.g. a CJK font: Debian's fonts-noto-cjk)"),
    ("TRADLAB_GEMBA_MODEL", "", "the LLM judge of the GEMBA-DA metric: a model folder or id (transformers) or a served model name (remote)"),
    ("TRADLAB_GEMBA_BACKEND", "", "transformers | remote; empty: remote when TRADLAB_GEMBA_BASE_URL is set"),
    ("TRADLAB_GEMBA_BASE_URL", "", "OpenAI-compatible /v1 URL of the GEMBA-DA judge"),
    ("TRADLAB_MAX_UPLOAD_MB", "50", "largest file the server accepts (recordings, study zips, PAIRS files); larger ones are refused before they are read"),
    ("TRADLAB_GOOGLE_CREDENTIALS", "", "path of a Google Cloud service-account JSON for Text-to-Speech (or set GOOGLE_APPLICATION_CREDENTIALS)"),
    ("TRADLAB_REMOTE_HOSTS", "", "hosts (name or name:port, separated by commas) an imported study may send model requests to besides loopback; the hosts of TRADLAB_LLM_BASE_URL and TRADLAB_GEMBA_BASE_URL are always allowed"),
    ("TRADLAB_KEY_PREFIX", "TRADLAB_KEY_", "a study's api_key_env must name a variable starting with this (so a study cannot send, say, the admin password as an API key)"),
    ("TRADLAB_ALLOW_REMOTE_CODE", "0", "1 lets a study file set trust_remote_code = true (runs Python shipped with a model); presets may set it regardless"),
    ("TRADLAB_RATE_LIMIT", "20", "views and submits per second per participant link (burst: twice that; kept in memory); 0 turns the limit off"),
    ("TRADLAB_FRAME_ANCESTORS", "'self'", "who may show the app in a frame (CSP frame-ancestors): 'self', 'none', or origins; on a Space the default is `'self' https://huggingface.co` (its page embeds the app)"),
]


@dataclass(frozen=True)
class Settings:
    db_path: Path
    media_dir: Path
    journal_mode: str
    admin_password: str
    public_url: str
    host: str
    port: int
    demo_study: Path
    worker: bool
    device: str
    model_memory_mb: str
    tts_backend: str
    allow_downloads: bool
    da_fonts: str
    gemba_model: str
    gemba_backend: str
    gemba_base_url: str
    google_credentials: str
    max_upload_mb: float = 50.0
    remote_hosts: str = ""
    key_prefix: str = "TRADLAB_KEY_"
    allow_remote_code: bool = False
    rate_limit: float = 20.0
    frame_ancestors: str = "'self'"

    @classmethod
    def from_env(cls, env: dict | None = None, data_root: str | Path | None = None) -> "Settings":
        env = os.environ if env is None else env
        space = space_defaults(env, data_root)
        get = {name: env.get(name, space.get(name, default)) for name, default, _ in SETTINGS}
        return cls(
            db_path=Path(get["TRADLAB_DB"]),
            media_dir=Path(get["TRADLAB_MEDIA"]),
            journal_mode=get["TRADLAB_JOURNAL_MODE"],
            admin_password=get["TRADLAB_ADMIN_PASSWORD"],
            # unset: the Space's own https address, else the address the server itself listens on
            public_url=(env.get("TRADLAB_PUBLIC_URL") or space.get("TRADLAB_PUBLIC_URL") or
                        f"http://{get['TRADLAB_HOST']}:{get['TRADLAB_PORT']}").rstrip("/"),
            host=get["TRADLAB_HOST"],
            port=int(get["TRADLAB_PORT"]),
            demo_study=Path(get["TRADLAB_DEMO_STUDY"]),
            worker=get["TRADLAB_WORKER"].strip() not in ("0", "false", "no", ""),
            device=get["TRADLAB_DEVICE"],
            model_memory_mb=get["TRADLAB_MODEL_MEMORY_MB"],
            tts_backend=get["TRADLAB_TTS_BACKEND"],
            allow_downloads=get["TRADLAB_ALLOW_DOWNLOADS"].strip() == "1",
            da_fonts=get["TRADLAB_DA_FONTS"],
            gemba_model=get["TRADLAB_GEMBA_MODEL"],
            gemba_backend=get["TRADLAB_GEMBA_BACKEND"],
            gemba_base_url=get["TRADLAB_GEMBA_BASE_URL"],
            google_credentials=get["TRADLAB_GOOGLE_CREDENTIALS"],
            max_upload_mb=float(get["TRADLAB_MAX_UPLOAD_MB"] or 50),
            remote_hosts=get["TRADLAB_REMOTE_HOSTS"],
            key_prefix=get["TRADLAB_KEY_PREFIX"].strip() or "TRADLAB_KEY_",
            allow_remote_code=get["TRADLAB_ALLOW_REMOTE_CODE"].strip() == "1",
            rate_limit=_float(get["TRADLAB_RATE_LIMIT"], 20.0),
            frame_ancestors=" ".join(get["TRADLAB_FRAME_ANCESTORS"].split()) or "'self'",
        )


def _float(raw: str, default: float) -> float:
    try:
        return max(float(raw), 0.0) if str(raw).strip() else default
    except ValueError:
        return default


def on_space(env: dict | None = None) -> bool:
    """Running on a Hugging Face Space (the platform sets SPACE_ID)."""
    env = os.environ if env is None else env
    return bool(env.get("SPACE_ID"))


def space_defaults(env: dict | None = None, data_root: str | Path | None = None) -> dict[str, str]:
    """The defaults a Space changes (empty off a Space); explicit variables override them.

    data_root stands for the persistent-storage mount (default SPACE_DATA_ROOT, read at call time)."""
    env = os.environ if env is None else env
    if not on_space(env):
        return {}
    out = {"TRADLAB_HOST": "0.0.0.0",          # the Space's proxy reaches the app from outside
           # the Space's page on huggingface.co shows the app in an iframe
           "TRADLAB_FRAME_ANCESTORS": "'self' https://huggingface.co"}
    if env.get("SPACE_HOST"):
        out["TRADLAB_PUBLIC_URL"] = f"https://{env['SPACE_HOST']}"
    root = Path(SPACE_DATA_ROOT if data_root is None else data_root)
    if root.is_dir():
        out["TRADLAB_DB"] = str(root / "tradlab.db")
        out["TRADLAB_MEDIA"] = str(root / "media")
    return out


def space_storage_warning(env: dict | None = None, data_root: str | Path | None = None) -> str | None:
    """A warning when a Space keeps the study data on its ephemeral disk (no persistent storage)."""
    env = os.environ if env is None else env
    if not on_space(env) or "TRADLAB_DB" in space_defaults(env, data_root) or env.get("TRADLAB_DB"):
        return None
    root = SPACE_DATA_ROOT if data_root is None else data_root
    return (f"WARNING: this Space has no persistent storage ({root} does not exist): the database and "
            f"recordings are on the Space's ephemeral disk and are lost when it restarts or is rebuilt. "
            f"Enable persistent storage in the Space's settings before running a study.")


def settings_table_markdown() -> str:
    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    rows += [f"| `{n}` | `{d}` | {m} |" for n, d, m in SETTINGS]
    return "\n".join(rows)


assert len(SETTINGS) == len(fields(Settings))
