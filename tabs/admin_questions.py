"""The admin tab's "Comprehension questions" section: review LLM-written drafts per starter,
generate, and round-trip them as CSV. Layout and wiring only (services/questions/review.py,
services/questions/gen.py); every handler checks the admin session."""

from __future__ import annotations

import gradio as gr

from services.models.backends import BackendUnavailable
from services.models.cache import MODEL_QUEUE
from services.models.zerogpu import gpu
from services.questions import gen as question_gen
from services.questions import review as question_review
from services.questions.review import ReviewError
from tabs.admin_common import admin_only, blank_number, download, pick_row
from tabs.admin_common import host as _host
from tabs.common import shown_table

# LLM calls made from an event get a GPU on ZeroGPU (the identity elsewhere: services/models/zerogpu.py)
_generate = gpu(question_gen.generate)
_regenerate = gpu(question_gen.regenerate)


NO_STUDY = "No study shown yet: pick one above."


def build(ctx, auth, session, study):
    db = ctx.database
    with gr.Accordion("Comprehension questions", open=False):
        gr.Markdown(
            "Drafts written by an LLM wait here: only accepted questions reach receivers (at most 10 per "
            "starter, numbered in this order). Questions receivers have seen can no longer change. "
            "CSV columns: `draft_id, starter_id, status, origin, en, pt, answer_en` (import: an empty "
            "draft_id adds a draft; status draft, accepted or rejected; the whole file is checked first)."
        )
        status = gr.Markdown(elem_id="questions-status")
        summary = gr.Dataframe(
            label="Starters", interactive=False, elem_id="question-starters", value=shown_table(None, NO_STUDY)
        )
        with gr.Row():
            # custom values allowed: API callers name a starter before the list is filled (the
            # section checks it against the study anyway)
            starter = gr.Dropdown(label="Starter", choices=[], allow_custom_value=True, scale=3)
            page = blank_number(
                label="Starters page", value=1, blank=1, zero_is_blank=True, precision=0, minimum=1, scale=1
            )
            show = gr.Button("Show", scale=1)
        starter_text = gr.HTML()
        drafts = gr.Dataframe(
            label="Questions of this starter (accepted, drafts, rejected)",
            interactive=False,
            wrap=True,
            elem_id="question-drafts",
            value=shown_table(None, NO_STUDY),
            # id, status, origin, en, pt, answer_en, model: the texts get the room
            column_widths=["6%", "10%", "10%", "26%", "26%", "12%", "10%"],
        )
        with gr.Row():
            draft_id = blank_number(label="Draft id (click its row)", zero_is_blank=True, precision=0, scale=1)
            en = gr.Textbox(label="English question", scale=3)
            pt = gr.Textbox(label="Portuguese question", scale=3)
            answer = gr.Textbox(label="Reference answer (from the starter)", scale=2)
        with gr.Row():
            save = gr.Button("Save edit")
            accept = gr.Button("Accept", variant="primary")
            unaccept = gr.Button("Back to draft")
            reject = gr.Button("Reject", variant="stop")
            regenerate = gr.Button("Regenerate this one")
        with gr.Row():
            # empty: the study's [questions] n; the range is checked by the service (its message says so)
            n = blank_number(
                label="Questions per starter (1-10; empty: the study's n)", zero_is_blank=True, precision=0
            )
            gen_missing = gr.Button("Generate for starters without questions")
            gen_one = gr.Button("Generate more for this starter")
        with gr.Row():
            export_go = gr.Button("Export CSV")
            export_file = gr.File(label="Questions CSV", interactive=False)
            import_file = gr.File(label="CSV to import", file_types=[".csv"], type="filepath")
            import_go = gr.Button("Import CSV")
        msg = gr.Markdown(elem_id="questions-msg")

    def view(study_id, starter_id, page_no, note=""):
        """Every output of the section, for this study and starter."""
        cfg = question_review.study_config(db, study_id) if study_id else None
        if cfg is None:
            return {status: "", msg: note or "Pick a study first."}
        choices = question_review.starter_choices(db, study_id)
        ids = [c[1] for c in choices]
        starter_id = starter_id if starter_id in ids else (ids[0] if ids else None)
        one = question_review.starter_view(db, study_id, starter_id)
        pages = question_review.page_count(db, study_id)
        page_no = min(max(int(page_no or 1), 1), pages)
        return {
            # the pager on its own line: after the LLM's notice it read as part of it
            status: question_review.llm_status(cfg) + f"\n\nStarters page {page_no} of {pages}.",
            summary: shown_table(question_review.starter_table(db, study_id, page_no), "No starters in this study."),
            starter: gr.update(choices=choices, value=starter_id),
            starter_text: one["html"],
            drafts: shown_table(one["drafts"], "No questions for this starter yet: generate or import some."),
            msg: note,
        }

    outs = [status, summary, starter, starter_text, drafts, msg]

    def guarded(fn):
        """fn(study, starter, *more inputs, actor=...) behind the admin session; a refused or failed
        action says why in the message. (gr.Request first: Gradio injects it only by position.)"""

        @admin_only(auth, msg)
        def handler(request: gr.Request, sess, study_id, starter_id, page_no, *args):
            try:
                note = fn(study_id, starter_id, *args, actor=f"admin@{_host(request)}")
            except (ReviewError, ValueError, BackendUnavailable) as e:
                return view(study_id, starter_id, page_no, f"**Not done:** {e}")
            except RuntimeError as e:  # a model server's error, shown as it said it
                return view(study_id, starter_id, page_no, f"**The LLM failed:** {e}")
            return view(study_id, starter_id, page_no, note)

        return handler

    def refresh(study_id, starter_id, actor):
        return ""

    def do_edit(study_id, starter_id, did, en_, pt_, answer_, actor):
        d = question_review.edit(db, did, en_, pt_, answer_, actor)
        return f"Draft {d['id']} saved."

    def decide(action):
        def run(study_id, starter_id, did, actor):
            d = getattr(question_review, action)(db, did, actor)
            return f"Draft {d['id']} is {d['status']}."

        return run

    def do_regenerate(study_id, starter_id, did, actor):
        rep = _regenerate(db, did, actor=actor)
        return f"Draft {did} rewritten: it is a draft again." if rep.stored else f"Nothing new: {rep.problem}"

    def do_generate(study_id, starter_id, n_, actor, only_this=False):
        rep = _generate(
            db, study_id, n=int(n_) if n_ else None, starter_id=starter_id if only_this else None, actor=actor
        )
        lines = "\n".join(f"- {s.summary()}" for s in rep.starters)
        return rep.summary() + ("\n" + lines if lines else "")

    def do_import(study_id, starter_id, path, actor):
        if not path:
            raise ReviewError("Choose a CSV file first.")
        return question_review.import_csv(db, study_id, path, actor).summary()

    base = [session, study, starter, page]
    show.click(guarded(refresh), base, outs, api_name="admin_questions_view", api_visibility="undocumented")
    study.change(guarded(refresh), base, outs, api_visibility="private")
    save.click(
        guarded(do_edit),
        base + [draft_id, en, pt, answer],
        outs,
        api_name="admin_questions_edit",
        api_visibility="undocumented",
    )
    for button, action in ((accept, "accept"), (reject, "reject"), (unaccept, "unaccept")):
        button.click(
            guarded(decide(action)),
            base + [draft_id],
            outs,
            api_name=f"admin_questions_{action}",
            api_visibility="undocumented",
        )
    # LLM work shares the model queue with every other event that runs a model
    regenerate.click(
        guarded(do_regenerate),
        base + [draft_id],
        outs,
        concurrency_id=MODEL_QUEUE,
        concurrency_limit=1,
        api_name="admin_questions_regenerate",
        api_visibility="undocumented",
    )
    gen_missing.click(
        guarded(do_generate),
        base + [n],
        outs,
        concurrency_id=MODEL_QUEUE,
        concurrency_limit=1,
        api_name="admin_questions_generate",
        api_visibility="undocumented",
    )
    gen_one.click(
        guarded(lambda *a, actor: do_generate(*a, actor=actor, only_this=True)),
        base + [n],
        outs,
        concurrency_id=MODEL_QUEUE,
        concurrency_limit=1,
        api_name="admin_questions_generate_starter",
        api_visibility="undocumented",
    )
    import_go.click(
        guarded(do_import), base + [import_file], outs, api_name="admin_questions_import", api_visibility="undocumented"
    )

    def make_export(study_id):
        path = question_review.export_csv(db, study_id)
        return path, f"`{path.name}`: every draft of the study, accepted ones included."

    do_export = download(auth, export_file, msg, make_export, (ReviewError,))
    export_go.click(
        do_export,
        [session, study],
        [export_file, msg],
        api_name="admin_questions_export",
        api_visibility="undocumented",
    )

    @admin_only(auth, refused=lambda message: {en: gr.update(), pt: gr.update(), answer: gr.update()})
    def fill_form(sess, study_id, did, request: gr.Request):
        """Picking a draft id fills the edit boxes with its text."""
        try:
            d = question_review.draft_or_error(db, did)
        except (PermissionError, ReviewError):
            return {en: gr.update(), pt: gr.update(), answer: gr.update()}
        if d["study_id"] != study_id:
            return {en: gr.update(), pt: gr.update(), answer: gr.update()}
        return {en: d["en"], pt: d["pt"], answer: d["answer_en"] or ""}

    pick_row(drafts, draft_id)  # the change below then fills the edit boxes
    pick_row(summary, starter).then(guarded(refresh), base, outs, api_visibility="private")
    draft_id.change(fill_form, [session, study, draft_id], [en, pt, answer], api_visibility="private")
