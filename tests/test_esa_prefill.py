"""Issue 53, point 4: ESA-AI, spans pre-filled by a backend (services/esa/prefill.py,
services/esa/prefill_store.py). GEMBA-MQM's parser on hand-written answers (the paper's format, a
quote not found, "no-error", an omission), the overlap rule, the outcome bookkeeping (kept /
severity / edited / deleted / added), xCOMET's spans from the tiny checkpoint of
tests/tiny_metric_models.py (random weights: the plumbing, not the spans' sense), and a study that
imports with prefill = "gemba-mqm", whose LLM is a tiny chat LM trained here on two GEMBA-MQM
prompts and served over the OpenAI-compatible API on localhost: not served until the job has run,
then served with its spans, answered, exported and analysed."""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import shutil
import sys
from pathlib import Path

import pytest

from services.common import protocols
from services.esa import annotation, attention, prefill, prefill_store, study_analysis
from services.esa import protocol as esa
from services.esa.spans import Span
from services.metrics import comet
from services.models import llm
from services.models.backends import BackendUnavailable
from services.models.cache import ModelCache
from services.participation import worker_jobs
from services.participation.items import get_view
from services.participation.submissions import SubmissionError, submit
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.study.export import export_study
from services.study.files import StudyValidationError, load_study
from storage import open_database
from storage.protocol_schema import Schema
from tests.openai_server import OpenAIServer

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_metric_models as tmm  # noqa: E402
import tiny_models as tm  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "esa"
STUDY = "esa-example"

# the paper's format (GEMBA-MQM's en-de example answer), on its own output
PAPER_OUTPUT = (
    "Ich entschuldige mich dafür, wir müssen die Erlaubnis einholen, um eine Bestellung mit einer anderen Person zu "
    "besprechen. Ich entschuldige mich, falls dies zuvor geschehen wäre, aber ohne die Erlaubnis des Kontoinhabers "
    "wäre ich nicht in der Lage, dies mit dir involvement."
)
PAPER_ANSWER = (
    'Critical:\nno-error\nMajor:\naccuracy/mistranslation - "involvement"\naccuracy/omission - "the account holder"\n'
    'Minor:\nfluency/grammar - "wäre"\nfluency/register - "dir"\n'
)


# -- GEMBA-MQM's answer parsed and placed ---------------------------------------------------


def test_the_papers_answer_is_parsed_and_placed():
    errors, unread = prefill.parse_gemba_mqm(PAPER_ANSWER)
    assert unread == 0
    assert [(e.severity, e.category, e.text) for e in errors] == [
        ("major", "accuracy/mistranslation", "involvement"),
        ("major", "accuracy/omission", "the account holder"),
        ("minor", "fluency/grammar", "wäre"),
        ("minor", "fluency/register", "dir"),
    ]
    got = prefill.from_gemba(PAPER_OUTPUT, PAPER_ANSWER)
    o = PAPER_OUTPUT
    # "wäre" is searched after "involvement" (the end), not found there, so its first occurrence;
    # the omission quotes the source: the [MISSING] token
    first_waere = o.index("wäre")
    dir_at = o.index(" dir ") + 1
    assert [(s.start, s.end, s.text, s.severity, s.category, s.missing) for s in got.spans] == [
        (first_waere, first_waere + 4, "wäre", "minor", "fluency/grammar", False),
        (dir_at, dir_at + 3, "dir", "minor", "fluency/register", False),
        (o.index("involvement"), o.index("involvement") + 11, "involvement", "major", "accuracy/mistranslation", False),
        (len(o), len(o), "", "major", "accuracy/omission", True),
    ]
    assert got.dropped == 0 and got.merged == 0 and got.raw == PAPER_ANSWER


