"""The command line: `python app.py` serves the app (web/); subcommands import studies, manage
participants, run the analyses and convert data sets. Each subcommand registers its handler
(set_defaults(func=...)); handlers get (args, settings) and open the database through open_db.
The rules they apply live in services/; this module only parses, calls and prints."""

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
DESCRIPTION = "The study app: `python app.py` serves it; subcommands import studies and manage participants."


def refused(e: Exception) -> int:
    """A command that cannot do what it was asked: the reason on stderr, exit status 2."""
    print(f"error: {e}", file=sys.stderr)
    return 2


def open_db(settings):
    """The app database, migrated (the core's tables and each registered protocol's own), in the
    configured journal mode (every command opens it here)."""
    from services.common import protocols
    from storage import open_database

    return open_database(settings.db_path, settings.journal_mode, protocols.schemas())


def cmd_serve(args, settings):
    from web.serving import serve

    return serve(args, settings, lambda: open_db(settings))


def cmd_import(args, settings):
    from services.setup.importer import import_study
    from services.study.files import StudyValidationError

    database = open_db(settings)
    try:
        res = import_study(database, args.folder)
    except StudyValidationError as e:
        print(f"Nothing was imported: {len(e.errors)} problem(s) in {args.folder}", file=sys.stderr)
        for err in e.errors:
            print(f"  {err}", file=sys.stderr)
        return 2
    print(res.summary())
    for note in res.notes:  # what the design needs to finish (services/usability/plan.py)
        print(f"  {note}")
    from services.admin.participants import prolific_summary, prolific_text, prolific_urls

    urls = prolific_urls(database, res.study_id, settings.public_url)
    if urls:  # what each Prolific study is given (docs/deployment.md)
        print(prolific_summary(urls))
        print(prolific_text(urls))
    return 0


def cmd_study(args, settings):
    from services.study import lifecycle

    database = open_db(settings)
    actor = "cli"
    try:
        if args.action == "archive":
            print(lifecycle.archive(database, args.study_id, actor))
        elif args.action == "unarchive":
            print(lifecycle.unarchive(database, args.study_id, actor))
        else:
            question, answers = lifecycle.deletion_question(database, args.study_id)
            if not args.yes:  # the question, and how to answer it
                print(question, file=sys.stderr)
                print(f"Nothing was deleted: run again with --yes to delete '{args.study_id}'.", file=sys.stderr)
                return 2
            print(lifecycle.delete(database, args.study_id, actor, answers))
    except lifecycle.LifecycleError as e:
        return refused(e)
    return 0


def cmd_repair(args, settings):
    from services.admin import progress as admin_progress

    print(admin_progress.repair_workflow(open_db(settings), args.study))
    return 0


def cmd_participants_add(args, settings):
    from services.setup.enrolment import ParticipantError, add_from_csv, add_participants, link

    database = open_db(settings)
    try:
        if args.csv:
            made = add_from_csv(database, args.study, args.csv)
        else:
            if not args.role:
                print("--role is required (or --csv FILE)", file=sys.stderr)
                return 2
            made = add_participants(
                database, args.study, args.role, args.count, args.group, args.gender, self_enrol=args.self_enrol
            )
    except (ParticipantError, OSError) as e:
        print(f"Nothing was added: {e}", file=sys.stderr)
        return 2
    for p in made:
        print(f"{p.id}\t{p.role}\t{p.group or ''}\t{p.gender or ''}\t{link(settings.public_url, p.token)}")
    return 0


