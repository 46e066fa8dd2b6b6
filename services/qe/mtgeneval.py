"""MT-GenEval (Currey et al., 2022) to PAIRS frames for the QE gender audit (paper 003).

Layout (``root`` is the dataset's ``data`` folder, or the repository folder holding it)::

    context/geneval-context-wikiprofessions-2to1-{split}.en_{lang}.en        context <sep> sentence
    context/geneval-context-wikiprofessions-original-{split}.en_{lang}.{lang} reference, "original"
    context/geneval-context-wikiprofessions-flipped-{split}.en_{lang}.{lang}  reference, gender flipped
    sentences/{split}/geneval-sentences-{feminine,masculine}-{split}.en_{lang}.{en,lang}
    sentences/{split}/annotated/...   the same lines with <F>..</F> / <M>..</M> around gendered words

All files of one subset, language and split are line-aligned (same line count, checked).

Contextual subset. Line i of the 2to1 file is ``context <sep> sentence`` (one preceding
sentence, whose pronouns disambiguate the gender of the person the sentence mentions; the
sentence alone is ambiguous). Lines i of ``original`` and ``flipped`` translate the sentence
and differ only in that person's gender. The dataset's own accuracy_metric.py treats
``original`` as the correctly gendered reference ("Correctly gendered reference") and
``flipped`` as the counterfactual, so the gold answer of line i is the gender of its original
reference. No file says which gender that is, so it is inferred from two signals:

* target: the words that differ between original and flipped (difflib alignment of the
  lower-cased tokens, elided articles such as l' and un' kept as tokens), scored with a small
  lexicon of gendered determiners/pronouns and feminine endings (-a/-as, -ã, -essa, -trice, -triz,
  Italian -e vs -i, French -e/-euse/-rice...), for es, fr, it and pt only (REFERENCE_RULES);
* context: English pronouns in the context sentence (he/him/his/himself vs
  she/her/hers/herself; the majority, none or a tie = undecided).

Checked on the counterfactual test files, where the gender of each reference is known, the
target rule decides 300/300 en-pt, 280/300 en-es and 276/300 en-it lines and is never wrong.
On the en-pt contextual test data the two signals agree on 970 of the 991 lines where both
decide (92 lines are decided by the target alone, 6 by the context alone); in the 21
conflicts either the pronoun count misleads (the context mentions another person of the other
gender: "The Hasidim asked ... Malka and her husband ... The elder, Yigal, an aerospace
engineer") or the reference uses a generic masculine for a woman ("She is Professor
Emerita ... Kahane is the author" -> "Kahane é o autor"). The gender of the original
reference is the target signal when it decides, else the context signal; lines where neither
decides are dropped. hyp_f / hyp_m are the feminine / masculine references accordingly.
(The paper's released code reads a separate per-line gender list that is not part of the
dataset; this converter needs only the dataset. A few lines are noise either way: e.g. en-pt
test line 130, whose flipped reference differs from the original only by a typo, is kept on
the context's word.)

* setting "ambiguous": source = the sentence without its context, hyp_f, hyp_m, no gold (the
  paper's section 3 audit);
* setting "unambiguous": the same plus gold = the gender of the original reference and
  context = the English context sentence (section 4.2). Lines whose two signals conflict are
  left out by default (keep_conflicts=False): there the reference or the cue is doubtful.

Counterfactual subset (data/sentences): line i of the feminine and masculine English files is
the same sentence about a woman / a man (the gender cue is inside the sentence), and lines i
of the two target files are their translations. Each line gives two unambiguous instances
with the same pair of hypotheses: source = the feminine English sentence, gold F, and source =
the masculine English sentence, gold M (hyp_f = the feminine translation, hyp_m = the
masculine one). This is the paper's appendix B.5 error-rate setup, QE(s_F, t_F) > QE(s_F, t_M)
and its masculine mirror; its matched ratio QE(s_F, h_F) / QE(s_M, h_M) (Table 8) pairs
score_f of the gold-F row with score_m of the gold-M row of the same line. The counterfactual
subset has no ambiguous setting (its sources are gendered).

The frames carry provenance columns (line, 1-based; reference_gender / gender_evidence for the
contextual subset) that read_pairs ignores, and ``attrs["mtgeneval"]`` with the counts.

The MT-GenEval gender accuracy of a translation (accuracy_metric.py) is :func:`gender_decision`.
"""