def test_a_quote_not_found_is_dropped_and_no_error_gives_none():
    out = "O gato comeu o peixe."
    answer = 'Critical:\nno-error\nMajor:\naccuracy/mistranslation - "cão"\nMinor:\nstyle/awkward - "comeu"\n'
    got = prefill.from_gemba(out, answer)
    assert [(s.text, s.severity) for s in got.spans] == [("comeu", "minor")] and got.dropped == 1
    none = prefill.from_gemba(out, "Critical:\nno-error\nMajor:\nno-error\nMinor:\nno-error\n")
    assert none.spans == () and none.dropped == 0
    # a line that is not an error line, and an error before any severity, are counted as dropped
    odd = prefill.from_gemba(out, 'accuracy/addition - "gato"\nMajor:\nthe fish is wrong\n')
    assert odd.spans == () and odd.dropped == 2
    # critical and non-translation are major; the second "o" is found after the first
    crit = prefill.from_gemba(out, 'Critical:\nnon-translation - "O gato"\nMinor:\nfluency/grammar - "o"\n')
    assert [(s.start, s.end, s.severity) for s in crit.spans] == [(0, 6, "major"), (13, 14, "minor")]


def test_overlapping_spans_are_merged_keeping_the_more_severe():
    out = "Misture a flor com o açúcar."
    answer = 'Major:\naccuracy/mistranslation - "a flor"\nMinor:\nfluency/spelling - "flor com"\n'
    got = prefill.from_gemba(out, answer)
    assert [(s.start, s.end, s.text, s.severity, s.category) for s in got.spans] == [
        (8, 18, "a flor com", "major", "accuracy/mistranslation")
    ]
    assert got.merged == 1
    spans, merged = prefill.merge([Span.over(out, 0, 7, "minor"), Span.over(out, 3, 9, "major")], out)
    assert [(s.start, s.end, s.severity) for s in spans] == [(0, 9, "major")] and merged == 1


def test_the_prompt_fills_the_last_turn_only():
    g = prefill.GembaMqmPrefill(llm.LLM(llm.LLMConfig("remote", "m", "http://127.0.0.1:9/v1")))
    text = g.prompt("Mix the flour.", "Misture a farinha.", "en", "pt-BR")
    assert text.startswith("You are an annotator for the quality of machine translation.")
    assert text.count("English source:") == 3  # the en-de and en-cs examples, and this one
    assert text.endswith(
        "English source:\n```Mix the flour.```\nPortuguese translation:\n```Misture a farinha.```\n\n"
        "Based on the source segment and machine translation surrounded with triple backticks, identify error "
        "types in the translation and classify them. The categories of errors are: accuracy (addition, "
        "mistranslation, omission, untranslated text), fluency (character encoding, grammar, inconsistency, "
        "punctuation, register, spelling), style (awkward), terminology (inappropriate for context, inconsistent "
        "use), non-translation, other, or no-error.\nEach error is classified as one of three categories: "
        "critical, major, and minor. Critical errors inhibit comprehension of the text. Major errors disrupt the "
        "flow, but what the text is trying to say is still understandable. Minor errors are technically errors, "
        "but do not disrupt the flow or hinder comprehension."
    )
    assert "{source_seg}" not in text and "Ich entschuldige" in text
    assert "The source:" in g.prompt("a", "b")  # no languages given


# -- what the annotator did with each pre-filled span ---------------------------------------


def test_outcomes_kept_severity_edited_deleted_and_added():
    out = "O concelho aprovou o novo orçamento no domingo."
    pre = [
        {**Span.over(out, 2, 10, "minor").to_dict(), "category": "fluency/spelling"},  # concelho
        Span.over(out, 11, 18, "minor").to_dict(),  # aprovou
        Span.over(out, 39, 46, "major").to_dict(),  # domingo
        Span.omission(out, "minor").to_dict(),
    ]
    final = [
        Span.over(out, 2, 10, "minor"),  # kept
        Span.over(out, 11, 18, "major"),  # severity changed
        Span.over(out, 26, 35, "minor"),  # added: orçamento
        Span.over(out, 36, 46, "major"),  # edited: "no domingo"
    ]
    record, problems = prefill.outcomes(pre, final, [0, 1, None, 2])
    assert problems == []
    assert [(r["outcome"], r["final"]) for r in record["spans"]] == [
        ("kept", 0),
        ("severity", 1),
        ("edited", 3),
        ("deleted", None),
    ]
    assert record["origin"] == [0, 1, None, 2] and record["spans"][0]["category"] == "fluency/spelling"
    assert prefill.counts(record) == {
        "n_prefilled": 4,
        "prefill_kept": 1,
        "prefill_severity": 1,
        "prefill_edited": 1,
        "prefill_deleted": 1,
        "n_added": 1,
    }
    assert prefill_store.words(record) == "pre-filled 4: kept 1, severity 1, edited 1, deleted 1; added 1"
    # a claimed origin that does not overlap, or one claimed twice, is refused naming the span
    _, bad = prefill.outcomes(pre, [Span.over(out, 26, 35, "minor"), Span.over(out, 2, 10, "minor")], [2, 2])
    assert "does not overlap the pre-filled span 2" in bad[0] and "both come from pre-filled span 2" in bad[1]
    links, wrong = prefill.links_of([{"prefill": 7}, {"prefill": True}, {}], 4)
    assert links == [None, None, None] and len(wrong) == 2 and "span 0: prefill must be" in wrong[0]


