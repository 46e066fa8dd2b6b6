"""services/qe/gate_gente.py: GATE and GeNTE files (paper 003's other two benchmarks) to PAIRS.

The literal files below follow the public formats: GATE's two-variant files
(github.com/MicrosoftTranslator/GATE, e.g. data/test_set/IT/IT_2_variants.txt: tab-separated,
header "labels source f m kw_s kw_f kw_m", quotes as plain characters) and GeNTE.tsv
(huggingface.co/datasets/FBK-MT/GeNTE: tab-separated, ID, SET (Set-N / Set-G), SRC, REF-G, REF-N,
GENDER). The sentences are written here, not copied from the datasets."""

from __future__ import annotations

import pytest

from services.qe import audit as qe_audit
from services.qe import gate_gente as GG

GATE_IT = (
    "labels\tsource\tf\tm\tkw_s\tkw_f\tkw_m\n"
    "PROF;SUBJ\tThe baker opened the shop early.\tLa fornaia ha aperto il negozio presto.\t"
    "Il fornaio ha aperto il negozio presto.\t[baker]\tla [fornaia]\til [fornaio]\n"
    'DOBJ;PROF\tI called the "best" plumber in town.\tHo chiamato la "migliore" idraulica della città.\t'
    'Ho chiamato il "migliore" idraulico della città.\t[plumber]\tla [idraulica]\til [idraulico]\n'
    "SUBJ;OTH;PLUR\tThe neighbours are kind.\tLe vicine sono gentili.\tI vicini sono gentili.\t"
    "[neighbours]\tle [vicine]\ti [vicini]\n"
)

GENTE = (
    "ID\teuroparl_ID\tSET\tSRC\tREF-G\tREF-N\tGENDER\n"
    "1\tep-1\tSet-N\tThe citizens have asked for answers.\tI cittadini hanno chiesto risposte.\t"
    "La cittadinanza ha chiesto risposte.\t-\n"
    "2\tep-2\tSet-G\tMrs Rossi, as rapporteur, thanked the members.\tLa onorevole Rossi, in qualità di relatrice, "
    "ha ringraziato i deputati.\tLa onorevole Rossi, in qualità di persona relatrice, ha ringraziato i membri "
    "del Parlamento.\tF\n"
    "3\tep-3\tSet-G\tMr Bianchi, as rapporteur, spoke first.\tL'onorevole Bianchi, in qualità di relatore, ha "
    "parlato per primo.\tL'onorevole Bianchi, in qualità di persona relatrice, ha parlato per primo.\tM\n"
    '4\tep-4\tSet-N\tWorkers deserve "fair" pay.\tI lavoratori meritano una paga "equa".\t'
    'Chi lavora merita una paga "equa".\t-\n'
)


@pytest.fixture
def gate_repo(tmp_path):
    folder = tmp_path / "GATE" / "data" / "test_set" / "IT"
    folder.mkdir(parents=True)
    (folder / "IT_2_variants.txt").write_text(GATE_IT, encoding="utf-8")
    return tmp_path / "GATE"


def test_gate_two_variant_file_to_ambiguous_pairs(gate_repo):
    d = GG.gate(gate_repo, "it")
    assert list(d["instance_id"]) == ["gate-test-00002", "gate-test-00003", "gate-test-00004"]
    assert set(d["lang"]) == {"it"} and "gold" not in d.columns
    assert d.loc[1, "source"] == 'I called the "best" plumber in town.'  # quotes kept as text
    assert d.loc[1, "hyp_f"].startswith('Ho chiamato la "migliore" idraulica')
    assert d.loc[0, "hyp_m"] == "Il fornaio ha aperto il negozio presto." and d.loc[0, "labels"] == "PROF;SUBJ"
    assert d.attrs["gate"]["instances"] == 3
    pairs = qe_audit.read_pairs(d)  # a valid PAIRS frame, F/M, ambiguous
    assert qe_audit.contrast_of(pairs) == "F/M" and not qe_audit.has_gold(pairs)
    # the file itself is accepted too; a missing one names the expected layout
    assert len(GG.gate(gate_repo / "data" / "test_set" / "IT" / "IT_2_variants.txt", "it")) == 3
    with pytest.raises(GG.BenchmarkMissing, match="data/test_set/ES/ES_2_variants.txt"):
        GG.gate(gate_repo, "es")
    with pytest.raises(ValueError, match="no language"):
        GG.gate(gate_repo, "pt")


def test_gate_missing_column_is_named(tmp_path):
    p = tmp_path / "IT_2_variants.txt"
    p.write_text("labels\tsource\tf\nX\ta\tb\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no column 'm'"):
        GG.gate(p, "it")


@pytest.fixture
def gente_file(tmp_path):
    p = tmp_path / "GeNTE.tsv"
    p.write_text(GENTE, encoding="utf-8")
    return p


def test_gente_set_n_is_the_default(gente_file):
    d = GG.gente(gente_file.parent)
    assert list(d["instance_id"]) == ["gente-1", "gente-4"]
    assert set(d["lang"]) == {"it"} and set(d["set"]) == {"set-n"} and "gold" not in d.columns
    assert d.loc[0, "hyp_n"] == "La cittadinanza ha chiesto risposte."
    assert d.loc[0, "hyp_g"] == "I cittadini hanno chiesto risposte."
    assert d.loc[1, "source"] == 'Workers deserve "fair" pay.'
    pairs = qe_audit.read_pairs(d)
    assert qe_audit.contrast_of(pairs) == "N/G"


def test_gente_set_g_carries_the_referents_gender(gente_file):
    d = GG.gente(gente_file, subset="set-g")
    assert list(d["gold"]) == ["F", "M"] and list(d["instance_id"]) == ["gente-2", "gente-3"]
    scored = d.assign(score_n=[0.7, 0.8], score_g=[0.9, 0.85])
    table = qe_audit.ratios(scored)
    assert set(table["source_gender"]) == {"any", "F", "M"}  # Figure 7b: by gender
    row = table[(table["lang"] == "it") & (table["source_gender"] == "F")].iloc[0]
    assert row["mean_ratio"] == pytest.approx(0.7 / 0.9)
    assert len(GG.gente(gente_file, subset="all")) == 4
    with pytest.raises(ValueError, match="subset"):
        GG.gente(gente_file, subset="set-x")
    with pytest.raises(GG.BenchmarkMissing):
        GG.gente(gente_file.parent / "nowhere")


def test_the_command_line_converts_gate_and_gente(gate_repo, gente_file, tmp_path, capsys):
    """`python app.py data gate|gente` writes the PAIRS file the audit reads, and names what is
    missing."""
    import cli

    out = tmp_path / "gate.csv"
    assert cli.main(["data", "gate", "--root", str(gate_repo), "--lang", "it", "--out", str(out)]) == 0
    assert len(qe_audit.read_pairs(out)) == 3 and "GATE en-it, test" in capsys.readouterr().out
    out = tmp_path / "gente.csv"
    assert cli.main(["data", "gente", "--root", str(gente_file.parent), "--subset", "set-g", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "GeNTE set-g" in printed and len(qe_audit.read_pairs(out)) == 2
    assert (
        cli.main(
            ["data", "gate", "--root", str(tmp_path / "nowhere"), "--lang", "es", "--out", str(tmp_path / "x.csv")]
        )
        == 2
    )
    assert "ES_2_variants" in capsys.readouterr().err