from __future__ import annotations

import difflib
import re
import string
from pathlib import Path

import pandas as pd

SUBSETS = ("contextual", "counterfactual")
SETTINGS = ("ambiguous", "unambiguous")
SPLITS = ("dev", "test")
SEP = "<sep>"

REFERENCE_RULES = ("es", "fr", "it", "pt")

_FEM_WORDS = {
    "pt": "a as uma umas ela elas dela delas nela nelas na nas da das pela pelas à às esta estas essa essas aquela "
    "aquelas nesta nessa naquela desta dessa daquela àquela sua suas minha minhas nossa nossas própria "
    "próprias "
    "mesma mesmas toda todas outra outras alguma algumas nenhuma muita muitas",
    "es": "la las una unas ella ellas esta estas esa esas aquella aquellas nuestra nuestras vuestra misma mismas toda "
    "todas otra otras alguna algunas ninguna muchas mucha propia propias suya suyas",
    "it": "la le una un' lei ella della delle alla alle dalla dalle nella nelle sulla sulle questa queste quella "
    "quelle stessa stesse tutta tutte altra altre alcuna nessuna sua sue propria proprie",
    "fr": "la une elle elles cette celle celles laquelle lesquelles toute toutes",
}
_MASC_WORDS = {
    "pt": "o os um uns ele eles dele deles nele neles no nos do dos pelo pelos ao aos este estes esse esses aquele "
    "aqueles neste nesse naquele deste desse daquele àquele seu seus meu meus nosso nossos próprio próprios "
    "mesmo mesmos todo todos outro outros algum alguns nenhum muito muitos",
    "es": "el los un unos uno él ellos este estos ese esos aquel aquellos nuestro nuestros vuestro mismo mismos todo "
    "todos otro otros algún alguno algunos ningún ninguno muchos mucho propio propios suyo suyos del al",
    "it": "il lo i gli un uno lui egli dello degli allo agli dallo dagli nello negli sullo sugli del dei al ai dal "
    "dai nel nei sul sui questo questi quello quelli quel stesso stessi tutto tutti altro altri alcun alcuno "
    "nessun nessuno suo suoi proprio propri",
    "fr": "le un il ils ce cet celui ceux lequel lesquels tout tous",
}
FEMININE_WORDS = {k: frozenset(v.split()) for k, v in _FEM_WORDS.items()}
MASCULINE_WORDS = {k: frozenset(v.split()) for k, v in _MASC_WORDS.items()}
_FEM_ENDINGS = ("a", "as", "ã", "ãs", "trice", "trici", "triz", "essa", "esse")
_FR_FEM_ENDINGS = ("euse", "euses", "rice", "rices", "esse", "esses", "ière", "ières", "enne", "ennes", "elle", "elles")

_MASC_PRONOUNS = re.compile(r"\b(he|him|his|himself)\b", re.IGNORECASE)
_FEM_PRONOUNS = re.compile(r"\b(she|her|hers|herself)\b", re.IGNORECASE)
_TOKEN = re.compile(r"\w+['’]?", re.UNICODE)

# accuracy_metric.py's cleaning: lower-case, ASCII punctuation -> space, split on white space
_STRIP_PUNCT = str.maketrans(string.punctuation, " " * len(string.punctuation))


class MTGenEvalMissing(FileNotFoundError):
    """MT-GenEval files not found where expected."""


# ---------------------------------------------------------------------------------------------
# MT-GenEval's accuracy (accuracy_metric.py)


def clean_line(line: str) -> str:
    """Lower-case, ASCII punctuation replaced by spaces, stripped (accuracy_metric.clean_line)."""
    return str(line).lower().translate(_STRIP_PUNCT).strip()


def words(line: str) -> set[str]:
    return set(clean_line(line).split())


def gender_decision(
    hypothesis: str, correct_ref: str, wrong_ref: str, require_correct: bool = False
) -> tuple[bool, set[str], set[str]]:
    """MT-GenEval's gender accuracy of one translation: the words unique to the correct reference
    (vs the wrong one) and unique to the wrong one, after clean_line; the translation is correct
    when it contains none of the wrong reference's unique words (the published script's rule).
    require_correct=True also requires at least one of the correct reference's unique words
    (a stricter reading, not the script's). Returns (correct, found_correct, found_wrong)."""
    hyp, right, wrong = words(hypothesis), words(correct_ref), words(wrong_ref)
    found_right = hyp & (right - wrong)
    found_wrong = hyp & (wrong - right)
    ok = not found_wrong and (bool(found_right) or not require_correct)
    return ok, found_right, found_wrong