def cmd_links(args, settings):
    from services.setup.enrolment import ParticipantError, links, prolific_links

    database = open_db(settings)
    try:
        rows = links(database, args.study, settings.public_url)
    except ParticipantError as e:
        print(e, file=sys.stderr)
        return 2
    # where the links' address comes from (stderr: the table stays machine-readable)
    if "TRADLAB_PUBLIC_URL" in settings.environ:
        source = "TRADLAB_PUBLIC_URL"
    elif settings.on_space:
        source = "the Space's own address"
    else:
        source = (
            "the address a server started with these settings listens on (TRADLAB_HOST, TRADLAB_PORT); "
            "set TRADLAB_PUBLIC_URL to the address participants reach (a tunnel, a domain)"
        )
    print(f"# links on {settings.public_url}: {source}", file=sys.stderr)
    print("id\trole\tgroup\tgender\texternal_id\turl")
    for r in rows:
        print(f"{r['id']}\t{r['role']}\t{r['group'] or ''}\t{r['gender'] or ''}\t{r['external_id'] or ''}\t{r['url']}")
    signed = prolific_links(database, args.study, settings.public_url)
    if signed:
        print(
            "\n# Prolific study URLs (signed; they fill only the open self-enrolment slots made with"
            " `participants add --self-enrol`; the count after the role is how many are open):"
        )
        for r in signed:
            print(f"{r['role']} ({r['open']} open)\t{r['group'] or ''}\t{r['gender'] or ''}\t{r['url']}")
    return 0


def cmd_translate(args, settings):
    import json

    from services.models.backends import BackendUnavailable
    from services.models.batch import translate_files
    from services.usability.audio_intake import IntakeError

    try:
        rows = translate_files(args.audio, args.system)
    except (IntakeError, BackendUnavailable, ValueError, FileNotFoundError) as e:
        return refused(e)
    if args.json:
        print(json.dumps(rows if len(rows) > 1 else rows[0], ensure_ascii=False, indent=2))
        return 0
    for r in rows:
        stages = ", ".join(f"{k} {v:.2f} s" for k, v in r["seconds"].items())
        print(f"{r['file']} ({r['audio_s']:.1f} s of audio, system {r['system']})")
        if r["transcript"] is not None:
            print(f"  transcript:  {r['transcript']}")
        print(f"  translation: {r['translation']}")
        print(f"  time: {stages}; real-time factor {r['real_time_factor']}")
    return 0


def cmd_analyze(args, settings):
    """`app.py analyze <name>`: a protocol's own analysis (Protocol.analyze puts its run in
    args.analyze), or paper 003's QE audit and reranking, which run on files."""
    try:
        if args.analysis == "qe-audit":
            return cmd_qe_audit(args, settings)
        if args.analysis == "qe-rerank":
            return cmd_qe_rerank(args, settings)
        print(args.analyze(args, lambda: open_db(settings)))
    except (ValueError, FileNotFoundError) as e:  # DAInputError names file, row and column
        return refused(e)
    return 0


def _progress_printer():
    last = {"desc": None}

    def progress(fraction, desc):
        if desc != last["desc"]:
            print(f"  [{100 * fraction:3.0f}%] {desc}", file=sys.stderr, flush=True)
            last["desc"] = desc

    return progress


def cmd_qe_audit(args, settings):
    from services.models.backends import BackendUnavailable
    from services.qe import audit as qe_audit
    from services.qe import service as qe_service

    if args.paper:
        return cmd_qe_paper(args)
    if not args.pairs:
        return refused(ValueError("qe-audit needs a PAIRS file (or --paper with audit output folders)"))
    try:
        database = None if args.no_cache else open_db(settings)
        result, files = qe_service.run_audit(
            args.pairs,
            args.out,
            metric=args.metric,
            context=args.context,
            thresholds=qe_audit.parse_thresholds(args.thresholds),
            database=database,
            progress=_progress_printer(),
            n_resamples=args.resamples,
            seed=args.seed,
        )
    except (BackendUnavailable, KeyError) as e:
        return refused(e)
    print(f"QE audit of {args.pairs}\n{qe_audit.summary(result)}\n{len(files)} files written to {args.out}")
    return 0


def cmd_qe_paper(args):
    from services.qe import paper_figures

    if args.pairs:
        return refused(
            ValueError(
                f"--paper reads audit output folders, not a PAIRS file ({args.pairs}): audit each "
                "metric first, then pass the folders"
            )
        )
    result, files = paper_figures.run_cli(args.paper, args.out, n_resamples=args.resamples, seed=args.seed)
    print(f"{paper_figures.summary(result)}\n{len(files)} files written to {args.out}")
    return 0