# -- xCOMET on the tiny checkpoint ------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_comet(tmp_path_factory):
    if not comet._package_version():
        pytest.skip("unbabel-comet is not installed")
    with tmm.offline():
        return tmm.build_comet(tmp_path_factory.mktemp("comet"))


def test_xcomet_spans_are_offsets_in_the_output(tiny_comet, monkeypatch, no_network):
    monkeypatch.setenv("TRADLAB_XCOMET_CHECKPOINT", str(tiny_comet["xcomet"]))
    backend = prefill.get("xcomet", cache=ModelCache(device="cpu"))
    assert backend.name == "xcomet" and "weights" in backend.model
    sources = ["Hello world.", "Good morning everyone.", "Thank you very much.", "The cat ate the fish.", "Hi."]
    outputs = ["Olá mundo.", "Bom dia a todos.", "Muito obrigado.", "O gato comeu o peixe.", "  "]
    got = backend.fill(sources, outputs, ["en"] * 5, ["pt"] * 5)
    assert got == backend.fill(sources, outputs)  # deterministic
    assert got[-1].spans == ()  # a blank output is not sent
    n = 0
    for out, r in zip(outputs, got):
        raw = r.raw or []
        for s in r.spans:
            n += 1
            assert 0 <= s.start < s.end <= len(out) and s.text == out[s.start : s.end]
            assert s.text == s.text.strip() and s.severity in ("minor", "major") and s.category is None
            # inside one of xCOMET's own spans (its character offsets, spaces trimmed)
            assert any(x["start"] <= s.start and s.end <= x["end"] for x in raw)
        assert len(r.spans) + r.dropped + r.merged == len(raw)
    assert n > 0  # the tiny model marks something: the check above ran


# -- GEMBA-MQM through a tiny chat LM served on localhost -------------------------------------

TRAINED = [
    (
        "The council approved the new budget on Monday.",
        "O concelho aprovou o novo orçamento no domingo.",
        'Critical:\nno-error\nMajor:\naccuracy/mistranslation - "domingo"\nMinor:\nfluency/spelling - "concelho"',
    ),
    (
        "Mix the flour with the sugar.",
        "Misture a flor com o açúcar.",
        'Critical:\nno-error\nMajor:\naccuracy/mistranslation - "flor"\nMinor:\nno-error',
    ),
]
SERVED = "gemba-tiny"


@pytest.fixture(scope="module")
def served_lm(tmp_path_factory):
    """A tiny chat LM trained on the GEMBA-MQM prompts of TRAINED (their answers), served by the
    test's OpenAI-compatible server: each chat answered by the model (the transformers backend)."""
    pytest.importorskip("transformers")
    g = prefill.GembaMqmPrefill(llm.LLM(llm.LLMConfig("remote", "m", "http://127.0.0.1:9/v1")))
    pairs = [(g.prompt(s, t, "en", "pt"), a) for s, t, a in TRAINED]
    with tmm.offline():
        folder = tm.build_chat_lm(
            tmp_path_factory.mktemp("gemba") / "lm", pairs, steps=100, max_positions=2048, vocab_size=3000
        )
    local = llm.get({"llm": {**llm.DEFAULTS, "model": str(folder), "backend": "transformers", "max_tokens": 64}},
                    cache=ModelCache(device="cpu"))  # fmt: skip
    with OpenAIServer(models={SERVED}, responder=lambda text, body: local.complete([text])[0]) as server:
        yield server


