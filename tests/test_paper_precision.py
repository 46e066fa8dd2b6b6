"""Issue 50, point 1: paper 000, appendix B.4, "We load Whisper v3 and Voxtral in bfloat16"; it
names no precision for Tower+, Phi-4-multimodal or DeSTA2, which load as their checkpoints are
stored. Before, all five loaded in bf16. The twins' tests (tests/test_paper_systems.py,
tests/test_paper_phi4.py) load them so; docs/speech-pipeline.md, Precision, says it."""

from __future__ import annotations

from services.models import systems


def test_each_paper_preset_loads_in_the_precision_the_paper_gives():
    p = systems.presets()
    assert (p["paper-cascade"]["asr_dtype"], p["paper-cascade"]["mt_dtype"]) == ("bfloat16", "auto")
    assert p["paper-voxtral"]["dtype"] == "bfloat16"
    assert p["paper-phi4"]["dtype"] == p["paper-desta2"]["dtype"] == "auto"


def test_bf16_stays_a_setting_of_each():
    cfg = systems.resolve("direct", {"dtype": "bfloat16"}, "paper-phi4")
    assert cfg["dtype"] == "bfloat16" and systems.problems(cfg) == []
    cfg = systems.resolve("cascade", {"mt_dtype": "bfloat16"}, "paper-cascade")
    assert cfg["mt_dtype"] == "bfloat16" and systems.problems(cfg) == []
