"""The Analysis tab's DA section shows paper 001's Figure 3 (score distributions per item type,
services.da.analysis 'score_distribution') with its table, beside the other DA figures."""

from __future__ import annotations

import gradio as gr
import pandas as pd
import pytest

from services.admin import auth as admin
from services.da import analysis as da_analysis
from services.participation.items import get_view
from services.participation.submissions import submit
from services.setup.enrolment import add_participants
from storage.da import hits
from tabs.common import Ctx
from tests.helpers.da import careful, da_study

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)


def test_the_da_section_shows_the_score_distributions(database, tmp_path):
    from tabs import analysis

    db, media = da_study(database, tmp_path, modality='"text"', keep_fast="true")  # raters here answer at once
    for r in add_participants(db, "demo", "da", 2):
        while (v := get_view(db, r.token, "da", media_dir=media)).status == "item":
            submit(
                db,
                r.token,
                "da",
                v.item_id,
                {"score": careful(hits.da_hit_item(db, int(v.item_id)))},
                media_dir=media,
            )
    auth = admin.AdminAuth("pw")
    with gr.Blocks() as demo:
        session = gr.Textbox()
        analysis.build(Ctx(db, None, gr.Textbox(visible=False)), auth, session)
    (event,) = [f for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "run_da"]
    plots = [c for c in event.outputs if isinstance(c, gr.Plot) and "Figure 3" in (c.label or "")]
    tables = [c for c in event.outputs if isinstance(c, gr.Dataframe) and "Score distributions" in (c.label or "")]
    assert len(plots) == 1 and len(tables) == 1
    out = event.fn(auth.login("pw", None), "demo", 0.5, None)
    fig = out[plots[0]]["value"]  # shown (an update: hidden when there is no figure)
    assert fig is not None and "Score distributions" in fig.layout.title.text
    assert {t.name for t in fig.data} >= {"system", "bad_reference"}
    table = out[tables[0]]  # as shown: rounded for reading
    assert isinstance(table, pd.DataFrame) and list(table.columns) == da_analysis.DISTRIBUTION_COLUMNS
    assert set(table["item_type"]) >= {"system", "bad_reference"}
