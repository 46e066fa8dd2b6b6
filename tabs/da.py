"""Direct assessment (paper 001): one HIT item at a time, a 0-100 slider that must be moved.

Text mode shows reference and candidate as one image; audio mode shows the reference as an
image and plays the candidate (paper 001, Figure 2), and with the study's `lock_until_played`
unlocks the slider when the candidate has played to the end (the paper does not lock it: the
default). No going back: only the next open item is ever shown. After the last item: an
optional feedback box.

The item is one small form (tabs/item_form.py): a submit sends {"item_id", "answer": {"score":
0-100, or null when the slider was not moved}} and gets the next item back in the same value."""

from __future__ import annotations

import html
import logging

import gradio as gr

from services.da import campaign as da_campaign
from services.participation.items import AccessError, ready_participant
from tabs.common import PARTICIPANT_EVENT, Ctx, TabUI, file_url, plain_html
from tabs.item_form import Beside, form_tab
from tabs.static import script

# once the feedback is saved, a study's Prolific link is followed (the page waited for it)
FOLLOW_REDIRECT_JS = script("function/follow_redirect")
FEEDBACK_FAILED = "Your feedback could not be saved: please check it for unusual characters and send it again."


def picture(c: dict, alt: str) -> str:
    """The item's image; on a phone (a window under 640 px) its narrow copy, so the text keeps
    its size instead of being scaled down to a third."""
    narrow = (
        f'<source media="(max-width: 640px)" srcset="{html.escape(file_url(c["image_narrow"]), quote=True)}">'
        if c.get("image_narrow")
        else ""
    )
    return (
        f'<div id="da-image"><picture>{narrow}<img src="{html.escape(file_url(c["image"]), quote=True)}" '
        f'alt="{alt}"></picture></div>'
    )


def body_html(c: dict, typed: dict | None = None) -> str:
    """The item's form: the reference and candidate (one image; or the reference's image and
    the candidate's audio), the slider (in audio mode locked until the candidate has played when
    the study says so: content "lock") and Submit. typed, a refused answer's fields, is not
    written in: the page's draft brings a moved slider back."""
    if c.get("modality") == "audio":
        ref = picture(c, "The reference translation (grey)") if c.get("image") else ""
        note = (
            f'<p class="audio-note">{plain_html(c["audio_note"])}</p>' if c.get("lock") and c.get("audio_note") else ""
        )
        shown = (
            f'{ref}<div id="da-audio"><p class="audio-label">Candidate translation</p>'
            f'<audio controls preload="auto" src="{html.escape(file_url(c["audio"]), quote=True)}"></audio>'
            f"{note}</div>"
        )
        lock = " disabled data-unlock-on-ended" if c.get("lock") else ""
    else:
        shown = picture(c, "The reference (grey) above the candidate translation (black)")
        lock = ""
    return (
        f'<form class="da-item" autocomplete="off">'
        f'<p class="instruction">{plain_html(c.get("instruction", ""))}</p>'
        f'{shown}<div id="da-slider" class="form-slider"><label for="da-score">Score (0-100): move the slider'
        f'<output for="da-score" aria-live="off">–</output></label>'
        f'<input type="range" id="da-score" name="score" min="0" max="100" step="1" value="0" data-click-sets{lock}>'
        f'<div class="form-slider-ends"><span><b>0</b> {plain_html(c.get("scale_low", ""))}</span>'
        f"<span>{plain_html(c.get('scale_high', ''))} <b>100</b></span></div></div>"
        f'<button type="submit" class="submit-btn lg primary">Submit</button></form>'
    )


def build(ctx: Ctx) -> TabUI:
    """The HIT's item form (tabs/item_form.form_tab), and after its last item the feedback box."""

    def feedback_box() -> Beside:
        with gr.Group(visible=False) as box:
            # .holds-redirect: a Prolific redirect waits for it (web/pages.py REDIRECT_JS)
            feedback = gr.Textbox(
                label="Any comments on this task? (optional)",
                lines=4,
                max_length=5000,
                elem_id="da-feedback",
                elem_classes=["holds-redirect"],
            )
            send_feedback = gr.Button("Send feedback")
        feedback_msg = gr.HTML()
        send_feedback.click(
            on_feedback,
            [ctx.token, feedback],
            feedback_msg,
            api_name="da_feedback",
            api_visibility="undocumented",
            **PARTICIPANT_EVENT,
        ).then(None, js=FOLLOW_REDIRECT_JS)
        return Beside([box], lambda view: {box: gr.update(visible=view is not None and view.status == "complete")})

    def on_feedback(token, text):
        try:
            p = ready_participant(ctx.database, token)
            da_campaign.save_feedback(ctx.database, p["id"], text)
        except (da_campaign.DAError, AccessError) as e:  # our own refusals say what is wrong
            return plain_html(str(e))
        except Exception:  # anything else (a lone surrogate the database cannot encode): no raw text
            logging.getLogger(__name__).exception("DA feedback not saved")
            return plain_html(FEEDBACK_FAILED)
        return '<span class="feedback-saved">Thank you: your feedback is saved.</span>'

    # the timer asks again while the worker renders the HIT's audio or images
    return form_tab(
        ctx,
        "da",
        "Direct assessment",
        body_html,
        lambda fields: {"score": fields.get("score")},
        beside=feedback_box,
        poll_s=4,
    )
