"""The demo: retain the shipped sample conversation into an embedded bank, show what was remembered, recall from it
with an explanation of every hit, and, when an LLM is available, reflect: an answer in the bank's voice, its
evidence and the opinions it formed."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timezone

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hindsight import (
    Bank,
    BankProfile,
    Disposition,
    Hindsight,
    HindsightConfig,
    LLMNotConfiguredError,
    ReflectResult,
    RetainResult,
)
from hindsight.embed.base import Embedder
from hindsight.inspect import explain_recall
from hindsight.inspect.render import explain_table
from hindsight.llm.base import LLM
from hindsight.sample import load_sample

console = Console()
# Asked a week after the sample's last session, so "now" and "in April" mean what a reader expects.
QUERY_TIME = datetime(2024, 7, 10, 12, tzinfo=timezone.utc)
QUESTIONS = (
    "Where does Maya live now?",
    "What did Maya do in April 2024?",
    "Where does the brother who waited at the finish line work?",
)
REFLECT_QUESTION = "Was moving to Denver a good decision for Maya?"
PROFILE = BankProfile(name="Ava", background="I am Maya's personal assistant. I help her with running and work.",
                      disposition=Disposition(skepticism=3, literalism=2, empathy=4, bias=0.3))
NO_LLM = ("reflect skipped: no LLM found. A local model needs llama-cpp-python, which builds from source (about 5 "
          "minutes on 2 cores): `make local` in a clone of hindsight does it all; elsewhere `pip install "
          "'hindsight-memory[local]'`, then `hindsight models install qwen-1.5b`. Or set HINDSIGHT_LLM_BASE_URL to an "
          "OpenAI-compatible endpoint. Then run the demo again.")
# The background reasoning after retain (observations, reinforcement) waits for process_pending: the demo's
# LLM calls are the reflect below, and their number does not depend on how fast retain runs.
DEMO_CONFIG = {"reflect": {"work": {"background": False}}}
REFLECT_BUDGET = 600  # tokens of evidence: the recall demo's 400, plus room for the opinion-relevant facts


def retain_sample(bank: Bank) -> list[RetainResult]:
    """The demo's bank: Ava's profile and the sessions of the shipped sample conversation, one retain each."""
    bank.set_profile(PROFILE)
    return [bank.retain(s.messages, timestamp=s.date, document_id=s.id) for s in load_sample()]


def run(directory: str, *, llm: LLM | None = None, embedder: Embedder | None = None) -> ReflectResult | None:
    """The whole demo in `directory`; the reflect result, or None without an LLM. `llm` and `embedder` default to
    the configured ones (the auto backend finds an installed local model)."""
    with Hindsight(directory, HindsightConfig.from_dict(DEMO_CONFIG), llm=llm, embedder=embedder) as hs:
        bank = hs.bank("demo")
        with console.status("retaining the sample conversation (loads MiniLM and spaCy)..."):
            retained = retain_sample(bank)
        for session, r in zip(load_sample(), retained, strict=True):
            console.print(f"retained session [bold]{session.id}[/] ({session.date:%Y-%m-%d}): "
                          f"{r.created} new units, {r.unchanged} unchanged")
        units = Table("network", "occurred", "entities", "text", title="memory units")
        for u in bank.units():
            span = f"{u.occurred_start:%Y-%m-%d}" if u.occurred_start else ""
            if u.occurred_start and u.occurred_end and u.occurred_end.date() != u.occurred_start.date():
                span += f" .. {u.occurred_end:%Y-%m-%d}"
            units.add_row(u.network.value, span, ", ".join(u.entities), u.text.replace("\n", " / ")[:110])
        console.print(units)
        ents = Table("entity", "label", "mentions", "aliases (resolution score)", title="entities")
        for e in sorted(bank.entities(), key=lambda e: (-e.mention_count, e.name)):
            aliases = ", ".join(f"{a.alias} ({a.score:.2f})" for a in e.aliases if a.alias != e.name)
            ents.add_row(e.name, e.label, str(e.mention_count), aliases)
        console.print(ents)
        stats = bank.stats()
        counts = Counter(stats.links)
        console.print("links: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        console.print(f"stored in {directory}/hindsight.db; indexes in {directory}/banks/demo/")
        show_recalls(bank, hs.config.recall.fusion.k)
        return show_reflect(bank, hs.llm is not None)


def show_recalls(bank: Bank, rrf_k: int) -> list[int]:
    """Recall each demo question under a small budget and print why each hit came back; the hit counts."""
    counts = []
    for question in QUESTIONS:
        result = bank.recall(question, budget=400, query_time=QUERY_TIME, top_k=4)
        console.print(explain_table(explain_recall(result, rrf_k)))
        superseded = [h for h in result.hits if h.superseded_by]
        note = f", {len(superseded)} kept as history (superseded by a newer fact)" if superseded else ""
        console.print(f"{len(result.hits)} hits, {result.tokens_used} of {result.budget} tokens{note}")
        counts.append(len(result.hits))
    return counts


def show_reflect(bank: Bank, have_llm: bool) -> ReflectResult | None:
    """Reflect on REFLECT_QUESTION and print the answer, its evidence and the opinions formed; without an LLM, one
    line saying how to get one (and None)."""
    if not have_llm:
        console.print(f"[yellow]{escape(NO_LLM)}[/]", soft_wrap=True)
        return None
    try:
        with console.status("reflecting with the LLM (a local model loads on first use)..."):
            result = bank.reflect(REFLECT_QUESTION, budget=REFLECT_BUDGET, query_time=QUERY_TIME)
    except LLMNotConfiguredError as exc:  # e.g. a model file without llama-cpp-python to run it
        console.print(f"[yellow]{escape(NO_LLM)}[/] ({escape(str(exc))})", soft_wrap=True)
        return None
    console.print(f"\n[bold]reflect:[/] {REFLECT_QUESTION}\n[bold]answer:[/] {escape(result.answer)}")
    evidence = Table("unit id", "cited", "network", "text", title="evidence")
    for u in result.evidence:
        evidence.add_row(u.id[:8], "yes" if u.id in result.cited else "", u.network.value,
                         u.text.replace("\n", " / ")[:110])
    console.print(evidence)
    opinions = Table("opinion id", "confidence", "opinion", "formed from", title="opinions formed")
    for change in result.opinions:
        unit, ids = change.unit, change.event.evidence
        more = f" +{len(ids) - 3}" if len(ids) > 3 else ""
        opinions.add_row(unit.id[:8], f"{unit.confidence:.2f}", unit.text, ", ".join(i[:8] for i in ids[:3]) + more)
    console.print(opinions if result.opinions else f"no opinion formed ({result.opinion_error or 'none stated'})")
    for rejected in result.rejected_opinions:
        console.print(f"not kept as an opinion ({rejected.reason.value}): {escape(rejected.text)}", soft_wrap=True)
    if result.weak:
        console.print(f"[yellow]weak answer:[/] {escape(result.weak)}", soft_wrap=True)
    console.print(f"{escape(result.model)}: {result.usage.prompt_tokens} prompt + {result.usage.completion_tokens} "
                  f"completion tokens in {result.usage.calls} calls, {result.seconds:.1f} s; {bank.pending()} items "
                  "queued for bank.process_pending()", soft_wrap=True)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", default=None, help="memory directory (default: a fresh temporary one)")
    args = parser.parse_args(argv)
    if args.dir:
        run(args.dir)
    else:
        with tempfile.TemporaryDirectory(prefix="hindsight-demo-") as tmp:
            run(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