def study_folder(tmp_path: Path, server) -> Path:
    folder = tmp_path / "esa-ai"
    shutil.copytree(EXAMPLE, folder)
    rows = "".join(f"doc{i},1,sysA,{s},{t},en,pt\n" for i, (s, t, _) in enumerate(TRAINED))
    (folder / "esa_segments.csv").write_text("doc_id,segment_id,system,source,target,source_lang,target_lang\n" + rows)
    toml = (folder / "study.toml").read_text(encoding="utf-8")
    toml = toml.replace("hit_size = 4\n", 'hit_size = 4\nprefill = "gemba-mqm"\n')
    toml += f'\n[llm]\nmodel = "{SERVED}"\nbase_url = "{server.base_url}"\n'
    (folder / "study.toml").write_text(toml, encoding="utf-8")
    return folder


@pytest.mark.slow
def test_a_prefilled_study_end_to_end(served_lm, tmp_path, no_network):
    db = open_database(tmp_path / "esa.db", schemas=protocols.schemas())
    import_study(db, study_folder(tmp_path, served_lm))
    assert db.scalar("SELECT COUNT(*) FROM jobs WHERE kind = 'esa_prefill'") == 1
    (p,) = add_participants(db, STUDY, "esa", 1)
    waiting = get_view(db, p.token, "esa")
    assert waiting.status == "waiting" and waiting.message == prefill_store.NOT_READY  # not served before
    # the worker's handler: the study's own backend, its [llm] section, temperature 0
    assert worker_jobs.handlers(db)[prefill_store.KIND]({"study_id": STUDY}) == 2
    stored = {r["segment_row"]: r for r in db.query("SELECT * FROM esa_prefill")}
    assert (
        stored[0]["backend"] == "gemba-mqm" and SERVED in stored[0]["model"] and "(temperature 0," in stored[0]["model"]
    )
    assert [(s["text"], s["severity"], s["category"]) for s in json.loads(stored[0]["spans"])] == [
        ("concelho", "minor", "fluency/spelling"),
        ("domingo", "major", "accuracy/mistranslation"),
    ]
    assert json.loads(stored[0]["raw"]) == TRAINED[0][2]
    assert [s["text"] for s in json.loads(stored[1]["spans"])] == ["flor"]
    assert prefill_store.run(db, STUDY) == 0  # again: nothing left to do

    # served with its pre-filled spans: in segment 0 the annotator deletes "concelho", keeps
    # "domingo" and adds "O"; in segment 1 re-grades "flor"
    for _ in TRAINED:
        v = get_view(db, p.token, "esa")
        assert v.status == "item" and "already marked" in v.content["instructions"]
        pre = v.content["prefill"]
        expected = json.loads(stored[int(v.item_id)]["spans"])
        assert [(s["text"], s["severity"], s["prefill"]) for s in pre] == [
            (x["text"], x["severity"], k) for k, x in enumerate(expected)
        ]
        if v.item_id == "1":
            regraded = {**pre[0], "severity": "minor"}
            submit(db, p.token, "esa", v.item_id, {"spans": json.dumps([regraded]), "score": 70})
            continue
        added = {"start": 0, "end": 1, "text": "O", "severity": "minor", "missing": False}
        with pytest.raises(SubmissionError) as e:  # said to come from a span it does not overlap
            submit(db, p.token, "esa", v.item_id, {"spans": json.dumps([pre[1], {**added, "prefill": 0}]), "score": 40})
        assert "span 0 (0-1 'O') does not overlap the pre-filled span 0" in e.value.fields["spans"]
        assert db.scalar("SELECT COUNT(*) FROM esa_answers") == 0
        submit(db, p.token, "esa", v.item_id, {"spans": json.dumps([pre[1], added]), "score": 40})
        record = json.loads(db.scalar("SELECT prefill FROM esa_answers WHERE segment_row = 0"))
        assert [(r["text"], r["outcome"], r["final"]) for r in record["spans"]] == [
            ("concelho", "deleted", None),
            ("domingo", "kept", 1),
        ]
        assert record["origin"] == [None, 1]

    out = export_study(db, STUDY, tmp_path / "export")
    assert out.rows["esa_prefill"] == 2
    with open(out.folder / "esa_answers.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    got = sorted((r["segment_row"], *(r[c] for c in study_analysis.COUNTS)) for r in rows)
    assert got == [("0", "2", "1", "0", "0", "1", "1"), ("1", "1", "0", "1", "0", "0", "0")]
    readme = (out.folder / "README.md").read_text(encoding="utf-8")
    assert "`esa_prefill" in readme and "prefill_deleted" in readme
    summary = study_analysis.run(
        argparse.Namespace(export=str(out.folder), study=None, out=str(tmp_path / "a"), alpha=0.05, by="mean"), None
    )
    assert (
        "ESA-AI: 3 pre-filled spans in 2 answers: kept 1 (33%), severity 1 (33%), edited 0 (0%), deleted 1 (33%); "
        "1 spans added by annotators" in summary
    )
    table = list(csv.DictReader(open(tmp_path / "a" / "prefill.csv", encoding="utf-8")))
    assert [r["system"] for r in table] == ["sysA", "all"] and table[-1]["prefill_deleted"] == "1"

    # the report's part and the Analysis tab's summary say it too (before: the CLI only)
    from services.report import esa as esa_report

    part = esa_report.build(db, STUDY, tmp_path / "report")
    line = next(n for n in part.notes if n.startswith("ESA-AI: 3 pre-filled spans in 2 answers"))
    assert line in part.detail.lines()
    table5 = next(s for s in part.sections if s.number == "Table 5")
    assert table5.table is not None and list(table5.table["system"]) == ["sysA", "all"]
    assert any(Path(f).name == "prefill.csv" for f in part.files)


def test_prefill_must_name_a_backend(tmp_path):
    folder = tmp_path / "s"
    shutil.copytree(EXAMPLE, folder)
    toml = folder / "study.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("hit_size = 4\n", 'hit_size = 4\nprefill = "gpt"\n'))
    with pytest.raises(StudyValidationError) as e:
        load_study(folder)
    assert any(err.field == "esa.prefill" and "gemba-mqm" in err.message for err in e.value.errors)


def test_a_job_without_a_configured_backend_says_what_to_set(tmp_path, monkeypatch):
    for var in ("TRADLAB_LLM_MODEL", "TRADLAB_LLM_BASE_URL", "TRADLAB_LLM_BACKEND"):
        monkeypatch.delenv(var, raising=False)
    folder = tmp_path / "s"
    shutil.copytree(EXAMPLE, folder)
    toml = folder / "study.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("hit_size = 4\n", 'hit_size = 4\nprefill = "gemba-mqm"\n'))
    db = open_database(tmp_path / "esa.db", schemas=protocols.schemas())
    import_study(db, folder)
    with pytest.raises(BackendUnavailable, match="TRADLAB_LLM_MODEL"):
        prefill_store.run(db, STUDY)
    assert db.scalar("SELECT COUNT(*) FROM esa_prefill") == 0


def test_a_database_at_schema_1_gets_the_prefill_table_and_column(tmp_path):
    before = dataclasses.replace(esa.ANSWERS_TABLE, columns=esa.ANSWERS_TABLE.columns[:-1])  # without prefill
    # schema 3's (the segments' audio) and schema 4's (quality control), after schema 2's
    later = len(annotation.SPEECH_COLUMNS) + len(attention.SEGMENT_COLUMNS)
    segments = dataclasses.replace(esa.SEGMENTS_TABLE, columns=esa.SEGMENTS_TABLE.columns[:-later])
    others = [s for s in protocols.schemas() if s.owner != "esa"]
    v1 = Schema("esa", 1, (segments, esa.HITS_TABLE, esa.TAKERS_TABLE, before))
    old = open_database(tmp_path / "x.db", schemas=[*others, v1])
    assert "esa_prefill" not in old.db.table_names()
    db = open_database(tmp_path / "x.db", schemas=protocols.schemas())
    assert db.scalar("SELECT version FROM protocol_schemas WHERE protocol = 'esa'") == 4
    assert "esa_prefill" in db.db.table_names() and "esa_qc" in db.db.table_names()
    assert "prefill" in [c[1] for c in db.db.execute("PRAGMA table_info(esa_answers)")]
    assert {"target_audio", "kind"} <= {c[1] for c in db.db.execute("PRAGMA table_info(esa_segments)")}
