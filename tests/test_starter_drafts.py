"""Paper 000's starter compilation (section 2.2, appendix B.1; issue 50, point 6): entries
sampled from a source corpus and rephrased by an LLM, or starters written by it for scenarios,
as drafts for a person's review, against the local OpenAI-compatible server answering as a
deterministic rephraser. The kept drafts are a valid starters.csv for the study's import."""

from __future__ import annotations

import csv
import os
import re
import shutil

import pytest

from harness.demo import DEMO_ASSETS
from services.study.files import load_study
from tests.helpers.app import run_cli
from tests.openai_server import OpenAIServer

ENTRIES = [
    ("b1", "Customer: I want to change my booking 4471 from Friday to Sunday, two nights, same room."),
    ("b2", "Customer: my card ending 9902 was charged twice for 35 euros on the 3rd of May."),
    ("b3", "Customer: the taxi for 7:30 tomorrow should go to terminal 2, not terminal 1."),
    ("b4", "Customer: can I add a second bag of 23 kilos to reservation QX55?"),
    ("b5", "Customer: {braces} and 100% of my order 12 never arrived."),
]
FILLER = (
    "I would be very grateful if you could look into this for me today, because it matters a lot to my "
    "family and me, and thank you so much for all of your help"
)


def respond(text: str, body: dict) -> str | None:
    """Rephrase: the entry in the first person with its first number marked, padded to about 45
    words; generate: a starter about the scenario with one marked detail; a junk answer for one
    scenario (too short, nothing marked) so the drafts show their problems."""
    if "Rewrite it as one conversation starter" in text:
        entry = text.split('"""')[1].strip().removeprefix("Customer:").strip()
        number = re.search(r"\d[\d:]*", entry).group(0)
        return "Hello, " + entry.replace(number, f"**{number}**", 1) + " " + FILLER + "."
    if "Write one conversation starter for this scenario" in text:
        scenario = text.split("scenario: ", 1)[1].split(".\n", 1)[0]
        if "junk" in scenario:
            return "Sure!"
        return (
            f"Hi, I am calling about {scenario}: I need it for **three people** at **6 pm** on Friday. " + FILLER + "."
        )
    return None


@pytest.fixture(scope="module")
def server():
    with OpenAIServer(models={"starter-llm"}, responder=respond) as srv:
        yield srv


def _env(server) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRADLAB_LLM_")}
    return {**env, "TRADLAB_LLM_BASE_URL": server.base_url, "TRADLAB_LLM_MODEL": "starter-llm"}


def _rows(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_sampled_entries_rephrased_then_imported_after_review(server, tmp_path):
    corpus = tmp_path / "bcontrast.csv"
    with corpus.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "text"])
        w.writerows(ENTRIES)
    out = tmp_path / "drafts.csv"
    args = ["starters", "rephrase", "--corpus", corpus, "--n", 3, "--domain", "everyday"]
    res = run_cli(*args, "--corpus-name", "BConTrasT", "--prefix", "bc-", "--seed", 4, "--out", out, env=_env(server))
    assert res.returncode == 0, res.stderr
    drafts = _rows(out)
    assert (
        len(drafts) == 3
        and {d["source"] for d in drafts} == {"natural"}
        and {d["domain"] for d in drafts} == {"everyday"}
    )
    ids = [d["id"] for d in drafts]
    assert ids == sorted(ids, key=lambda i: [e[0] for e in ENTRIES].index(i.removeprefix("bc-")))  # corpus order
    # seeded: the same sample again; the paper's sampling temperature and system prompt were sent
    again = tmp_path / "again.csv"
    run_cli(*args, "--corpus-name", "BConTrasT", "--prefix", "bc-", "--seed", 4, "--out", again, env=_env(server))
    assert [d["id"] for d in _rows(again)] == ids
    chats = [r.json for r in server.requests if r.path.endswith("/chat/completions")]
    assert chats and all(c["temperature"] == 0.9 for c in chats)
    assert "specialized in generating high-quality synthetic data" in str(chats[-1]["messages"])
    for d in drafts:
        original = dict(ENTRIES)[d["id"].removeprefix("bc-")]
        assert d["original"] == original and "**" not in d["text"]
        assert d["key_spans"] and d["key_spans"] in d["text"] and d["key_spans"] in original
        assert int(d["words"]) == len(d["text"].split()) and d["problems"] == ""
    # the reviewer keeps them: the study's import reads them as starters (their questions are then
    # generated and reviewed in the app: a [questions] section)
    study = shutil.copytree(DEMO_ASSETS, tmp_path / "study")
    toml = (study / "study.toml").read_text(encoding="utf-8")
    (study / "study.toml").write_text(toml + ("" if "\n[questions]" in toml else "\n[questions]\n"), encoding="utf-8")
    with (study / "starters.csv").open("a", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(
            f, fieldnames=["id", "domain", "source", "corpus", "text", "key_spans"], extrasaction="ignore"
        )
        w.writerows(drafts)
    bundle = load_study(study)
    assert set(ids) <= {s["id"] for s in bundle.corpus["usability"]["starters"]}


def test_generated_starters_carry_their_problems_and_bad_input_is_refused(server, tmp_path):
    out = tmp_path / "gen.csv"
    res = run_cli(
        "starters",
        "generate",
        "--n",
        3,
        "--domain",
        "health",
        "--corpus-name",
        "llm-synthetic",
        "--scenario",
        "a pharmacy visit for a cough",
        "--scenario",
        "junk",
        "--out",
        out,
        env=_env(server),
    )
    assert res.returncode == 0, res.stderr
    assert "3 draft starter(s)" in res.stdout and "1 need a fix" in res.stdout
    drafts = _rows(out)
    assert [d["source"] for d in drafts] == ["synthetic"] * 3
    assert drafts[0]["key_spans"] == "three people|6 pm" and drafts[0]["problems"] == ""
    assert drafts[1]["problems"] == "1 words (40-60 wanted); no key information marked"
    assert "a pharmacy visit for a cough" in drafts[2]["text"]  # the scenarios in turn
    # a corpus without a text column, and more entries than it has: refused, nothing written
    bad = tmp_path / "bad.csv"
    bad.write_text("id,utterance\n1,hello\n", encoding="utf-8")
    for corpus, n, message in ((bad, 1, "no `text` column"), (tmp_path / "nope.csv", 1, "no such file")):
        res = run_cli(
            "starters",
            "rephrase",
            "--corpus",
            corpus,
            "--n",
            n,
            "--domain",
            "health",
            "--corpus-name",
            "X",
            "--out",
            tmp_path / "x.csv",
            env=_env(server),
        )
        assert res.returncode != 0 and message in res.stderr
    assert not (tmp_path / "x.csv").exists()
    no_llm = {k: v for k, v in os.environ.items() if not k.startswith("TRADLAB_LLM_")}
    res = run_cli(
        "starters",
        "generate",
        "--n",
        1,
        "--domain",
        "health",
        "--corpus-name",
        "X",
        "--scenario",
        "s",
        "--out",
        tmp_path / "y.csv",
        env=no_llm,
    )
    assert res.returncode != 0 and "TRADLAB_LLM_MODEL" in res.stderr
