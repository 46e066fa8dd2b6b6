"""The app assembled: the pages of a Site with their upload hardening, the role pages mounted beside
"/", the options every page is launched with and the middleware stack around them."""

from pathlib import Path

from web.fast_pages import preload_hints, static_assets
from web.gradio_patches import no_app_until_queued, refuse_remote_files
from web.guard import guard
from web.middleware import compression, refuse_remote_files_middleware, role_redirect, security_headers
from web.pages import KEYBOARD_JS, page_theme, role_page, team_page
from web.site import Site, role_pages
from web.uploads import forget_strangers_uploads

ROOT = Path(__file__).resolve().parents[1]


def build_app(settings, database) -> Site:
    from services.admin import auth as admin

    auth = admin.AdminAuth(settings.admin_password, database, local_secret=settings.admin_secret)
    refuse_remote_files()
    with no_app_until_queued():
        site = Site(
            team_page(settings, database, auth),
            {role: role_page(database, settings, role, label) for role, label in role_pages().items()},
            auth,
        )
    for blocks in site.blocks:
        forget_strangers_uploads(blocks, database, auth)
    return site


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
        gr.mount_gradio_app(
            holder,
            page,
            f"/{role}",
            root_path=f"{root_path.rstrip('/')}/{role}" if root_path else None,
            **{**options, **page_assets(role, options)},
        )
        # gradio checks an input's file paths (only uploads to this server) once its Blocks "has
        # launched", which launch() marks and mount_gradio_app does not: without this a page's
        # events would take any path on the server (/etc/passwd, the database) as an upload
        page.has_launched = True
        mounts.append(holder.routes[-1])
    return mounts


def page_assets(role: str, options: dict) -> dict:
    """The options that load a role page's own page code (its tabs' Tab.scripts and Tab.styles):
    its stylesheets after the app's (options' css_paths), its scripts in the page's head; a role
    without any: none."""
    from services.common import protocols
    from tabs.static import page_head

    scripts, styles = protocols.page_assets(role)
    out: dict = {}
    if styles:
        out["css_paths"] = [*options.get("css_paths", []), *styles]
    if scripts:
        out["head"] = options.get("head", "") + page_head(scripts)
    return out


def page_options(settings) -> dict:
    """The options of launch() that every page gets ("/" through launch(), the role pages through
    mount_pages)."""
    return dict(
        css_paths=[ROOT / "assets" / "style.css"],
        js=KEYBOARD_JS,
        theme=page_theme(),
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
        max_file_size=int(settings.max_upload_mb * 1024 * 1024),
        i18n=status_words(),
    )


# Gradio's status tracker announces a finished event to screen readers (its aria-live region)
# as i18n("common.complete"), a key none of its own languages has: the raw key was read out.
STATUS_WORDS = {"en": "Done", "pt": "Concluído", "pt-BR": "Concluído"}


def status_words():
    import gradio as gr

    return gr.I18n(**{lang: {"common.complete": word} for lang, word in STATUS_WORDS.items()})


def middleware(site: Site, settings, database) -> list:
    """The served app's middleware stack, outermost first: SecurityHeaders, so that every answer
    carries them (Guard's refusals too); Guard; static_assets next, since a bundle file needs
    none of the others. (Gradio puts its CORS and Brotli middleware around all of these.)"""
    return (
        [security_headers(settings), guard(site, settings, database)]
        + ([static_assets()] if settings.fast_pages else [])
        + [role_redirect(database), refuse_remote_files_middleware(), compression()]
        + ([preload_hints(site)] if settings.fast_pages else [])
    )
