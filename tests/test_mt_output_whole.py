"""Issue 50, point 2: an LLM's translation (Tower+ in the paper's cascade) is used as generated.
Before, the first paragraph was kept, and no more lines than the source had: a two-line
translation of a one-line transcript lost its second line. Now only a run-on into a new prompt
turn (a later line starting with the prompt's source label, "English:") is cut, the cut text is
stored with the translation (meta.cut), and the report counts the cuts per system."""

from __future__ import annotations

import pytest

from services.models import systems
from services.models.backends import hf
from services.participation.items import get_view
from services.participation.submissions import submit
from services.report import build
from services.setup.enrolment import add_participants
from services.usability import outputs, pipeline
from storage.studies import get_study
from tests.tiny_models import TOWER_PROMPT

SOURCE = "I need two return tickets to Lisbon and a window seat, please."
TWO_LINES = "Preciso de dois bilhetes de ida e volta para Lisboa.\nE um lugar à janela, por favor."


def causal_mt(monkeypatch, output: str) -> hf.TransformersCausalMT:
    """The paper's causal MT with its model's raw output given (the run-on guard is what is tested)."""
    mt = hf.TransformersCausalMT("Unbabel/Tower-Plus-9B", TOWER_PROMPT)
    monkeypatch.setattr(mt, "raw_generate", lambda texts, gen, n=1: [[output] * n for _ in texts])
    return mt


def test_a_two_line_translation_of_a_one_line_transcript_is_kept_whole(monkeypatch):
    mt = causal_mt(monkeypatch, TWO_LINES + "\n")
    assert mt.translate([SOURCE]) == [TWO_LINES]
    assert mt.translate_with_cuts([SOURCE]) == [(TWO_LINES, "")]


def test_paragraphs_and_a_note_are_output_too_and_kept():
    out = "Olá.\n\nNota: informal."
    assert hf.run_on(out, "Hi.", "English:") == (out, "")


def test_a_run_on_into_a_new_turn_is_cut_and_returned(monkeypatch):
    turn = "English: See you tomorrow.\nPortuguese (Portugal): Até amanhã."
    mt = causal_mt(monkeypatch, f" {TWO_LINES}\n{turn}")
    assert mt.translate_with_cuts([SOURCE]) == [(TWO_LINES, turn)]
    assert mt.sample([SOURCE], 2) == [[TWO_LINES, TWO_LINES]]


def test_nothing_is_cut_when_the_source_itself_has_such_a_line():
    source = "Say this:\nEnglish: is hard."
    out = "Diz isto:\nEnglish: is hard."
    assert hf.run_on(out, source, "English:") == (out, "")


@pytest.mark.parametrize(
    "prompt, label",
    [(TOWER_PROMPT, "English:"), ("{text}", ""), ("Translate into Portuguese:\n{text}", "")],
)
def test_the_label_is_what_precedes_the_text_on_its_line(prompt, label):
    assert hf.source_label(prompt) == label
    assert hf.run_on("Olá.\nEnglish: more", "Hello.", label)[1] == ("English: more" if label else "")


class HeardAs:
    """An ASR whose transcript is given: the cascade's MT step is what is tested."""

    name = "given-transcript"

    def __init__(self, text: str):
        self.text = text

    def transcribe(self, path: str) -> str:
        return self.text


def test_the_cascade_returns_the_cut_with_its_translation(monkeypatch):
    cascade = object.__new__(systems.Cascade)
    cascade.id, cascade.cfg, cascade.variant = "paper-cascade", {}, "pt-PT"
    cascade.asr = HeardAs(SOURCE)
    cascade.mt = causal_mt(monkeypatch, TWO_LINES + "\nEnglish: and more")
    res = cascade.translate_audio("unused.wav")
    assert (res.translation, res.cut, res.transcript) == (TWO_LINES, "English: and more", SOURCE)


def test_the_reports_versions_count_each_systems_cuts_and_say_its_precision(demo_db, tmp_path):
    """Three outputs stored as the worker stores them (record_outcome, with the meta a system's
    run gives); the report's versions line per system (the usability protocol's systems_report)."""
    from tests.helpers.audio import write_wav

    wav = write_wav(tmp_path / "s.wav", seconds=20.0, rate=16000)
    (sender,) = add_participants(demo_db, "demo", "sender", 1, group="USW", gender="Woman")
    made = []
    for cut in ("English: and more", "", ""):
        v = get_view(demo_db, sender.token, "record")
        rec = submit(demo_db, sender.token, "record", v.item_id, {"audio": str(wav)}, media_dir=tmp_path).stored
        meta = {"precision": {"asr": "bfloat16", "mt": "float32"}, **({"cut": cut} if cut else {})}
        pipeline.record_outcome(demo_db, rec["id"], TWO_LINES, SOURCE, meta)
        made.append(demo_db.one("SELECT system_id FROM exchanges WHERE id = ?", [rec["exchange_id"]])["system_id"])
    cuts = {s: int(s == made[0]) for s in made}
    expected = {
        s: f"ran in asr bfloat16, mt float32; {made.count(s)} translation{'s' * (made.count(s) != 1)}, "
        f"{made.count(s) - cuts[s]} used "
        f"whole as generated, {cuts[s]} cut where the model ran on into a new prompt turn (meta.cut)"
        for s in made
    }
    assert outputs.systems_report(demo_db, "demo") == expected
    versions = build.versions(demo_db, "demo", get_study(demo_db, "demo")["config"])
    for s, line in expected.items():
        assert versions[f"system {s}"].endswith("; " + line), versions