# ---------------------------------------------------------------------------------------------
# gender signals


def context_gender(text: str) -> str:
    """'M' / 'F' by the majority of English he/him/his/himself vs she/her/hers/herself; '' when
    there are none or as many of each."""
    m = len(_MASC_PRONOUNS.findall(text or ""))
    f = len(_FEM_PRONOUNS.findall(text or ""))
    return "M" if m > f else "F" if f > m else ""


def _tokens(text: str) -> list[str]:
    return [t.replace("’", "'") for t in _TOKEN.findall(str(text).lower())]


def _word_gender(w: str, lang: str) -> str:
    if w in FEMININE_WORDS.get(lang, ()):
        return "F"
    if w in MASCULINE_WORDS.get(lang, ()):
        return "M"
    return ""


def _pair_vote(x: str, y: str, lang: str) -> int:
    """+1 when x is the feminine counterpart of y, -1 when y is that of x, 0 when unclear."""
    gx, gy = _word_gender(x, lang), _word_gender(y, lang)
    if gx and gy:
        return 0 if gx == gy else (1 if gx == "F" else -1)
    if gx or gy:
        return 0
    if lang == "fr":
        if x in (y + "e", y + "es"):
            return 1
        if y in (x + "e", x + "es"):
            return -1
        fx, fy = x.endswith(_FR_FEM_ENDINGS), y.endswith(_FR_FEM_ENDINGS)
    else:
        if lang == "it" and len(x) == len(y) > 1 and x[:-1] == y[:-1] and {x[-1], y[-1]} == {"e", "i"}:
            return 1 if x.endswith("e") else -1  # plural: professoresse / professori
        fx, fy = x.endswith(_FEM_ENDINGS), y.endswith(_FEM_ENDINGS)
    if fx != fy:
        return 1 if fx else -1
    return 0


def reference_gender(original: str, flipped: str, lang: str) -> str:
    """Grammatical gender ('F'/'M') of ``original`` relative to ``flipped`` from the words that
    differ between them (languages in REFERENCE_RULES); '' when undecided or unsupported."""
    if lang not in REFERENCE_RULES:
        return ""
    a, b = _tokens(original), _tokens(flipped)
    vote = 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        xs, ys = a[i1:i2], b[j1:j2]
        if op == "replace" and len(xs) == len(ys):
            vote += sum(_pair_vote(x, y, lang) for x, y in zip(xs, ys))
            continue
        for x in xs:
            g = _word_gender(x, lang)
            vote += 1 if g == "F" else -1 if g == "M" else 0
        for y in ys:
            g = _word_gender(y, lang)
            vote -= 1 if g == "F" else -1 if g == "M" else 0
        if op == "replace":
            vote += sum(
                _pair_vote(x, y, lang)
                for x, y in zip(xs, ys)
                if not _word_gender(x, lang) and not _word_gender(y, lang)
            )
    return "F" if vote > 0 else "M" if vote < 0 else ""


# ---------------------------------------------------------------------------------------------
# files


def data_root(root) -> Path:
    """The folder holding context/ and sentences/ (``root`` itself or root/data)."""
    root = Path(root)
    if not (root / "context").is_dir() and not (root / "sentences").is_dir() and (root / "data").is_dir():
        return root / "data"
    return root


def _paths(root: Path, lang: str, subset: str, split: str) -> dict[str, Path]:
    if subset == "contextual":
        c = root / "context"
        return {
            "context_sentence": c / f"geneval-context-wikiprofessions-2to1-{split}.en_{lang}.en",
            "original": c / f"geneval-context-wikiprofessions-original-{split}.en_{lang}.{lang}",
            "flipped": c / f"geneval-context-wikiprofessions-flipped-{split}.en_{lang}.{lang}",
        }
    s = root / "sentences" / split
    return {
        "source_f": s / f"geneval-sentences-feminine-{split}.en_{lang}.en",
        "source_m": s / f"geneval-sentences-masculine-{split}.en_{lang}.en",
        "ref_f": s / f"geneval-sentences-feminine-{split}.en_{lang}.{lang}",
        "ref_m": s / f"geneval-sentences-masculine-{split}.en_{lang}.{lang}",
    }


