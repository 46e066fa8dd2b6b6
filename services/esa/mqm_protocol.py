"""MQM (Freitag et al., TACL 2021, "Experts, Errors, and Context") as a protocol on ESA's page
(docs/mqm.md): an annotator takes one HIT of whole documents and, segment by segment, marks the
translation's errors, each with a category of the study's taxonomy (assets/mqm_taxonomy.toml by
default) and a severity; there is no score to give: the segment's MQM score is the weighted sum
of its errors (services/esa/mqm.py), stored with the answer.

It shares ESA's queue, item and tables' shape (services/esa/annotation.py: mqm_segments,
mqm_hits, mqm_takers, mqm_answers, the answers' score column `mqm`), its segments file
(services/esa/corpus.py) and its page (tabs/mqm.py on tabs/esa.py, assets/js/script/esa.js with
the category picker, assets/css/mqm.css).

The taxonomy. [mqm] taxonomy (an inline table) or taxonomy_file (a TOML file in the study folder),
both of the form of assets/mqm_taxonomy.toml, checked by services/esa/taxonomy.py; the one used
(the default when neither is given) is read into the stored config at import, as the consent's
text is, so the study keeps the categories and weights its annotators used. A severity the
taxonomy lists has a weight (the taxonomy's check): a study that wants `critical` lists it with
its weight."""

from __future__ import annotations

import functools
import json
import tomllib
from typing import Any

from services.common import protocols
from services.common.protocols import Column, ExportTable, Phase, Protocol, Role, Tab
from services.esa import annotation, answers, attention
from services.esa.corpus import Corpus
from services.esa.mqm import check_mqm_spans, segment_score
from services.esa.spans import MISSING_TOKEN, Span, SpanError
from services.esa.taxonomy import DEFAULT_PATH, Taxonomy, TaxonomyError, load_taxonomy, parse_taxonomy
from services.participation.submissions import refuse_all
from services.study import files
from storage import studies
from storage.db import required
from storage.rows import AssignmentRow, ParticipantRow, StudyRow

NAME = "mqm"
SCORE = "mqm"  # the answers' score column: the segment's MQM score
# WMT's MQM raters saw whole documents (Freitag et al. 2021, "Experts, Errors, and Context");
# a HIT of about 100 segments as ESA's (the product's choice: the paper gives no HIT size)
DEFAULTS: dict[str, Any] = {
    "segments": None,
    "hit_size": 100,
    "context": "all",
    "taxonomy": {},
    "taxonomy_file": "",
    "instructions": "",
    "show_source_transcript": True,  # a source with audio: its text shown beside the player too
    **attention.DEFAULTS,  # quality control as ESA's (docs/esa.md, "Quality control")
}
INSTRUCTIONS = (
    "**Mark the errors** of the highlighted translation, one at a time: drag across the words (or, "
    "with the keyboard, focus the translation, move with the arrow keys and extend with Shift), "
    "then **pick the error's category** (C jumps to the list) and **its severity**. "
    "**Major**: the error would confuse or mislead a reader, or changes the meaning. **Minor**: the "
    "meaning is kept but the text is less fluent or natural. If something is missing, mark the "
    f"`{MISSING_TOKEN}` token (category Accuracy/Omission). If the output is not a translation of "
    "the source at all, pick **Non-translation** with nothing selected: it marks the whole segment "
    "and replaces every other error. Mark at most **five** errors per segment: the five most "
    "severe. Keep the whole document in mind: consistency counts."
)


class MQMCorpus(Corpus):
    """ESA's segments file, and the study's taxonomy read into its stored config (module docstring)."""

    def load(self, folder, cfg, systems, bundle, err) -> None:
        super().load(folder, cfg, systems, bundle, err)
        section = cfg[self.name]
        if section.get("taxonomy"):  # inline: checked by check()
            return
        name = section.get("taxonomy_file")
        if not name:
            with open(DEFAULT_PATH, "rb") as f:
                section["taxonomy"] = tomllib.load(f)
            return
        path = files.safe_file(folder, name, f"{self.name}.taxonomy_file", err)
        if path is None:
            return
        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
            parse_taxonomy(data, path.name)
        except FileNotFoundError:
            err.add("study.toml", None, f"{self.name}.taxonomy_file", f"'{name}' is not in the study folder")
            return
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            err.add(path.name, None, f"{self.name}.taxonomy_file", f"not valid TOML: {e}")
            return
        except TaxonomyError as e:
            err.add(path.name, None, f"{self.name}.taxonomy_file", str(e))
            return
        section["taxonomy"] = data


