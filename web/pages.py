"""The pages: the team's at "/" (landing page, Admin, Analysis) and each role's, with the
participant calls every page has and the page's theme and scripts."""

from tabs.static import script
from web.uploads import UPLOADS_EXPIRE

HELP_NO_LINK = (
    "### Welcome\nThis is a study platform. Participants: please open the personal link "
    "you were given (it ends in `?t=...`). Study designers: use the Admin tab."
)


# Enter submits the visible tab's form when focus is on a slider, a radio or the page itself,
# never from a text box (an answer being typed is not lost to a stray Enter); copy buttons copy.
KEYBOARD_JS = script("function/keyboard")

# A page that still offers something to fill in (the DA's optional feedback box, marked
# .holds-redirect) does not leave by itself: 3 s is too short to write feedback, and it would be
# lost; the page follows the link once it is sent (tabs/da.py), or the participant clicks it.
REDIRECT_JS = script("function/redirect")


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
            host = (
                admin.client_address(request.client.host, getattr(request, "headers", None))
                if request and request.client
                else None
            )
            if participant is not None:
                # a link that reached "/" without the redirect (a proxy that drops it): a plain link on
                problem = f"Your page: [continue here](./{participant['role']}/?t={participant['token']})"
                return {
                    token: "",
                    welcome: problem,
                    admin_tab_obj: gr.update(visible=False),
                    analysis_obj: gr.update(visible=False),
                }
            show_admin = not problem and auth.available(host)
            # the problem may echo URL parameters: shown as plain text, never as Markdown
            return {
                token: "",
                welcome: f"**{plain_markdown(problem)}**" if problem else HELP_NO_LINK,
                admin_tab_obj: gr.update(visible=show_admin),
                analysis_obj: gr.update(visible=show_admin),
                tabset: gr.update(selected="admin"),
            }

        # outside the queue, as the role pages' load: the admin link's page shows its tab without a turn
        demo.load(
            on_root_load,
            None,
            [token, welcome, admin_tab_obj, analysis_obj, tabset],
            api_visibility="private",
            queue=False,
        )
        participant_api(database, settings)
    return demo


def resolve_link(database, request, lang: str = "en") -> tuple[str, str, dict | None]:
    """(token, problem, participant) of a page's URL: a token from ?t=..., or a Prolific newcomer
    enrolled into an open self-enrolment slot (the URL's signature over study, role, group and
    gender is checked first). The problem is in the page's language `lang`."""
    from services.setup.enrolment import ParticipantError, enrol_from_link
    from services.study.texts import Voice, reword
    from storage import participants, studies

    q = dict(request.query_params) if request else {}
    tok, problem = q.get("t") or "", ""
    if not tok and q.get("PROLIFIC_PID"):
        try:
            from services.admin.auth import throttle_key

            client = throttle_key(request.client.host if request.client else None, getattr(request, "headers", None))
            tok = enrol_from_link(database, q, client=client)["token"]
        except ParticipantError as e:
            # a refusal's key (enrol_<reason>) in the page's words, the study's own (its contact) where
            # the URL names a real one
            study = studies.get_study(database, str(q.get("study") or "")[:200])
            problem = str(reword(e, Voice(lang, study)))
    participant = participants.by_token(database, tok) if tok else None
    if tok and participant is None:
        problem = Voice(lang)("invalid_link")
    return tok, problem, participant


def role_page(database, settings, role: str, title: str):
    """The page of one role, a Blocks of its own: the consent page, then that role's tabs (a
    sender's Record and Survey; everyone else's one tab), and the participant calls."""
    import gradio as gr

    from services.common import protocols
    from services.participation.welcome import page_welcome
    from services.study.texts import Voice, page_language
    from tabs import consent as consent_tab
    from tabs.common import PARTICIPANT_EVENT, Ctx, plain_html

    names = protocols.role(role).tabs
    lang = page_language(names[0])  # the receiver's page is in European Portuguese
    with gr.Blocks(title=title, delete_cache=UPLOADS_EXPIRE) as page:
        token = gr.Textbox(visible=False, elem_id="participant-token")
        welcome = gr.HTML()  # no Markdown renderer on a participant's page
        ctx = Ctx(database, settings, token, lang=lang)
        consent_ui = consent_tab.build(ctx)
        with gr.Tabs() as tabset:
            uis = [tab_builder(protocols.tab(name).build)(ctx) for name in names]

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
            if words:  # the role's task and its expected time, before consent and the first item
                out[welcome] = f'<div class="role-welcome" lang="{lang}"><p>{plain_html(words)}</p></div>'
            pending = consent_ui.show(participant) if participant["active"] else {}
            if pending:  # consent and the demographics form come before any tab
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
        for ui in uis:  # a finished queue with a Prolific URL sends the participant back there
            ui.outputs[0].change(None, ui.outputs[0], None, js=REDIRECT_JS)
        participant_api(database, settings)
    # the item forms' calls, which web/form_routes.py serves as JSON at /<role>/form/<tab>/...
    page.item_forms = {ui.name: ui.form for ui in uis if ui.form is not None}
    return page


def tab_builder(build):
    """A tab's builder as its protocol names it: a callable, or "module:name" (a module of tabs/
    or a plugin's), imported here: services never import tabs."""
    if callable(build):
        return build
    import importlib

    module, _, name = build.partition(":")
    return getattr(importlib.import_module(module), name)


def page_theme():
    """Gradio's default look with the system's fonts: a first page load fetches no web font (the
    default theme's Source Sans and IBM Plex Mono are about 140 KB, more than the page's
    scripts compressed), which matters to a participant on a phone connection."""
    import gradio as gr

    return gr.themes.Default(
        font=["system-ui", "-apple-system", "Segoe UI", "Roboto", "Helvetica Neue", "Arial", "sans-serif"],
        font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"],
    )
