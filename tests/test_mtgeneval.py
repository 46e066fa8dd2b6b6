"""services.qe.mtgeneval: the converter on small literal files, and on the real en-pt data when
/work/shared/data/mt-geneval is present (skipped otherwise)."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.qe import audit as Q
from services.qe import mtgeneval as G

REAL = Path("/work/shared/data/mt-geneval/data")

CONTEXT_2TO1 = [
    "She studied painting in Paris. <sep> Vega is an artist.",
    "He taught for thirty years. <sep> Lopes was a teacher.",
    "In 1990 the museum opened. <sep> The author donated the collection.",  # no pronoun
    "Her husband was a doctor. <sep> Ruiz became a writer.",  # target decides M
    "The building was sold. <sep> Costa was an employee.",  # nothing decides
]
ORIGINAL = [
    "Vega é uma artista.",
    "Lopes foi um professor.",
    "A autora doou a coleção.",
    "Ruiz tornou-se um escritor.",
    "Costa era funcionário.",
]
FLIPPED = [
    "Vega é um artista.",
    "Lopes foi uma professora.",
    "O autor doou a coleção.",
    "Ruiz tornou-se uma escritora.",
    "Costa era funcionário .",
]


def write(path: Path, lines) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def root(tmp_path):
    c = tmp_path / "data" / "context"
    write(c / "geneval-context-wikiprofessions-2to1-test.en_pt.en", CONTEXT_2TO1)
    write(c / "geneval-context-wikiprofessions-original-test.en_pt.pt", ORIGINAL)
    write(c / "geneval-context-wikiprofessions-flipped-test.en_pt.pt", FLIPPED)
    s = tmp_path / "data" / "sentences" / "test"
    write(s / "geneval-sentences-feminine-test.en_pt.en", ["She is a nurse.", "The actress herself sang."])
    write(s / "geneval-sentences-masculine-test.en_pt.en", ["He is a nurse.", "The actor himself sang."])
    write(s / "geneval-sentences-feminine-test.en_pt.pt", ["Ela é enfermeira.", "A própria atriz cantou."])
    write(s / "geneval-sentences-masculine-test.en_pt.pt", ["Ele é enfermeiro.", "O próprio ator cantou."])
    return tmp_path  # the repository folder; convert() finds data/ inside


def test_gender_signals():
    assert G.context_gender("She said he was late; her book and her film.") == "F"
    assert G.context_gender("His wife said he left.") == "M"
    assert G.context_gender("Hershey is a town.") == ""  # whole words only
    assert G.context_gender("He met her.") == ""  # a tie
    assert G.reference_gender("Ela é uma boa médica.", "Ele é um bom médico.", "pt") == "F"
    assert G.reference_gender("O autor", "A autora", "pt") == "M"
    assert G.reference_gender("una cirujana", "un cirujano", "es") == "F"
    assert G.reference_gender("l'autore è un pittore", "l'autrice è una pittrice", "it") == "M"
    assert G.reference_gender("le professoresse", "i professori", "it") == "F"
    assert G.reference_gender("une étudiante", "un étudiant", "fr") == "F"
    assert G.reference_gender("perguntou à Bakhita", "perguntou a Bakhita", "pt") == ""  # no gender pair
    assert G.reference_gender("Er ist Arzt.", "Sie ist Ärztin.", "de") == ""  # no rules for de


def test_contextual_unambiguous(root):
    d = G.convert(root, "pt", "contextual", "test", "unambiguous")
    # line 5 (nothing decides) is dropped; line 4's pronoun (her husband -> F) conflicts with the
    # masculine original and is left out of the unambiguous setting
    assert list(d["line"]) == [1, 2, 3]
    assert list(d["gold"]) == ["F", "M", "F"]
    assert list(d["source"]) == ["Vega is an artist.", "Lopes was a teacher.", "The author donated the collection."]
    assert list(d["context"]) == [
        "She studied painting in Paris.",
        "He taught for thirty years.",
        "In 1990 the museum opened.",
    ]
    assert list(d["hyp_f"]) == ["Vega é uma artista.", "Lopes foi uma professora.", "A autora doou a coleção."]
    assert list(d["hyp_m"]) == ["Vega é um artista.", "Lopes foi um professor.", "O autor doou a coleção."]
    assert list(d["gender_evidence"]) == ["target+context", "target+context", "target"]
    assert list(d["instance_id"]) == ["ctx-test-0001", "ctx-test-0002", "ctx-test-0003"]
    counts = d.attrs["mtgeneval"]
    assert (counts["lines"], counts["conflict"], counts["undecided"], counts["instances"]) == (5, 1, 1, 3)
    kept = G.convert(root, "pt", "contextual", "test", "unambiguous", keep_conflicts=True)
    row = kept[kept["line"] == 4].iloc[0]
    assert row["gold"] == "M" and row["hyp_m"] == "Ruiz tornou-se um escritor."
    assert row["gender_evidence"] == "target (context disagrees)"
    # a valid PAIRS frame for the audit
    pairs = Q.read_pairs(d)
    assert list(pairs.columns) == ["instance_id", "lang", "source", "hyp_f", "hyp_m", "gold", "context"]


def test_contextual_ambiguous(root):
    d = G.convert(root / "data", "pt", "contextual", "test", "ambiguous")
    assert "gold" not in d.columns and "context" not in d.columns
    assert list(d["line"]) == [1, 2, 3, 4]  # conflicts stay: hyp_f/hyp_m follow the target grammar
    assert d.loc[3, "hyp_f"] == "Ruiz tornou-se uma escritora."
    assert "gold" not in Q.read_pairs(d).columns


def test_counterfactual(root):
    d = G.convert(root, "pt", "counterfactual", "test")
    assert list(d["instance_id"]) == ["cf-test-0001-F", "cf-test-0001-M", "cf-test-0002-F", "cf-test-0002-M"]
    assert list(d["gold"]) == ["F", "M", "F", "M"]
    assert list(d["source"]) == [
        "She is a nurse.",
        "He is a nurse.",
        "The actress herself sang.",
        "The actor himself sang.",
    ]
    assert list(d["hyp_f"]) == ["Ela é enfermeira."] * 2 + ["A própria atriz cantou."] * 2
    assert list(d["hyp_m"]) == ["Ele é enfermeiro."] * 2 + ["O próprio ator cantou."] * 2
    with pytest.raises(ValueError, match="only the 'unambiguous'"):
        G.convert(root, "pt", "counterfactual", "test", "ambiguous")


def test_missing_and_misaligned_files(root, tmp_path):
    with pytest.raises(G.MTGenEvalMissing, match=r"contextual test files for en-it not found.*2to1-test\.en_it\.en"):
        G.convert(root, "it", "contextual")
    with pytest.raises(G.MTGenEvalMissing, match="sentences/dev/geneval-sentences-feminine-dev.en_pt.en"):
        G.convert(root, "pt", "counterfactual", "dev")
    with pytest.raises(FileNotFoundError):
        G.convert(tmp_path / "nowhere", "pt", "contextual")
    write(root / "data" / "context" / "geneval-context-wikiprofessions-flipped-test.en_pt.pt", FLIPPED[:4])
    with pytest.raises(ValueError, match="not line-aligned"):
        G.convert(root, "pt", "contextual")
    with pytest.raises(ValueError, match="unknown MT-GenEval subset"):
        G.convert(root, "pt", "sentences")
    with pytest.raises(ValueError, match="unknown setting"):
        G.convert(root, "pt", "contextual", setting="both")


def test_separator_checked(root):
    bad = CONTEXT_2TO1[:]
    bad[1] = "No separator here."
    write(root / "data" / "context" / "geneval-context-wikiprofessions-2to1-test.en_pt.en", bad)
    with pytest.raises(ValueError, match=r"line 2: expected 'context <sep> sentence'"):
        G.convert(root, "pt", "contextual")


def test_gender_decision_is_mt_genevals_rule():
    fem, masc = "Ela é uma boa médica.", "Ele é um bom médico."
    ok, right, wrong = G.gender_decision("Ela é uma médica excelente.", fem, masc)
    assert ok and right == {"ela", "uma", "médica"} and wrong == set()
    ok, right, wrong = G.gender_decision("Ela é um médico.", fem, masc)
    assert not ok and wrong == {"um", "médico"}
    # no gendered word at all: correct under the script's rule, not under the stricter one
    assert G.gender_decision("É excelente.", fem, masc)[0]
    assert not G.gender_decision("É excelente.", fem, masc, require_correct=True)[0]


@pytest.mark.skipif(not REAL.is_dir(), reason="MT-GenEval data not present")
def test_real_en_pt_data():
    amb = G.convert(REAL, "pt", "contextual", "test", "ambiguous")
    una = G.convert(REAL, "pt", "contextual", "test", "unambiguous")
    cf = G.convert(REAL, "pt", "counterfactual", "test")
    assert amb.attrs["mtgeneval"]["lines"] == 1089
    assert len(amb) >= 1080 and 1000 <= len(una) <= len(amb)
    assert set(una["gold"]) == {"F", "M"} and abs((una["gold"] == "F").mean() - 0.5) < 0.1
    assert len(cf) == 600 and (cf["gold"] == "F").sum() == 300
    for d in (amb, una, cf):
        Q.read_pairs(d)
        assert (d["hyp_f"] != d["hyp_m"]).mean() > 0.99
    # the target rule never mislabels the counterfactual references, whose gender is known
    lines = G.counterfactual_lines(REAL, "pt")
    assert {G.reference_gender(r.ref_f, r.ref_m, "pt") for r in lines.itertuples()} <= {"F", ""}
