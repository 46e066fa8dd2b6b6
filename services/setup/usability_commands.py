"""The usability study's commands of `python app.py` (its spec's cli hook): `starters` (drafts
for a person's review, paper 000 section 2.2), `questions generate` (comprehension questions as
drafts) and `metrics auto-qa` (the LLM question-answering score of every exchange)."""

from __future__ import annotations

import sys

from tqdm import tqdm

from services.common import protocols
from services.metrics import exchange as exchange_metrics
from services.models import llm as llm_service
from services.models.backends import BackendUnavailable
from services.questions import gen as questions_gen
from services.usability import starter_drafts
from storage import open_database


def refused(e: Exception) -> int:
    """What cannot be done: the reason on stderr, exit status 2 (as every command of app.py)."""
    print(f"error: {e}", file=sys.stderr)
    return 2


def open_db(settings):
    """The app database as every command opens it: migrated, the registered protocols' tables too."""
    return open_database(settings.db_path, settings.journal_mode, protocols.schemas())


def progress_bar(desc: str):
    """A tqdm bar on stderr driven by progress(done, total[, label]) callbacks."""
    bar = None

    def update(done, total, label=""):
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, desc=desc, unit="item", file=sys.stderr)
        bar.n = done
        bar.set_postfix_str(str(label or ""), refresh=False)
        bar.refresh()
        if done >= total:
            bar.close()

    return update


def cmd_starters(args, settings):
    """Conversation starters drafted by an LLM for a person's review (paper 000, section 2.2)."""
    try:
        model = llm_service.get(None, temperature=starter_drafts.TEMPERATURE, seed=args.seed, max_tokens=256)
        if args.action == "rephrase":
            entries = starter_drafts.sample(starter_drafts.read_corpus(args.corpus), args.n, args.seed)
            drafts = starter_drafts.rephrased(model, entries, args.domain, args.corpus_name, args.what, args.prefix)
        else:
            drafts = starter_drafts.generated(
                model, args.n, args.domain, args.corpus_name, args.scenario or [], args.prefix
            )
    except (starter_drafts.StarterDraftError, BackendUnavailable) as e:
        return refused(e)
    out = starter_drafts.write(drafts, args.out)
    failing = sum(1 for d in drafts if d.problems())
    print(
        f"{out}: {len(drafts)} draft starter(s) by {model.name}; {failing} need a fix (see `problems`). "
        "Review every one, then save the kept rows as the study's starters.csv."
    )
    return 0


def cmd_questions(args, settings):
    database = open_db(settings)
    try:
        report = questions_gen.generate(
            database, args.study, n=args.n, starter_id=args.starter, progress=progress_bar("starters")
        )
    except (BackendUnavailable, ValueError) as e:
        return refused(e)
    for s in report.starters:
        print(s.summary())
    print(report.summary())
    return 0


def cmd_metrics(args, settings):
    database = open_db(settings)
    try:
        out = exchange_metrics.score_auto_qa(database, args.study, progress=progress_bar("exchanges"))
    except (BackendUnavailable, ValueError) as e:
        return refused(e)
    mean = "-" if out["mean"] is None else f"{out['mean']:.3f}"
    print(
        f"auto-qa: {out['scored']} of {out['exchanges']} exchanges scored (mean {mean}); {out['none']} without "
        "a score (no accepted questions, or none answerable from the starter)"
    )
    return 0


def add_commands(sub) -> None:
    """Protocol.cli: the commands above, added to app.py's subcommands."""
    qs = sub.add_parser("questions", help="comprehension questions written by an LLM, as drafts to review")
    qsub = qs.add_subparsers(dest="action", required=True)
    qg = qsub.add_parser("generate", help="drafts for starters without questions (review them in the Admin tab)")
    qg.set_defaults(func=cmd_questions)
    qg.add_argument("--study", required=True)
    qg.add_argument("--n", type=int, help="questions per starter, 1-10 (default: the study's [questions] n, 10)")
    qg.add_argument("--starter", help="only this starter (new questions differ from its existing ones)")
    st = sub.add_parser("starters", help="conversation starters drafted by an LLM, for a person's review")
    ssub = st.add_subparsers(dest="action", required=True)
    sr = ssub.add_parser("rephrase", help="entries sampled from a corpus, rephrased into starters (source natural)")
    sr.add_argument("--corpus", required=True, help="CSV with a text column (and id), or JSONL with text")
    sr.add_argument("--n", type=int, required=True, help="entries to sample (the paper: 50 a corpus)")
    sr.add_argument("--what", default="customer support dialogues", help="what the corpus holds, for the prompt")
    sg = ssub.add_parser("generate", help="starters written by the LLM for scenarios (source synthetic)")
    sg.add_argument("--n", type=int, required=True, help="starters to write (the paper: 50 per LLM and domain)")
    sg.add_argument("--scenario", action="append", help="a scenario, repeatable (taken in turn)")
    for sp_ in (sr, sg):
        sp_.set_defaults(func=cmd_starters)
        sp_.add_argument("--domain", required=True, choices=["health", "everyday"])
        sp_.add_argument("--corpus-name", required=True, help="the starters' corpus column (e.g. BConTrasT)")
        sp_.add_argument("--prefix", default="", help="prepended to each draft's id")
        sp_.add_argument("--seed", type=int, default=0)
        sp_.add_argument("--out", required=True, help="the drafts CSV to review")
    mt = sub.add_parser("metrics", help="compute an exchange metric for a whole study")
    msub = mt.add_subparsers(dest="metric", required=True)
    maq = msub.add_parser("auto-qa", help="LLM question answering: source vs translation, per exchange")
    maq.set_defaults(func=cmd_metrics)
    maq.add_argument("--study", required=True)
