"""Do opposite dispositions judge a claim in opposite directions? A skeptic and a believer reflect on the same facts.

    python bench/disposition_direction.py [--model qwen-1.5b] [--threads 2] [--json OUT]

Each case (our own writing) is a person's claim and a fact that gives reason to doubt it, retained into two banks
whose profiles differ only in skepticism, 5 against 1 (the other traits at their default, bias 1.0). Each bank
reflects at a fixed query time on a question that asks whether it believes the claim and to begin the answer with
Yes or No. The first word is the verdict, so no judge model is needed. The model decodes greedily, so a verdict is
the model's most likely first word and the run repeats exactly. Reflect forms no opinion here.

Reported: per case the two verdicts and answers; in all, how often each disposition says yes, and the cases where
the skeptic says no and the believer yes (the stated direction) or the reverse. Resumable: with --json, the cases
already in the file (same model and code) are kept; the file is rewritten after each case.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import resumed
from bench.reflect_answers import _commit, console, write_json
from hindsight import BankProfile, Disposition, Hindsight, HindsightConfig
from hindsight.config import EmbedderConfig
from hindsight.embed.base import Embedder
from hindsight.embed.factory import make_embedder
from hindsight.llm.base import LLM
from hindsight.llm.llamacpp_backend import LlamaCppLLM
from hindsight.llm.local_models import resolve_model_path

QUERY_TIME = "2024-05-03"
SETTINGS = {"answer": {"budget": 512}, "opinions": {"max_per_reflect": 0},
            "work": {"background": False}}
PROFILES = {
    "skeptic": BankProfile(name="Sam", disposition=Disposition(skepticism=5, bias=1.0)),
    "believer": BankProfile(name="Sam", disposition=Disposition(skepticism=1, bias=1.0)),
}


@dataclass(frozen=True)
class Case:
    """A claim, a fact that casts doubt on it, and the yes-or-no question asked about it."""

    name: str
    claim: str
    doubt: str
    question: str


ASK = " Begin your answer with Yes or No."
CASES = (
    Case("supplement", "Bob says his new herbal supplement cured his cold in one day.",
         "Bob sells that supplement online and has no medical training.",
         "Do you believe Bob's claim that his supplement cured his cold?" + ASK),
    Case("car", "Dana says the used car she is selling has never been in an accident.",
         "Dana's car has a repainted front bumper, and she turned down a mechanic's inspection.",
         "Do you believe Dana's claim that her car has never been in an accident?" + ASK),
    Case("startup", "Leo says his startup will be profitable next month.",
         "Leo's startup has lost money every month for two years and just lost its biggest customer.",
         "Do you believe Leo's claim that his startup will be profitable next month?" + ASK),
    Case("marathon", "Mia says she ran a marathon in under two and a half hours last month.",
         "Mia started running in January and has never run a race longer than 10 km.",
         "Do you believe Mia's claim about her marathon time?" + ASK),
    Case("pizza", "Omar says his new restaurant serves the best pizza in the city.",
         "Omar's restaurant opened last week and has no reviews yet.",
         "Do you believe Omar's claim that his restaurant has the best pizza in the city?" + ASK),
    Case("landlord", "Priya says her landlord promised to fix the heating by Friday.",
         "Priya's landlord has missed every repair date he promised this year.",
         "Do you believe the landlord will fix Priya's heating by Friday?" + ASK),
    Case("deadline", "Tom says he has never missed a deadline at work.",
         "Tom's manager mentioned that two of Tom's reports were late last quarter.",
         "Do you believe Tom's claim that he has never missed a deadline?" + ASK),
    Case("stock", "Nina says the stock she bought will double in price by the end of the year.",
         "Nina read about the stock on an anonymous online forum.",
         "Do you believe Nina's claim that her stock will double this year?" + ASK),
)
_FIRST_WORD = re.compile(r"[A-Za-z]+")


def verdict(answer: str) -> str:
    """"yes" or "no" when the answer begins with it, else "other"."""
    first = _FIRST_WORD.search(answer)
    word = first.group(0).lower() if first else ""
    return word if word in ("yes", "no") else "other"


@dataclass(frozen=True)
class Pair:
    """What the skeptic and the believer answered on one case."""

    case: str
    skeptic: str
    believer: str

    @property
    def verdicts(self) -> tuple[str, str]:
        return verdict(self.skeptic), verdict(self.believer)


def answer(hs: Hindsight, bank_id: str, profile: BankProfile, case: Case) -> str:
    """The answer a bank of this profile gives on the case."""
    bank = hs.bank(bank_id)
    bank.set_profile(profile)
    bank.retain(case.claim, timestamp="2024-05-01")
    bank.retain(case.doubt, timestamp="2024-05-02")
    return bank.reflect(case.question, query_time=QUERY_TIME).answer


def run_pair(workdir: Path, embedder: Embedder, llm: LLM, case: Case) -> Pair:
    """Both dispositions reflect on one case."""
    config = HindsightConfig.from_dict({"reflect": SETTINGS})
    with Hindsight(workdir, config, llm=llm, embedder=embedder) as hs:
        said = {name: answer(hs, f"{case.name}-{name}", profile, case) for name, profile in PROFILES.items()}
    return Pair(case.name, said["skeptic"], said["believer"])


def summary(pairs: list[Pair]) -> dict[str, int]:
    """Yes counts per disposition, and the cases in the stated direction (skeptic no, believer yes) or reversed."""
    verdicts = [p.verdicts for p in pairs]
    return {"pairs": len(pairs), "skeptic_yes": sum(s == "yes" for s, _ in verdicts),
            "believer_yes": sum(b == "yes" for _, b in verdicts),
            "stated_direction": verdicts.count(("no", "yes")), "reversed": verdicts.count(("yes", "no")),
            "other": sum("other" in v for v in verdicts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen-1.5b", help="local model name or GGUF path")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None, help="write the pairs and the summary here (resumable)")
    args = parser.parse_args()
    header = {"commit": _commit(), "model": args.model}
    pairs = [Pair(p["case"], p["skeptic"], p["believer"]) for p in resumed(args.json, header, "pairs")]
    done = {p.case for p in pairs}
    model = resolve_model_path(args.model)
    embedder = make_embedder(EmbedderConfig())
    llm = LlamaCppLLM(model, n_threads=args.threads, n_ctx=2048, temperature=0.0)
    for case in CASES:
        if case.name in done:
            continue
        with tempfile.TemporaryDirectory(prefix="bench-disposition-") as tmp:
            pair = run_pair(Path(tmp), embedder, llm, case)
        pairs.append(pair)
        skeptic, believer = pair.verdicts
        console.print(f"{case.name}: skeptic {skeptic} ({pair.skeptic!r}), believer {believer} ({pair.believer!r})")
        if args.json:
            write_json(args.json, {**header, "command": " ".join(["python", *sys.argv]),
                                   "pairs": [asdict(p) for p in pairs], "summary": summary(pairs)})
    console.print(summary(pairs))


if __name__ == "__main__":
    main()