def cmd_qe_rerank(args, settings):
    import pandas as pd

    from services.models.backends import BackendUnavailable
    from services.qe import audit as qe_audit
    from services.qe import service as qe_service

    try:
        pairs = qe_audit.read_pairs(args.pairs) if args.pairs else None
        candidates = pd.read_csv(args.candidates, dtype=str, keep_default_na=False) if args.candidates else None
        sampler = None
        if args.mt_model:
            sampler = qe_service.mt_sampler(
                args.mt_model, args.mt_kind, args.mt_prompt, args.epsilon, args.seed, args.mt_lang
            )
        database = None if args.no_cache else open_db(settings)
        res = qe_service.run_rerank(
            candidates,
            args.metric,
            pairs=pairs,
            out_dir=args.out,
            context=args.context,
            sampler=sampler,
            n=args.n,
            database=database,
            include_greedy=args.include_greedy,
        )
    except (BackendUnavailable, KeyError) as e:
        return refused(e)
    print(res.table.to_string(index=False))
    for note in res.notes:
        print(f"note: {note}")
    print(f"selected.csv and accuracy.csv written to {args.out}")
    return 0


def cmd_data(args, settings):
    from services.qe import gate_gente, mtgeneval

    try:
        if args.dataset == "gate":
            frame = gate_gente.gate(args.root, args.lang, split=args.split)
            what = f"GATE en-{args.lang}, {args.split}"
        elif args.dataset == "gente":
            frame = gate_gente.gente(args.root, subset=args.subset)
            what = f"GeNTE {args.subset}, en-it"
        elif args.mt_f or args.mt_m:
            return _machine_pairs(args, mtgeneval)
        else:
            frame = mtgeneval.convert(args.root, args.lang, subset=args.subset, split=args.split, setting=args.setting)
            what = f"MT-GenEval {args.subset}, {args.setting}, en-{args.lang}, {args.split}"
    except (ValueError, FileNotFoundError) as e:
        return refused(e)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out, index=False)
    gold = frame["gold"].value_counts().to_dict() if "gold" in frame.columns else {}
    print(f"{args.out}: {len(frame)} instances ({what}){'; gold ' + str(gold) if gold else ''}")
    return 0


def _machine_pairs(args, mtgeneval) -> int:
    """`data mt-geneval --mt-f F --mt-m M`: paper 003 appendix B.5's machine-translated pairs,
    filtered (mtgeneval.machine_pairs), with Table 7 beside them."""
    import json

    import pandas as pd

    if args.subset != "counterfactual" or not (args.mt_f and args.mt_m):
        raise ValueError(
            "--mt-f and --mt-m (the machine translations of the feminine and the masculine English "
            "sentences, one per line) go together, with --subset counterfactual"
        )
    lines = mtgeneval.counterfactual_lines(args.root, args.lang, args.split)
    frame, info = mtgeneval.machine_pairs(
        lines, mtgeneval.read_translations(args.mt_f), mtgeneval.read_translations(args.mt_m), args.lang
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out, index=False)
    table7 = pd.DataFrame(info["table7"])
    table7.to_csv(out.with_name(out.stem + "-table7.csv"), index=False)
    out.with_name(out.stem + "-table7.json").write_text(json.dumps(info, indent=2), encoding="utf-8")
    print(table7.to_string(index=False))
    w = info["wilcoxon_bleu"]
    print(
        f"{out}: {len(frame)} instances from {info['stage2']} of {info['lines']} lines (MT-GenEval counterfactual, "
        f"en-{args.lang}, {args.split}, machine translations); BLEU of the kept feminine vs masculine "
        f"translations, Wilcoxon p {w['p_value']:.3g}; Table 7 in {out.stem}-table7.csv"
    )
    return 0


def cmd_speak(args, settings):
    from services.models.backends import BackendUnavailable
    from services.models.batch import speak_to_file

    try:
        r = speak_to_file(args.text, args.lang, args.out, args.backend or settings.tts_backend, args.voice)
    except (BackendUnavailable, ValueError) as e:
        return refused(e)
    print(f"{r['out']}: {r['bytes']} bytes from {r['backend']} ({r['voice']}) in {r['seconds']:.2f} s")
    return 0


def cmd_backup(args, settings):
    from storage import backup

    try:
        info = backup.backup(settings.db_path, args.out, replace=args.replace)
    except (FileNotFoundError, FileExistsError, ValueError, RuntimeError) as e:
        return refused(e)
    print(f"{info['path']}: {info['bytes']} bytes, {info['tables']} tables (a consistent copy of {settings.db_path})")
    return 0


