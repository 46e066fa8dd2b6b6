"""Recording QC (paper 000, section 3): does the recording say the starter's text?

Both texts are normalised (lower case, punctuation removed); the recording is flagged when
its first three or last three words differ from the prompt's, or when WER > 0.6. Flagged
recordings wait for a person's accept/reject in the admin tab.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import jiwer

EDGE_WORDS = 3
MAX_WER = 0.6
MAX_REJECTED = 3          # a sender with more rejected recordings than this is excluded

NORMALISE = jiwer.Compose([
    jiwer.ToLowerCase(),
    jiwer.RemovePunctuation(),
    jiwer.RemoveMultipleSpaces(),
    jiwer.Strip(),
    jiwer.ReduceToListOfListOfWords(),
])


def words(text: str) -> list[str]:
    out = NORMALISE(text or "")
    return out[0] if out else []


@dataclass
class QCResult:
    wer: float
    flags: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        return "flagged" if self.flags else "passed"


def check(prompt: str, transcript: str, max_wer: float = MAX_WER, edge: int = EDGE_WORDS) -> QCResult:
    ref, hyp = words(prompt), words(transcript)
    if not hyp:
        return QCResult(1.0, ["empty_transcript"])
    wer = float(jiwer.wer(" ".join(ref), " ".join(hyp))) if ref else 1.0
    flags = []
    if hyp[:edge] != ref[:edge]:
        flags.append("start_differs")
    if hyp[-edge:] != ref[-edge:]:
        flags.append("end_differs")
    if wer > max_wer:
        flags.append("high_wer")
    return QCResult(round(wer, 4), flags)


FLAG_TEXT = {"empty_transcript": "nothing was recognised", "start_differs": "the first three words differ",
             "end_differs": "the last three words differ", "high_wer": "word error rate above 0.6"}