def read_lines(path: Path) -> list[str]:
    """The file's lines without line ends (a final newline does not make an extra line)."""
    text = Path(path).read_text(encoding="utf-8")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def _read_aligned(root, lang: str, subset: str, split: str) -> tuple[dict[str, list[str]], dict[str, Path]]:
    """({file: its lines}, {file: its path}): the subset's line-aligned files."""
    if subset not in SUBSETS:
        raise ValueError(f"unknown MT-GenEval subset {subset!r} (one of: {', '.join(SUBSETS)})")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r} (one of: {', '.join(SPLITS)})")
    if not lang or not re.fullmatch(r"[a-z]{2,3}", str(lang)):
        raise ValueError(f"lang must be a target language code such as 'pt', not {lang!r}")
    base = data_root(root)
    paths = _paths(base, lang, subset, split)
    missing = [p for p in paths.values() if not p.is_file()]
    if missing:
        raise MTGenEvalMissing(
            f"MT-GenEval {subset} {split} files for en-{lang} not found under {base}: "
            + ", ".join(str(p.relative_to(base)) if p.is_relative_to(base) else str(p) for p in missing)
            + " (expected the dataset's data/ folder with context/ and sentences/)"
        )
    lines = {k: read_lines(p) for k, p in paths.items()}
    counts = {k: len(v) for k, v in lines.items()}
    if len(set(counts.values())) != 1:
        raise ValueError(
            f"MT-GenEval {subset} {split} en-{lang}: the files are not line-aligned ("
            + ", ".join(f"{paths[k].name}: {n} lines" for k, n in counts.items())
            + ")"
        )
    return lines, paths


def contextual_lines(root, lang: str, split: str = "test") -> pd.DataFrame:
    """The contextual subset line by line: line (1-based), context, sentence, original, flipped,
    context_gender, target_gender (see the module docstring)."""
    f, paths = _read_aligned(root, lang, "contextual", split)
    rows = []
    for i, (cs, o, fl) in enumerate(zip(f["context_sentence"], f["original"], f["flipped"])):
        parts = cs.split(SEP)
        if len(parts) != 2:
            raise ValueError(
                f"{paths['context_sentence']}, line {i + 1}: expected 'context {SEP} sentence', "
                f"found {len(parts) - 1} {SEP}"
            )
        context, sentence = parts[0].strip(), parts[1].strip()
        rows.append(
            {
                "line": i + 1,
                "context": context,
                "sentence": sentence,
                "original": o.strip(),
                "flipped": fl.strip(),
                "context_gender": context_gender(context),
                "target_gender": reference_gender(o, fl, lang),
            }
        )
    return pd.DataFrame(
        rows, columns=["line", "context", "sentence", "original", "flipped", "context_gender", "target_gender"]
    )


def counterfactual_lines(root, lang: str, split: str = "test") -> pd.DataFrame:
    """The counterfactual subset line by line: line, source_f, source_m, ref_f, ref_m."""
    f, _ = _read_aligned(root, lang, "counterfactual", split)
    return pd.DataFrame(
        {
            "line": range(1, len(f["source_f"]) + 1),
            **{k: [x.strip() for x in f[k]] for k in ("source_f", "source_m", "ref_f", "ref_m")},
        }
    )


