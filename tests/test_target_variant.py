"""The Portuguese variant a study targets (issue 18, point 7): `[usability] target_variant`
(pt-PT by default, as the paper's receivers in Portugal; or pt-BR), checked at import, passed
to the systems that take one (their prompts' {target_language}) and to the LLM prompts, and
the variant each system produced marked in the export (services/common/variants.py)."""

from __future__ import annotations

import json
import shutil

import pytest

from harness.demo import DEMO_ASSETS
from services.common import variants
from services.comprehension import settings as question_settings
from services.models import systems
from services.setup.importer import import_study
from services.study.files import StudyValidationError, load_study
from storage import studies
from tests.openai_server import OpenAIServer

PAPER_TOWER = (
    "Translate the following English source text to Portuguese (Portugal):\nEnglish: {text}\nPortuguese (Portugal): "
)


def demo_copy(tmp_path, variant_line: str | None = None, extra: str = ""):
    """The demo study folder with its target_variant line replaced (None: left out)."""
    folder = tmp_path / "study"
    shutil.copytree(DEMO_ASSETS, folder)
    toml = (folder / "study.toml").read_text(encoding="utf-8")
    assert 'target_variant = "pt-PT"\n' in toml
    toml = toml.replace('target_variant = "pt-PT"\n', (variant_line + "\n") if variant_line else "", 1)
    (folder / "study.toml").write_text(toml.replace("\n[da]\n", extra + "\n[da]\n", 1), encoding="utf-8")
    return folder


# -- the setting -----------------------------------------------------------------------------


def test_the_study_setting_defaults_to_european_and_is_checked(tmp_path):
    bundle = load_study(demo_copy(tmp_path / "a"))  # not given: the paper's pt-PT
    assert bundle.config["usability"]["target_variant"] == "pt-PT"
    assert {s["target_variant"] for s in bundle.systems} == {"pt-PT"}
    bundle = load_study(demo_copy(tmp_path / "b", 'target_variant = "pt-BR"'))
    assert {s["target_variant"] for s in bundle.config["systems"]} == {"pt-BR"}
    for bad in ('"pt_PT"', '"pt"', '"en-US"', "1"):
        with pytest.raises(StudyValidationError) as e:
            load_study(demo_copy(tmp_path / f"bad{len(bad)}{bad[1:3]}", f"target_variant = {bad}"))
        assert [(x.field, x.message) for x in e.value.errors] == [
            ("usability.target_variant", "must be one of pt-PT, pt-BR")
        ]


# -- systems -----------------------------------------------------------------------------------


def test_the_paper_cascade_asks_tower_for_the_studys_variant():
    pt = systems.from_preset("paper-cascade")  # default: the paper's prompt verbatim
    assert pt.mt.prompt == PAPER_TOWER and pt.variant == "pt-PT"
    br = systems.from_preset("paper-cascade", target_variant="pt-BR")
    assert br.mt.prompt == PAPER_TOWER.replace("Portugal", "Brazil") and br.variant == "pt-BR"
    with pytest.raises(ValueError, match="pt-PT, pt-BR"):
        systems.from_preset("paper-cascade", target_variant="pt-AO")


def test_each_system_says_which_variant_it_produces():
    cfg = systems.resolve
    # Bergamot en-pt has one model, Brazilian, whatever the study asks for
    assert [systems.produced_variant(cfg(preset="offline-cascade"), v) for v in variants.VARIANTS] == ["pt-BR"] * 2
    assert systems.from_preset("offline-cascade").variant == "pt-BR"
    # the paper's direct prompts say "Portuguese": no variant named, the model picks
    for preset in ("paper-phi4", "paper-voxtral", "paper-desta2", "remote-voxtral"):
        assert systems.produced_variant(cfg(preset=preset), "pt-PT") == ""
    # a prompt with {target_language} follows the study; a fixed one says what it names
    asks = cfg("direct", {"model": "m", "prompt": "Translate the audio to {target_language}."})
    assert [systems.produced_variant(asks, v) for v in variants.VARIANTS] == ["pt-PT", "pt-BR"]
    fixed = cfg(
        "remote",
        {"base_url": "http://127.0.0.1:1/v1", "model": "m", "prompt": "Translate the audio into Brazilian Portuguese."},
    )
    assert systems.produced_variant(fixed, "pt-PT") == "pt-BR"
    # seq2seq models: the target-language code (NLLB has one Portuguese, por_Latn)
    nllb = cfg(
        "cascade",
        {
            "mt": "transformers-seq2seq",
            "mt_model": "facebook/nllb-200-distilled-600M",
            "mt_src_lang": "eng_Latn",
            "mt_tgt_lang": "por_Latn",
        },
    )
    assert systems.problems(nllb) == [] and systems.produced_variant(nllb, "pt-PT") == ""
    mt = systems.build_mt(nllb)
    assert (mt.src_lang, mt.tgt_lang) == ("eng_Latn", "por_Latn")
    assert systems.produced_variant({**nllb, "mt_tgt_lang": "pt_BR"}, "pt-PT") == "pt-BR"
    assert systems.produced_variant(cfg("human", {}), "pt-PT") == ""