CORPUS = MQMCorpus(NAME)
SPANS = annotation.SpanAnnotation(CORPUS, SCORE, higher_is_better=False)
TABLES = (*annotation.tables(CORPUS, Column(SCORE, "REAL", not_null=True)), attention.qc_table(CORPUS))


def check(section: dict) -> list[tuple[str, str]]:
    """(field, message) for every mistake in the merged [mqm] section; an inline taxonomy is
    checked whole (services/esa/taxonomy.py names its key)."""
    out = annotation.queue_problems(NAME, section)
    inline, file = section.get("taxonomy"), section.get("taxonomy_file")
    if not isinstance(file, str):
        out.append(("mqm.taxonomy_file", "must name a TOML file in the study folder (empty: the default taxonomy)"))
    if not isinstance(inline, dict):
        out.append(("mqm.taxonomy", "must be a table of the form of assets/mqm_taxonomy.toml"))
    elif inline and file:
        out.append(("mqm.taxonomy", "give the taxonomy inline or as taxonomy_file, not both"))
    elif inline:
        try:
            parse_taxonomy(inline, "mqm.taxonomy")
        except TaxonomyError as e:
            out.append(("mqm.taxonomy", str(e)))
    if not isinstance(section.get("instructions"), str):
        out.append(("mqm.instructions", "must be a string (Markdown; empty: the built-in instructions)"))
    return out + attention.check(NAME, section)


@functools.lru_cache(maxsize=64)
def _parsed(text: str) -> Taxonomy:
    return parse_taxonomy(json.loads(text), "mqm.taxonomy")


def taxonomy_of(config: dict) -> Taxonomy:
    """The study's taxonomy as its stored config holds it (read in at import); the default for a
    config stored without one."""
    data = (config.get(NAME) or {}).get("taxonomy")
    if not data:
        return load_taxonomy()
    return _parsed(json.dumps(data, sort_keys=True))


def offered(taxonomy: Taxonomy, audio: bool) -> list[dict]:
    """The categories the page's picker offers: the speech ones only for an audio output, none
    marked in the source (the page marks the output only: docs/mqm.md); each with its
    subcategories, forced severity, and whether it is the whole-segment one."""
    return [
        {
            "name": c.name,
            "subcategories": list(c.subcategories),
            "severity": c.severity,
            "whole": c.name == taxonomy.whole_segment,
        }
        for c in taxonomy.categories
        if (audio or not c.audio) and c.side == "target"
    ]


def is_audio(segment: dict) -> bool:
    """Whether the segment's output is speech (its row names a target_audio): it then gets the
    taxonomy's audio categories, for its text spans and its time spans alike."""
    return bool(segment.get("target_audio"))


def time_categories(taxonomy: Taxonomy) -> list[str]:
    """The categories a span on the output's audio may carry: the output's, speech ones included,
    but not the whole-segment one (it marks the whole text)."""
    return [
        n for c in taxonomy.categories if c.side == "target" and c.name != taxonomy.whole_segment for n in c.names()
    ]


def time_problems(timed: list, spans: list[Span], taxonomy: Taxonomy) -> list[str]:
    """MQM's rules on the spans marked on the audio beside the text's: a category's forced
    severity, the whole-segment category standing alone, the cap counting both kinds."""
    out = []
    for i, s in enumerate(timed):
        cat = taxonomy.category(s.category or "")
        if cat.severity and s.severity != cat.severity:
            out.append(f"audio span {i} ({s.label()}): {cat.name} is always {cat.severity}, not {s.severity}")
    whole = taxonomy.whole_segment
    if timed and whole and any(taxonomy.canonical(s.category or "") == whole for s in spans):
        out.append(f"{whole} replaces every other error, those on the audio too; remove the others")
    n = len(spans) + len(timed)
    if taxonomy.max_errors and n > taxonomy.max_errors:
        out.append(
            f"{n} errors marked; at most {taxonomy.max_errors} per segment (mark the {taxonomy.max_errors} most severe)"
        )
    return out


