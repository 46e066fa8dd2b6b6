"""A protocol's page code and admin hooks, in process (issue 52): its tabs' scripts and stylesheets
go to its role's page only (web.app.page_assets), checked when it registers; phase and role labels
come from the registry (Phase.label, Role.label, else the name humanised); the admin's "A
participant" page lists a plugin phase's items with their answers in words (Phase.answer_words,
else the stored answer's JSON); and a protocol's own commands join the command line and its
generated reference (Protocol.cli). The plugin is tests/plugins/proof/; its page in a browser
is tests/test_plugin_proof.py."""

from __future__ import annotations

import dataclasses
import json

import pytest

import cli
from harness.app import run_cli
from services.admin.participant_view import participant_view
from services.common import protocols
from services.participation.items import get_view
from services.participation.submissions import SubmissionError, submit
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from storage import open_database
from tests.plugins import proof
from web.app import page_assets

TEXT = "The cat sit on teh mat."


@pytest.fixture
def registered():
    protocols.register(proof.PROTOCOL)
    yield proof.PROTOCOL
    protocols.unregister(proof.NAME)


@pytest.fixture
def study(registered, tmp_path):
    database = open_database(tmp_path / "h.db", schemas=protocols.schemas())  # its tables made
    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "study.toml").write_text(
        '[study]\nid = "esa"\nname = "Spans"\nprotocols = ["proof"]\nseed = 1\n\n[proof]\nsegments = "s.csv"\n',
        encoding="utf-8",
    )
    (folder / "s.csv").write_text(f"id,source,target\nt1,Le chat est assis sur le tapis.,{TEXT}\n", encoding="utf-8")
    import_study(database, folder)
    return database


def test_labels_come_from_the_registry_and_default_to_the_name_humanised(registered):
    assert [protocols.phase_label(p) for p in ("record", "survey_informed", "da", "sd", "proof")] == [
        "recording",
        "survey (informed)",
        "DA judgment",
        "SD page",
        "error spans",
    ]
    assert (protocols.role_label("proof"), protocols.role_label("sender")) == ("span annotator", "sender")
    assert protocols.phase_label("no_such_phase") == "no such phase"  # of a study stored before
    plain = dataclasses.replace(
        proof.PROTOCOL,
        roles=tuple(dataclasses.replace(r, label="") for r in proof.PROTOCOL.roles),
        phases=tuple(dataclasses.replace(p, label="", name="span_marks") for p in proof.PROTOCOL.phases),
        tabs=tuple(dataclasses.replace(t, phases=("span_marks",)) for t in proof.PROTOCOL.tabs),
    )
    protocols.register(plain)
    assert (protocols.phase_label("span_marks"), protocols.role_label("proof")) == ("span marks", "proof")


def test_a_plugin_phase_is_shown_with_its_label_and_its_answer_in_words(study):
    database = study
    (p,) = add_participants(database, "esa", "proof", 1)
    view = get_view(database, p.token, "proof")
    answer = {"spans": json.dumps([{"start": 4, "end": 7, "severity": "minor"}]), "score": 70}
    assert submit(database, p.token, "proof", view.item_id, answer).saved
    shown = participant_view(database, "esa", str(p.id))
    assert shown.role_label == "span annotator"
    (item,) = shown.items
    assert (item["phase_label"], item["what"], item["status"]) == ("error spans", "item t1", "done")
    assert item["answer"] == 'score 70; minor 4-7 "cat"'
    # a phase without answer_words: its stored answer as compact JSON
    protocols.register(
        dataclasses.replace(
            proof.PROTOCOL,
            phases=tuple(dataclasses.replace(x, answer_words=None) for x in proof.PROTOCOL.phases),
        )
    )
    (item,) = participant_view(database, "esa", str(p.id)).items
    assert item["answer"] == '{"score":70,"spans":[{"end":7,"severity":"minor","start":4}]}'