def _contextual(root, lang, split, setting, keep_conflicts) -> pd.DataFrame:
    lines = contextual_lines(root, lang, split)
    tg, cg = lines["target_gender"], lines["context_gender"]
    gender = tg.where(tg != "", cg)
    both = (tg != "") & (cg != "")
    conflict = both & (tg != cg)
    evidence = pd.Series("", index=lines.index, dtype=object)
    evidence[both & ~conflict] = "target+context"
    evidence[(tg != "") & (cg == "")] = "target"
    evidence[(tg == "") & (cg != "")] = "context"
    evidence[conflict] = "target (context disagrees)"
    counts = {
        "lines": len(lines),
        "target+context": int((both & ~conflict).sum()),
        "target_only": int(((tg != "") & (cg == "")).sum()),
        "context_only": int(((tg == "") & (cg != "")).sum()),
        "conflict": int(conflict.sum()),
        "undecided": int((gender == "").sum()),
    }
    keep = gender != ""
    if setting == "unambiguous" and not keep_conflicts:
        keep &= ~conflict
    fem = gender == "F"
    out = pd.DataFrame(
        {
            "instance_id": [f"ctx-{split}-{n:04d}" for n in lines["line"]],
            "lang": lang,
            "source": lines["sentence"],
            "hyp_f": lines["original"].where(fem, lines["flipped"]),
            "hyp_m": lines["flipped"].where(fem, lines["original"]),
        }
    )
    if setting == "unambiguous":
        out["gold"] = gender
        out["context"] = lines["context"]
    out["line"] = lines["line"]
    out["reference_gender"] = gender
    out["gender_evidence"] = evidence
    out["context_gender"] = cg
    out = out[keep].reset_index(drop=True)
    counts["dropped"] = int((~keep).sum())
    counts["instances"] = len(out)
    out.attrs["mtgeneval"] = {"subset": "contextual", "setting": setting, "split": split, "lang": lang, **counts}
    return out


def _counterfactual(root, lang, split) -> pd.DataFrame:
    lines = counterfactual_lines(root, lang, split)
    rows = []
    for r in lines.itertuples():
        for gold, src in (("F", r.source_f), ("M", r.source_m)):
            rows.append(
                {
                    "instance_id": f"cf-{split}-{r.line:04d}-{gold}",
                    "lang": lang,
                    "source": src,
                    "hyp_f": r.ref_f,
                    "hyp_m": r.ref_m,
                    "gold": gold,
                    "line": r.line,
                }
            )
    out = pd.DataFrame(rows, columns=["instance_id", "lang", "source", "hyp_f", "hyp_m", "gold", "line"])
    out.attrs["mtgeneval"] = {
        "subset": "counterfactual",
        "setting": "unambiguous",
        "split": split,
        "lang": lang,
        "lines": len(lines),
        "instances": len(out),
    }
    return out


def convert(
    root,
    lang: str,
    subset: str = "contextual",
    split: str = "test",
    setting: str = "unambiguous",
    keep_conflicts: bool = False,
) -> pd.DataFrame:
    """A PAIRS frame from MT-GenEval (see the module docstring): subset 'contextual' (setting
    'ambiguous' or 'unambiguous') or 'counterfactual' (unambiguous only). Raises
    MTGenEvalMissing naming the files when they are not there."""
    if setting not in SETTINGS:
        raise ValueError(f"unknown setting {setting!r} (one of: {', '.join(SETTINGS)})")
    if subset == "counterfactual":
        if setting != "unambiguous":
            raise ValueError("the counterfactual subset has gendered sources: only the 'unambiguous' setting")
        return _counterfactual(root, lang, split)
    if subset == "contextual":
        return _contextual(root, lang, split, setting, keep_conflicts)
    raise ValueError(f"unknown MT-GenEval subset {subset!r} (one of: {', '.join(SUBSETS)})")


# ---------------------------------------------------------------------------------------------
# machine-written hypotheses (paper 003, appendix B.5, Table 7)

# Lavie (2011)'s BLEU quality buckets, as Table 7 labels them: (name, lowest score)
BLEU_BUCKETS = (
    ("Excellent (50+)", 50),
    ("Very Good (40-50)", 40),
    ("Good (30-40)", 30),
    ("Fair (20-30)", 20),
    ("Poor (<20)", 0),
)


def bleu_bucket(score: float) -> str:
    return next(name for name, low in BLEU_BUCKETS if score >= low)