def content(database, study: StudyRow, participant: ParticipantRow, assignment: AssignmentRow, media_dir) -> dict:
    """The segment and its document (as ESA's), the picker's categories and severities, the cap
    on errors and the instructions."""
    section = study["config"][NAME]
    taxonomy = taxonomy_of(study["config"])
    seg = SPANS.segment_of(database, study["id"], assignment)
    return {
        **SPANS.document(database, study, assignment, media_dir),
        "categories": offered(taxonomy, is_audio(seg)),
        "severities": list(taxonomy.severities),
        "max_errors": taxonomy.max_errors,
        "instructions": attention.practice_note(assignment["meta"]) + (section.get("instructions") or INSTRUCTIONS),
    }


def parse_spans(raw, target: str, source: str, taxonomy: Taxonomy, audio: bool) -> tuple[list[Span], list[str]]:
    """The hidden field's spans ([{start, end, text, severity, category, missing, side}]) checked
    against the exact output and the taxonomy (services/esa/mqm.check_mqm_spans), and every
    problem, each naming its span."""
    found, problems = annotation.read_spans(raw)
    spans = []
    for i, d in enumerate(found):
        category = d.get("category")
        if not isinstance(category, str) or not category:
            problems.append(f"span {i}: pick its error category")
            continue
        try:
            spans.append(Span.from_dict({**d, "side": d.get("side") or "target"}))
        except (KeyError, TypeError, ValueError) as e:
            problems.append(f"span {i}: {e}")
    if problems:
        return [], problems
    try:
        check_mqm_spans(spans, target, taxonomy, source=source, audio=audio)
    except SpanError as e:
        return [], e.problems
    return spans, []


def validate(database, assignment: AssignmentRow, payload: dict) -> dict:
    """The spans checked (offsets, categories, severities, at most max_errors, Non-translation
    alone over the whole output) and the segment's MQM score computed from them by the study's
    weights."""
    seg = SPANS.segment_of(database, assignment["study_id"], assignment)
    taxonomy = taxonomy_of(required(studies.get_study(database, assignment["study_id"]), "study")["config"])
    text_records, time_records, problems = annotation.split_records(payload.get("spans"))
    spans: list[Span] = []
    timed: list = []
    for i, d in enumerate(time_records):
        if not isinstance(d.get("category"), str) or not d.get("category"):
            problems.append(f"audio span {i}: pick its error category")
    if not problems:
        spans, problems = parse_spans(text_records, seg["target"], seg["source"], taxonomy, is_audio(seg))
        categories = time_categories(taxonomy)
        timed, more = annotation.parse_time_spans(time_records, seg, taxonomy.severities, categories)
        problems += more
    if not problems and timed:
        problems = time_problems(timed, spans, taxonomy)
    if problems:
        words = "The errors need fixing: " + "; ".join(problems) + "."
        refuse_all([words], {"spans": words})
    section = required(studies.get_study(database, assignment["study_id"]), "study")["config"][NAME]
    practice, feedback = SPANS.practice(seg, [s.to_dict() for s in spans], payload, section)
    if feedback:  # a practice item's: what the annotator missed
        refuse_all([feedback], {"spans": feedback})
    ordered = sorted(spans, key=lambda s: (s.side != "target", s.missing, s.start, s.end))
    out = {
        "spans": [s.to_dict() for s in [*ordered, *timed]],
        SCORE: segment_score([*ordered, *timed], taxonomy.weights),
        "segment_row": seg["segment_row"],
    }
    return {**out, "practice": practice} if practice is not None else out


def answer_words(database, assignment: AssignmentRow, answer: dict) -> str:
    """MQM 6; major Accuracy/Mistranslation 4-7 "cat", minor Fluency/Punctuation 9-10 ","."""
    if not answer:
        return ""
    spans = ", ".join(annotation.span_words(s) for s in answer.get("spans", []))
    return f"MQM {answer[SCORE]:g}; " + (spans or "no error marked")


# -- the export ------------------------------------------------------------------------------


def answer_rows(database, study_id: str) -> list[dict]:
    """Each answer with its segment, its errors counted (major, minor, all) and its MQM score."""
    rows = answers.answer_rows(database, study_id, CORPUS, ("major", "minor"))
    for r in rows:
        r["n_errors"] = len(json.loads(r["spans"]))
    return rows