def cmd_export(args, settings):
    from services.study.export import ExportError, export_study

    database = open_db(settings)
    try:
        res = export_study(
            database,
            args.study,
            args.out,
            fmt=args.format,
            media_dir=settings.media_dir,
            include_external_ids=args.include_external_ids,
            include_events=args.include_events,
            include_audio=not args.no_audio,
        )
    except (ExportError, OSError) as e:
        return refused(e)
    print(f"study '{args.study}' exported to {res.summary()}")
    if args.include_external_ids:
        print("note: participants carry external and Prolific ids: keep this export private", file=sys.stderr)
    return 0


def cmd_report(args, settings):
    from services.report.build import ReportError, build_report

    if args.db:  # this database rather than TRADLAB_DB's
        from dataclasses import replace

        settings = replace(settings, db_path=Path(args.db))
    try:
        rep = build_report(open_db(settings), args.study, args.out, inputs={"qe_audits": args.qe_audit or []})
    except (ReportError, OSError) as e:
        return refused(e)
    print(f"report of study {args.study}: {rep.html} ({len(rep.files)} files beside it, {rep.seconds:.1f} s)")
    return 0


def build_parser(protocol_commands: bool = True) -> argparse.ArgumentParser:
    """The command line: the built-in commands, then (protocol_commands) those the registered
    protocols add (Protocol.cli, services/common/hookspecs.py CliCommands)."""
    parser = argparse.ArgumentParser(prog="app.py", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command")
    parser.set_defaults(func=cmd_serve)
    serve = sub.add_parser("serve", help="start the web app (the default)")
    serve.set_defaults(func=cmd_serve)
    for p in (parser, serve):
        p.add_argument("--host")
        p.add_argument("--port", type=int)
        p.add_argument("--demo", action="store_true", help="import the demo study and print its links first")
        p.add_argument("--ssl-certfile")
        p.add_argument("--ssl-keyfile")
        p.add_argument("--root-path", help="URL prefix when served behind a reverse proxy")
        p.add_argument(
            "--self-signed",
            action="store_true",
            help="serve HTTPS with a self-signed certificate made once in data/tls/ (beside the database)",
        )
        p.add_argument(
            "--tls-hosts",
            help="host names and IPs the self-signed certificate covers, comma-separated "
            "(default: this machine's host name, localhost, 127.0.0.1)",
        )
    imp = sub.add_parser("import", help="validate and import a study folder")
    imp.add_argument("folder")
    imp.set_defaults(func=cmd_import)
    sy = sub.add_parser("study", help="archive, unarchive or delete a study")
    sysub = sy.add_subparsers(dest="action", required=True)
    for name, about in (
        ("archive", "hide a study from the dropdowns and close its links; its data stays"),
        ("unarchive", "bring an archived study back"),
        ("delete", "remove a study and all its data and recordings (asks first: --yes to do it)"),
    ):
        sp_ = sysub.add_parser(name, help=about)
        sp_.add_argument("study_id")
        if name == "delete":
            sp_.add_argument(
                "--yes", action="store_true", help="delete without asking (the count of answers is printed)"
            )
        sp_.set_defaults(func=cmd_study)
    part = sub.add_parser("participants", help="manage participants")
    psub = part.add_subparsers(dest="action", required=True)
    add = psub.add_parser("add", help="add participants (or slots for Prolific self-enrolment)")
    add.set_defaults(func=cmd_participants_add)
    add.add_argument("--study", required=True)
    add.add_argument("--role")
    add.add_argument("--group")
    add.add_argument("--gender")
    add.add_argument("--count", type=int, default=1)
    add.add_argument("--csv", help="CSV with columns role, group, gender, external_id")
    add.add_argument(
        "--self-enrol",
        action="store_true",
        help="slots for Prolific self-enrolment (taken only through the signed Prolific URL; "
        "other slots are for private links and are never handed to Prolific newcomers)",
    )
    rp = sub.add_parser(
        "repair", help="the four-phase workflow's repair and drop-out check, now (the worker runs it every 10 minutes)"
    )
    rp.add_argument("--study", required=True)
    rp.set_defaults(func=cmd_repair)
    lk = sub.add_parser("links", help="print every participant's private link")
    lk.add_argument("--study", required=True)
    lk.set_defaults(func=cmd_links)
    tr = sub.add_parser("translate", help="translate audio files with a speech-translation system")
    tr.set_defaults(func=cmd_translate)
    tr.add_argument("audio", nargs="+")
    tr.add_argument(
        "--system", default="offline-cascade", help="a preset from assets/systems.toml (default: offline-cascade)"
    )
    tr.add_argument("--json", action="store_true", help="print JSON (one object per file)")
    sp = sub.add_parser("speak", help="synthesise a text to a WAV file")
    sp.set_defaults(func=cmd_speak)
    sp.add_argument("text")
    sp.add_argument("--lang", required=True, help="en | pt (or a language tag)")
    sp.add_argument("--out", required=True)
    sp.add_argument("--backend", help="auto | google | piper | espeak (default: TRADLAB_TTS_BACKEND)")
    sp.add_argument("--voice")
    an = sub.add_parser("analyze", help="run a protocol's analysis on a file of judgments")
    an.set_defaults(func=cmd_analyze)  # dispatches on args.analysis
    asub = an.add_subparsers(dest="analysis", required=True)
    if protocol_commands:  # each protocol's own analysis (Protocol.analyze), in registration order
        add_protocol_analyses(asub)
    qa = asub.add_parser("qe-audit", help="gender audit of a QE metric (paper 003): ratios, error rates, retention")
    qa.add_argument(
        "pairs",
        nargs="?",
        help="CSV: instance_id, lang, source, hyp_f + hyp_m (or hyp_n + hyp_g); "
        "optional gold (F|M), context, precomputed score_f + score_m",
    )
    qa.add_argument("--out", required=True)
    qa.add_argument(
        "--metric", default="e5-cosine", help="a metric name (default e5-cosine); ignored when the file has scores"
    )
    qa.add_argument("--context", default="none", choices=["none", "mon", "bil"])
    qa.add_argument("--thresholds", help="retention thresholds, e.g. 0.5,0.8 (default: 0.8 on a 0-1 scale)")
    qa.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples for the Phi interval")
    qa.add_argument("--seed", type=int, default=0)
    qa.add_argument("--no-cache", action="store_true", help="do not keep scores in the app database")
    qa.add_argument(
        "--paper",
        nargs="+",
        metavar="[HYPOTHESES=]FOLDER",
        help="instead of a PAIRS file: audit output folders of several metrics -> paper 003's Table 8 "
        "(counterfactual runs; HYPOTHESES names the block, e.g. GT=out/kiwi-gt, default "
        "references), Figure 4 (ambiguous + unambiguous runs) and Figures 6/9 (ambiguous runs)",
    )
    qr = asub.add_parser("qe-rerank", help="quality-aware reranking and gender accuracy vs greedy (paper 003 s. 5)")
    qr.add_argument(
        "candidates",
        nargs="?",
        help="CSV: instance_id, lang, source, gold, hypothesis, [is_greedy], [ref_f, ref_m], [context]",
    )
    qr.add_argument("--pairs", help="PAIRS CSV with gold: the references (hyp_f/hyp_m), or the sources to sample for")
    qr.add_argument("--out", required=True)
    qr.add_argument("--metric", default="e5-cosine")
    qr.add_argument("--context", default="none", choices=["none", "mon", "bil"])
    qr.add_argument("--mt-model", help="a local transformers MT model to sample candidates from (with --pairs)")
    qr.add_argument("--mt-kind", default="seq2seq", choices=["seq2seq", "causal"])
    qr.add_argument("--mt-prompt", help="prompt with {text}, for a causal MT model")
    qr.add_argument("--mt-lang", help="target-language code of a multilingual seq2seq model")
    qr.add_argument("--n", type=int, default=50, help="samples per source (default 50, as the paper)")
    qr.add_argument("--epsilon", type=float, default=0.02)
    qr.add_argument("--seed", type=int, default=0)
    qr.add_argument("--include-greedy", action="store_true", help="let the greedy output compete in the reranking")
    qr.add_argument("--no-cache", action="store_true")
    dt = sub.add_parser("data", help="convert public data sets to the analyses' input files")
    dt.set_defaults(func=cmd_data)
    dsub = dt.add_subparsers(dest="dataset", required=True)
    mg = dsub.add_parser("mt-geneval", help="MT-GenEval -> PAIRS.csv for the QE audit")
    mg.add_argument(
        "--root",
        default=str(ROOT.parent / "shared" / "data" / "mt-geneval"),
        help="the MT-GenEval checkout (its data/ folder inside)",
    )
    mg.add_argument("--lang", required=True, help="pt, es, it, ...")
    mg.add_argument("--subset", default="contextual", choices=["contextual", "counterfactual"])
    mg.add_argument("--setting", default="ambiguous", choices=["ambiguous", "unambiguous"])
    mg.add_argument("--split", default="test", choices=["test", "dev"])
    mg.add_argument(
        "--mt-f",
        help="with --subset counterfactual: a system's translations of the feminine English sentences, one a line "
        "(paper 003 B.5: the pairs are then these, filtered by gender accuracy and BLEU bucket; Table 7 beside)",
    )
    mg.add_argument("--mt-m", help="the same system's translations of the masculine English sentences")
    mg.add_argument("--out", required=True)
    ga = dsub.add_parser("gate", help="GATE (two-variant files) -> PAIRS.csv of F/M instances (paper 003, B.1)")
    ga.add_argument("--root", required=True, help="the GATE repository folder, or one of its files")
    ga.add_argument("--lang", required=True, choices=["es", "fr", "it"])
    ga.add_argument("--split", default="test", choices=["test", "dev", "all"])
    ga.add_argument("--out", required=True)
    ge = dsub.add_parser("gente", help="GeNTE (GeNTE.tsv) -> PAIRS.csv of neutral/gendered instances (paper 003, B.2)")
    ge.add_argument("--root", required=True, help="the folder holding GeNTE.tsv, or the file")
    ge.add_argument("--subset", default="set-n", choices=["set-n", "set-g", "all"])
    ge.add_argument("--out", required=True)
    bk = sub.add_parser("backup", help="copy the live database (SQLite online backup), safe while the app runs")
    bk.set_defaults(func=cmd_backup)
    bk.add_argument(
        "out", help="the copy's file path, or a folder (ending in /, made if missing) for a new time-stamped copy"
    )
    bk.add_argument("--replace", action="store_true", help="overwrite the file path when it exists")
    ex = sub.add_parser(
        "export",
        help="export a study's data: one tidy table per entity, pseudonymous, with a data dictionary (README.md)",
    )
    ex.set_defaults(func=cmd_export)
    ex.add_argument("--study", required=True)
    ex.add_argument("--out", required=True, help="a new (or empty) folder")
    ex.add_argument(
        "--format",
        default="csv",
        choices=["csv", "jsonl", "parquet", "hf-audio"],
        help="hf-audio: a Hugging Face audiofolder (train/audio/ + train/metadata.jsonl + dataset card)",
    )
    ex.add_argument(
        "--include-external-ids",
        action="store_true",
        help="add external and Prolific ids to participants (tokens are never exported)",
    )
    ex.add_argument("--include-events", action="store_true", help="add the study's audit-log events")
    ex.add_argument("--no-audio", action="store_true", help="leave the recordings' audio files out")
    rpt = sub.add_parser(
        "report",
        help="one self-contained HTML report of a study's results, each paper's tables "
        "and figures in its order, with the analyses' CSVs beside it",
    )
    rpt.set_defaults(func=cmd_report)
    rpt.add_argument("--study", required=True)
    rpt.add_argument("--out", required=True, help="a folder: report-STUDY.html and a folder per protocol")
    rpt.add_argument("--db", help="the database file (default: TRADLAB_DB)")
    rpt.add_argument(
        "--qe-audit",
        action="append",
        metavar="FOLDER",
        help="a QE audit output folder ('FOLDER' or 'HYPOTHESES=FOLDER'; repeatable): paper 003's "
        "part is made from these",
    )
    dc = sub.add_parser(
        "docs",
        help="print docs/reference.md's settings table and CLI reference, or docs/hooks.md (generated from the code)",
    )
    dc.add_argument(
        "section",
        nargs="?",
        choices=["settings", "cli", "hooks"],
        help="only this section, or hooks: docs/hooks.md, the protocols' hooks (default: settings and cli)",
    )
    dc.set_defaults(func=cmd_docs)
    if protocol_commands:
        add_protocol_commands(sub)
    return parser


def add_protocol_commands(sub) -> None:
    """Each registered protocol's own commands (Protocol.cli), after the built-in ones; a name
    already taken is refused with the protocol's name."""
    from services.common import protocols

    for protocol, add in protocols.with_hook("cli"):
        try:
            add(sub)
        except argparse.ArgumentError as e:
            raise ValueError(f"protocol '{protocol.name}' adds a command the command line has: {e}") from None


def add_protocol_analyses(asub) -> None:
    """`app.py analyze <name>`: each registered protocol's analysis commands (Protocol.analyze)."""
    from services.common import protocols

    for protocol, add in protocols.with_hook("analyze"):
        try:
            add(asub)
        except argparse.ArgumentError as e:
            raise ValueError(f"protocol '{protocol.name}' adds an analysis `analyze` has: {e}") from None


# built-in commands whose subcommands come from the protocols: their parser needs the registry
WITH_PROTOCOLS = {"analyze"}


def _command_names(parser: argparse.ArgumentParser) -> set[str]:
    return {name for a in parser._actions if isinstance(a, argparse._SubParsersAction) for name in a.choices}


def cmd_docs(args, settings):
    if args.section in (None, "settings"):
        print(settings_markdown())
    if args.section is None:
        print()
    if args.section in (None, "cli"):
        print(cli_markdown())
    if args.section == "hooks":
        print(hooks_markdown(), end="")  # the whole page, its final newline included
    return 0


def settings_markdown() -> str:
    """docs/reference.md's settings table (between <!-- settings --> and <!-- /settings -->)."""
    from services.common.settings import settings_table_markdown

    return settings_table_markdown()


def hooks_markdown() -> str:
    """docs/hooks.md: every hook a protocol's spec gives, from services/common/hookspecs.py."""
    from services.common.protocols import hooks_markdown

    return hooks_markdown()


def cli_markdown() -> str:
    """docs/reference.md's CLI reference (between <!-- cli --> and <!-- /cli -->): each command, its
    arguments and their help, read from build_parser()."""
    out = []

    def walk(parser, words, about):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        args = [a for a in parser._actions if not isinstance(a, (argparse._SubParsersAction, argparse._HelpAction))]
        if words and (args or not subs):
            out.append(f"### `python app.py {' '.join(words)}`\n")
            if about:
                out.append(about[0].upper() + about[1:] + ".\n")
            for a in args:
                name = ", ".join(a.option_strings) or a.dest
                choices = f" ({' | '.join(map(str, a.choices))})" if a.choices else ""
                out.append(f"- `{name}`{choices}{': ' + a.help if a.help else ''}")
            out.append("")
        for s in subs:
            helps = {c.dest: c.help for c in s._choices_actions}
            for name, p in s.choices.items():
                walk(p, words + [name], helps.get(name))

    walk(build_parser(), [], None)
    return "\n".join(out).rstrip()


def main(argv=None):
    os.umask(0o077)  # the database, media, backups and exports: readable by this user only
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from web.gradio_import import leave_stubs_alone

    leave_stubs_alone()  # before anything imports gradio: 2-3 s less of every start
    from services.common.settings import Settings

    argv = sys.argv[1:] if argv is None else list(argv)
    # a built-in command (or serving) needs no protocol's commands: the protocols' modules are
    # imported only for a word the built-in parser does not know, or the whole --help
    parser = build_parser(protocol_commands=False)
    words = [a for a in argv if not a.startswith("-")]
    if (words and (words[0] not in _command_names(parser) or words[0] in WITH_PROTOCOLS)) or (
        not words and {"-h", "--help"} & set(argv)
    ):
        parser = build_parser()
    args = parser.parse_args(argv)
    return args.func(args, Settings.from_env())


if __name__ == "__main__":
    sys.exit(main())