def machine_pairs(lines: pd.DataFrame, mt_f: list[str], mt_m: list[str], lang: str) -> tuple[pd.DataFrame, dict]:
    """Appendix B.5's counterfactual pairs of machine translations (s_F, MT_F) and (s_M, MT_M),
    filtered in two stages: (1) correct gender form: MT_F must be correct against (ref_f, ref_m)
    and MT_M against (ref_m, ref_f) by MT-GenEval's accuracy (gender_decision, the published
    script's rule); (2) translation quality: each translation's sentence BLEU against its own
    reference (sacrebleu, effective order, as its sentence_bleu), mapped to Lavie's buckets, and
    only the lines whose two translations are both correct and in the same bucket kept. Returns
    the kept lines as a PAIRS frame (two rows a line, gold F and gold M over hyp_f = MT_F,
    hyp_m = MT_M, as _counterfactual) and the Table 7 figures: per bucket the feminine and the
    masculine translations that pass stage 1 (each side on its own: the paper's F and M columns
    differ) and the lines kept after stage 2, with the Wilcoxon signed-rank test of the kept lines' BLEU
    (MT_F vs MT_M, scipy, two-sided), which the paper reports as no difference at p 0.05."""
    from sacrebleu.metrics import BLEU
    from scipy import stats

    if not (len(mt_f) == len(mt_m) == len(lines)):
        raise ValueError(
            f"the machine translations must have one line per MT-GenEval line: {len(lines)} lines, "
            f"{len(mt_f)} feminine and {len(mt_m)} masculine translations"
        )
    bleu = BLEU(effective_order=True)  # sentence-level BLEU, as sacrebleu's sentence_bleu
    rows: list[dict] = []
    stage1: dict[str, dict[str, int]] = {"F": {}, "M": {}}
    kept_scores: list[tuple[str, float, float]] = []
    counts = {"lines": len(lines), "stage1_f": 0, "stage1_m": 0, "stage2": 0}
    for r, hf, hm in zip(lines.itertuples(), mt_f, mt_m):
        hf, hm = str(hf).strip(), str(hm).strip()
        # stage 1, each translation on its own (Table 7 counts the two sides apart)
        ok = {"F": gender_decision(hf, r.ref_f, r.ref_m)[0], "M": gender_decision(hm, r.ref_m, r.ref_f)[0]}
        score = {"F": bleu.sentence_score(hf, [r.ref_f]).score, "M": bleu.sentence_score(hm, [r.ref_m]).score}
        for gender in ("F", "M"):
            if ok[gender]:
                counts[f"stage1_{gender.lower()}"] += 1
                b = bleu_bucket(score[gender])
                stage1[gender][b] = stage1[gender].get(b, 0) + 1
        # stage 2: the line, when both are correct and in the same quality bucket
        bf, bm = score["F"], score["M"]
        if not (ok["F"] and ok["M"]) or bleu_bucket(bf) != bleu_bucket(bm):
            continue
        counts["stage2"] += 1
        kept_scores.append((bleu_bucket(bf), bf, bm))
        for gold, src in (("F", r.source_f), ("M", r.source_m)):
            rows.append(
                {
                    "instance_id": f"mt-{r.line:04d}-{gold}",
                    "lang": lang,
                    "source": src,
                    "hyp_f": hf,
                    "hyp_m": hm,
                    "gold": gold,
                    "line": r.line,
                    "bleu_f": round(bf, 2),
                    "bleu_m": round(bm, 2),
                }
            )
    table = [
        {
            "quality": name,
            "stage1_f": stage1["F"].get(name, 0),
            "stage1_m": stage1["M"].get(name, 0),
            "stage2": sum(1 for b, _, _ in kept_scores if b == name),
        }
        for name, _ in BLEU_BUCKETS
    ]
    table.append(
        {
            "quality": "Total",
            "stage1_f": counts["stage1_f"],
            "stage1_m": counts["stage1_m"],
            "stage2": counts["stage2"],
        }
    )
    diffs = [bf - bm for _, bf, bm in kept_scores]
    if len(diffs) >= 2 and any(diffs):
        w = stats.wilcoxon([bf for _, bf, _ in kept_scores], [bm for _, _, bm in kept_scores])
        wilcoxon = {"statistic": float(w.statistic), "p_value": float(w.pvalue)}
    else:
        wilcoxon = {"statistic": float("nan"), "p_value": float("nan")}
    out = pd.DataFrame(
        rows, columns=["instance_id", "lang", "source", "hyp_f", "hyp_m", "gold", "line", "bleu_f", "bleu_m"]
    )
    return out, {"lang": lang, **counts, "table7": table, "wilcoxon_bleu": wilcoxon}


def read_translations(path) -> list[str]:
    """A file of machine translations, one per line (line i translates the i-th English line)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such file of machine translations (one translation per line)")
    return p.read_text(encoding="utf-8").splitlines()