def segment_rows(database, study_id: str) -> list[dict]:
    return answers.segment_rows(database, study_id, CORPUS)


EXPORT_TABLES = {
    CORPUS.answers: ExportTable(
        answer_rows,
        "One row per MQM answer: the errors an annotator marked in one segment's translation, each "
        "with its category and severity, and the segment's MQM score computed from them by the "
        "study's weights (docs/mqm.md).",
        {
            **annotation.answer_head(CORPUS),
            "mqm": (
                "number",
                "the segment's MQM score from this annotator: the sum of its errors' weights (default: "
                "major 5, minor 1, minor Fluency/Punctuation 0.1, Non-translation 25, neutral 0; the "
                "study's taxonomy may set others); 0 without errors, lower is better",
            ),
            "spans": (
                "json",
                "the errors: [{start, end, text, severity, category, missing, side}], category "
                '"Category/Subcategory" of the study\'s taxonomy, severity one of its severities, start '
                "and end character offsets (code points, from 0, end exclusive) in mqm_segments.target, "
                "text the characters between them; an omission ([MISSING]) has missing true and start = "
                "end = the target's length; Non-translation spans the whole target and stands alone. A span "
                "marked on the output's audio (mqm_segments.target_audio) is {start_s, end_s, severity, "
                "category, missing, words} instead: start_s and end_s in seconds (0 <= start_s < end_s <= "
                "target_audio_s), words the indices in mqm_segments.target_words of the transcript words it "
                "overlaps for a positive time (empty without word times)",
            ),
            "n_major": ("integer", "major errors"),
            "n_minor": ("integer", "minor errors"),
            "n_errors": ("integer", "all errors marked, of any severity"),
            **attention.ANSWER_DICTIONARY,
            **annotation.ANSWER_TAIL,
        },
    ),
    CORPUS.segments: annotation.segments_export(CORPUS, segment_rows),
    CORPUS.qc: attention.export_table(CORPUS),
}


PROTOCOL = protocols.register(
    Protocol(
        name=NAME,
        roles=(
            Role(
                NAME,
                (NAME,),
                "MQM error annotation",
                SPANS.setup,
                items=SPANS.items,
                held_items=SPANS.held_items,  # the welcome counts the annotator's own HIT
                on_leave=SPANS.on_leave,  # an unfinished HIT is free again for the next annotator
                qc=SPANS.qc,  # the Finished list: the attention items' verdict and the tutorial
                seconds_per_item=60,  # the welcome's estimate per segment: a category per error beside ESA's 40 s
                label="MQM annotator",
            ),
        ),
        tabs=(
            Tab(
                NAME,
                (NAME,),
                "tabs.mqm:build",
                label="MQM errors",
                scripts=(*annotation.WAVESURFER, "assets/js/script/esa.js"),
                styles=("assets/css/esa.css", "assets/css/mqm.css"),
            ),
        ),
        phases=(
            Phase(
                NAME,
                content,
                validate,
                SPANS.save,
                SPANS.stored,
                label="MQM segment",
                answer_words=answer_words,
                after_save=SPANS.after_save,  # the HIT's last item: its attention items judged
                not_handed_on="an MQM HIT is annotated whole by one annotator: the next annotator added gets a HIT",
            ),
        ),
        defaults=DEFAULTS,
        check=check,
        load=CORPUS.load,
        prepare=CORPUS.prepare,
        corpus_files=("segments", "taxonomy_file"),
        store_corpus=CORPUS.store,
        count_corpus=CORPUS.count,
        count_collected=SPANS.collected,
        tables=TABLES,
        schema_version=3,  # 2: speech (the segments' audio columns); 3: quality control
        schema_steps=(annotation.speech_step(CORPUS, 2), attention.qc_step(CORPUS, 3)),
        export_tables=EXPORT_TABLES,
        analyze="services.esa.mqm_analysis:add_analyze",
        report_section="services.report.mqm:section",  # services/report sits above the protocols
        analysis_panel="tabs.analysis_mqm:panel",
        texts={
            "en": {
                "welcome_mqm": "Welcome. You will mark the errors in the translations of about {items} segments, "
                "document by document, each error with its category and severity. It takes about {minutes} "
                "minutes; you can stop and come back later with the same link."
            }
        },
    )
)
