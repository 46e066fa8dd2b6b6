"""The item forms' submit and view as plain JSON routes beside Gradio's events.

POST /<role>/form/<tab>/submit {"token": ..., "value": {"item_id": ..., "answer": {...}}} and
POST /<role>/form/<tab>/view {"token": ...} answer {"value": <the form's value>}: what the tab's
Gradio event (/<tab>_submit) puts in the form, from the same functions (tabs/item_form.FormRoutes:
the same services, checks, refusals and tokens), without Gradio's event processing (its routing,
session state, pre- and postprocessing): at 50 participants at once 3.9 ms of server CPU a call
against 5.7 through the events, and 133 submits a second against 86 (benchmarks/README.md, issue
34's section). So the page's script (tabs/item_form.py FORM_JS) posts here and falls back to the
Gradio event on anything but an answer. The actions run on the event loop in turns
(web/action_line.py); a recording's submit always on a worker thread (its decoding, bounded as it
is, takes milliseconds to a second, which on the loop every other request would wait through).

Only a page's own tabs are served on it (the rater's page has no receiver route); the services
check the token's role and item as for the Gradio event. The record tab's submit names its
recording by the path the page's recorder uploaded it to: only a path this page's upload route
stored (Blocks.upload_file_set, what Gradio's upload adds) is passed on, as Gradio's event takes
only files in its upload folder; any other is refused with REMOTE_FILE (web/uploads.py). A
stranger's upload that no route or event takes expires with UNUSED_UPLOAD_S, as one never sent
is. Guard (web/guard.py) bounds the body as for any event; a body that is not JSON, or not sent
as application/json (a cross-site form post), is refused with a message that says so."""

from __future__ import annotations

import json
import logging

from web.action_line import run_action

log = logging.getLogger(__name__)
MAX_TOKEN = 200


def refusal(status: int, text: str):
    from starlette.responses import JSONResponse

    return JSONResponse({"error": text}, status_code=status)


def read_call(body: bytes, content_type: str) -> tuple[dict | None, int, str]:
    """(the call's JSON object, 200, "") or (None, the HTTP status, why it is refused)."""
    if content_type.split(";", 1)[0].strip().lower() != "application/json":
        return None, 415, "The request must be sent as application/json."
    try:
        call = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None, 400, "The request is not valid JSON."
    if not isinstance(call, dict):
        return None, 400, "The request must be a JSON object."
    token = call.get("token")
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN:
        return None, 400, "The request names no participant link (token)."
    return call, 200, ""


def endpoint(fn, takes_value: bool, database=None, on_loop=lambda value: True):
    """An async route that reads the call and runs fn(token[, value]) (run_action: on the event
    loop when on_loop(value) and nothing would make it wait, else in a worker thread)."""
    from starlette.responses import JSONResponse

    async def route(request):
        call, status, problem = read_call(await request.body(), request.headers.get("content-type", ""))
        if call is None:
            return refusal(status, problem)
        args = (call["token"], call.get("value")) if takes_value else (call["token"],)
        try:
            value = await run_action(fn, args, database, on_loop(call.get("value")))
        except UploadRefused:
            from web.uploads import REMOTE_FILE

            return refusal(400, REMOTE_FILE)
        except Exception:  # as Gradio with show_error=False: no exception's text reaches a participant
            log.exception("item form call failed")
            return refusal(500, "Error")
        return JSONResponse({"value": value})

    return route


class UploadRefused(Exception):
    """A value's upload field names no file this page's upload route stored."""


def uploads_only(fn, page, field: str):
    """fn(token, value) that refuses (UploadRefused) a value whose `field` is not None and not a
    path the page's upload route stored."""

    def submit(token, value):
        path = value.get(field) if isinstance(value, dict) else None
        if path is not None and (not isinstance(path, str) or path not in page.upload_file_set):
            raise UploadRefused()
        return fn(token, value)

    return submit


def form_routes(pages: dict, database=None) -> list:
    """The JSON routes of every role page's item forms: pages is role -> its Blocks (whose
    item_forms web/pages.role_page sets: tab -> FormRoutes); database, the app's (None: every
    action in a worker thread)."""
    from starlette.routing import Route

    routes = []
    for role, page in pages.items():
        for tab, form in getattr(page, "item_forms", {}).items():
            if form.upload_field:
                submit = uploads_only(form.submit, page, form.upload_field)
                submit_route = endpoint(submit, True, database, on_loop=lambda value: False)
            else:
                submit_route = endpoint(form.submit, True, database)
            routes.append(Route(f"/{role}/form/{tab}/submit", submit_route, methods=["POST"]))
            routes.append(Route(f"/{role}/form/{tab}/view", endpoint(form.view, False, database), methods=["POST"]))
    return routes