@pytest.mark.parametrize(
    "spans, words",
    [
        ([{"start": 20, "end": 24, "severity": "minor"}], "Span 1 (20-24) is outside the sentence's 23 characters."),
        ([{"start": 3, "end": 3, "severity": "major"}], "Span 1 (3-3) is outside the sentence's 23 characters."),
        (
            [{"start": 4, "end": 8, "severity": "minor"}, {"start": 6, "end": 10, "severity": "major"}],
            "Spans 4-8 and 6-10 overlap: mark each error once.",
        ),
        ([{"start": 4, "end": 8, "severity": "bad"}], "Span 1 is not a start, an end and minor or major."),
    ],
)
def test_spans_out_of_range_or_overlapping_are_refused_by_name(study, spans, words):
    database = study
    (p,) = add_participants(database, "esa", "proof", 1)
    view = get_view(database, p.token, "proof")
    with pytest.raises(SubmissionError) as e:
        submit(database, p.token, "proof", view.item_id, {"spans": json.dumps(spans), "score": 40})
    assert str(e.value) == words and e.value.fields == {"spans": words}
    assert (
        database.scalar("SELECT COUNT(*) FROM proof_answers")
        == database.scalar("SELECT COUNT(*) FROM proof_spans")
        == 0
    )


def test_a_tabs_page_code_goes_to_its_role_page_only(registered, tmp_path):
    opts = page_assets("proof", {"css_paths": ["assets/style.css"]})
    assert [str(p) for p in opts["css_paths"]] == ["assets/style.css", str(proof.HERE / "proof.css")]
    script = (proof.HERE / "proof.js").read_text(encoding="utf-8")
    assert opts["head"].count("<script") == 1 and script in opts["head"]
    assert 'data-page-asset="proof.js"' in opts["head"]
    # a built-in tab's stylesheet is declared the same way: the semantic differential's layout
    sd = page_assets("sd", {"css_paths": ["assets/style.css"]})
    assert sd == {"css_paths": ["assets/style.css", protocols.ROOT / "assets" / "css" / "sd.css"]}
    assert ".sd-row" not in (protocols.ROOT / "assets" / "style.css").read_text(encoding="utf-8")
    # and ESA's script and stylesheet (services/esa/protocol.py), as a plugin's
    esa = page_assets("esa", {"css_paths": ["assets/style.css"]})
    assert esa["css_paths"] == ["assets/style.css", protocols.ROOT / "assets" / "css" / "esa.css"]
    # (with the vendored waveform library and its regions plugin for speech outputs, first)
    assert esa["head"].count("<script") == 3 and 'data-page-asset="esa.js"' in esa["head"]
    assert esa["head"].index('data-page-asset="wavesurfer.min.js"') < esa["head"].index('data-page-asset="esa.js"')
    for role in protocols.roles():
        if role not in ("proof", "sd", "esa", "mqm", "sxs", "listening"):  # MQM: ESA's script and mqm.css
            assert page_assets(role, {"css_paths": ["assets/style.css"]}) == {}, role
    # what is not a script or stylesheet file is refused when the protocol registers
    tab = proof.PROTOCOL.tabs[0]
    for bad, words in (
        ({"scripts": (tmp_path / "missing.js",)}, "scripts .*missing.js' is not a .js file"),
        ({"styles": (proof.HERE / "proof.js",)}, "styles .*proof.js' is not a .css file"),
    ):
        other = dataclasses.replace(proof.PROTOCOL, tabs=(dataclasses.replace(tab, **bad),))
        with pytest.raises(ValueError, match=f"protocol 'proof': tab proof's {words}"):
            protocols.register(other)
    # a script that would end its <script> element is refused by its file's name
    from tabs.static import page_head

    closing = tmp_path / "closing.js"
    closing.write_text("console.log('</script>');\n", encoding="utf-8")
    with pytest.raises(ValueError, match="closing.js: a page script may not hold '</script'"):
        page_head((closing,))


def test_a_protocols_commands_join_the_command_line_and_its_reference(registered, tmp_path):
    assert "proof-summary" in cli._command_names(cli.build_parser())
    assert "proof-summary" not in cli._command_names(cli.build_parser(protocol_commands=False))
    assert "### `python app.py proof-summary`" in cli.cli_markdown()
    assert "- `--study`: the study's id" in cli.cli_markdown()
    env = {"TRADLAB_DB": str(tmp_path / "a.db"), "TRADLAB_MEDIA": str(tmp_path / "m"), "PATH": "/usr/bin"}
    res = run_cli("proof-summary", "--study", "none", env=env)
    assert (res.returncode, res.stdout) == (0, "study none: no answers yet\n")
    # a name the command line has is refused with the protocol's name
    taken = dataclasses.replace(proof.PROTOCOL, cli=lambda sub: sub.add_parser("export", help="a second export"))
    protocols.register(taken)
    with pytest.raises(ValueError, match="protocol 'proof' adds a command the command line has: .*export"):
        cli.build_parser()