def test_a_study_system_is_built_for_the_studys_variant(database, tmp_path):
    """An imported pt-BR study's remote MT sends the variant in its prompt to the server."""
    with OpenAIServer(models={"mt"}) as srv:
        extra = f"""
[[systems]]
id = "remote-mt"
label = "Whisper tiny.en -> an LLM asked for the study's variant"
kind = "cascade"
[systems.params]
mt = "remote"
mt_model = "mt"
mt_base_url = "{srv.base_url}"
mt_prompt = "Translate into {{target_language}}. Reply with the translation only.\\nEnglish: {{text}}"
"""
        import_study(database, demo_copy(tmp_path, 'target_variant = "pt-BR"', extra))
        row = next(s for s in studies.get_study(database, "demo")["config"]["systems"] if s["id"] == "remote-mt")
        st = systems.from_study_system(row)
        assert st.variant == "pt-BR"
        out = st.mt.translate(["Good morning."])
        assert out[0].strip()  # Bergamot behind the server answered
        sent = srv.requests[-1].json["messages"][-1]["content"]
        sent = sent if isinstance(sent, str) else sent[0]["text"]
        assert sent.startswith("Translate into Portuguese (Brazil). Reply") and "{target_language}" not in sent


# -- LLM prompts ---------------------------------------------------------------------------------


def test_the_llm_prompts_name_the_studys_variant():
    pt, br = ({"usability": {"target_variant": v}} for v in variants.VARIANTS)
    assert "into Portuguese (Portugal)." in question_settings.prompt(pt, "translate")
    assert "into Portuguese (Brazil)." in question_settings.prompt(br, "translate")
    assert "into Portuguese (Portugal)." in question_settings.prompt({}, "translate")  # the default
    assert "português europeu" in question_settings.prompt(pt, "answer_pt")
    assert "português do Brasil" in question_settings.prompt(br, "answer_pt")
    for cfg in (pt, br):
        for name in question_settings.PROMPTS:
            assert not any(p in question_settings.prompt(cfg, name) for p in variants.PLACEHOLDERS)
    # a study's own prompt gets them filled too; {text} stays for the caller
    own = {**br, "questions": {"prompts": {"translate": "To {target_variant}: {text}"}}}
    assert question_settings.prompt(own, "translate") == "To pt-BR: {text}"
    # who translates generated questions: the LLM for pt-PT (Bergamot writes pt-BR), unless told
    assert question_settings.translator(pt) == "llm" and question_settings.translator(br) == "mt"
    assert question_settings.translator({**pt, "questions": {"translate": "mt"}}) == "mt"


# -- the export ----------------------------------------------------------------------------------


def test_the_export_marks_the_variant_of_each_system_and_exchange(database, tmp_path):
    from harness.demo import demo_with_exchanges
    from services.study.export import build_tables, export_study

    import_study(database, demo_with_exchanges(tmp_path / "demo"))
    tables = build_tables(database, "demo")[0]
    assert {r["system"]: r["target_variant"] for r in tables["systems"]} == {
        "cascade-beam": "pt-BR",
        "cascade-greedy": "pt-BR",
        "human-reference": "",
    }
    assert {r["target_variant"] for r in tables["exchanges"]} == {""}  # the imported human ones
    out = export_study(database, "demo", tmp_path / "out", include_audio=False)
    manifest = json.loads((out.folder / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["target_variant"] == "pt-PT"
    readme = (out.folder / "README.md").read_text(encoding="utf-8")
    assert "The study targets `pt-PT` Portuguese" in readme and "| `target_variant` | string |" in readme
    header = (out.folder / "systems.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header == "system,label,kind,target_variant"
