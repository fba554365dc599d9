"""Hostile and broken input, table-driven: retain, recall, the other bank methods, config loading, the CLI and the
llm extractor with a misbehaving LLM. Each case names the typed error or the behaviour it expects; after every
failure the banks are exactly as before and pass check()."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from hindsight import (
    ConfigError,
    ContentTooLargeError,
    ExtractionError,
    Hindsight,
    HindsightConfig,
    InvalidBankIdError,
    InvalidInputError,
    Message,
    Network,
    ReservedDocumentIdError,
    RetainRequest,
    UnitNotFoundError,
)
from hindsight.bank import Bank
from hindsight.cli import main as cli_main
from hindsight.embed.base import Embedder
from hindsight.recall.types import RecallResult
from tests.bank_state import BankState, bank_state, seed
from tests.fake_llm import SwitchLLM

QT = datetime(2024, 6, 1, 12, tzinfo=timezone.utc)
MB = 1_000_000
VALID_FACTS = json.dumps({"facts": [{
    "what": "Zoë moved to 北京 with Владимир", "fact_type": "world", "entities": ["Zoë", "北京", "Владимир"],
    "causal_relations": [],
}]})  # fmt: skip


@dataclass
class Ctx:
    hs: Hindsight  # nlp extractor, bank "h" seeded
    llm_hs: Hindsight  # llm extractor, bank "l"
    llm: SwitchLLM
    cli_dir: Path  # a closed memory directory with bank "c", for the CLI
    tmp: Path

    @property
    def bank(self) -> Bank:
        return self.hs.bank("h")

    @property
    def llm_bank(self) -> Bank:
        return self.llm_hs.bank("l")


@dataclass
class Case:
    id: str
    run: Callable[[Ctx], Any]
    expect: type[Exception] | Callable[[Any, Ctx], None]


def texts(bank: Bank) -> str:
    return "\n".join(u.text for u in bank.units())


def retain(content: Any, **kw: Any) -> Callable[[Ctx], Any]:
    return lambda c: c.bank.retain(content, **kw)


YEAR_1 = retain("Maya met Bob in Athens yesterday.", timestamp="0001-01-01", document_id="year-1")


def recall(query: Any, **kw: Any) -> Callable[[Ctx], Any]:
    kw.setdefault("query_time", QT)
    return lambda c: c.bank.recall(query, **kw)


def cli(*argv: str, config: str | None = None) -> Callable[[Ctx], int]:
    def run(c: Ctx) -> int:
        extra = []
        if config is not None:
            (c.tmp / "cli.yaml").write_text(config, encoding="utf-8")
            extra = ["--config", str(c.tmp / "cli.yaml")]
        return cli_main(["--dir", str(c.cli_dir), *extra, *argv])

    return run


DEEP_LINE = "[" * 100_000 + "]" * 100_000 + "\n"
HUGE_INT_LINE = '{"table": "banks", "values": {"created_at": ' + "7" * 5_000 + "}}\n"


def import_after_header(row_line: str) -> Callable[[Ctx], Any]:
    """Import, as a new bank, bank h's export header followed by `row_line`."""
    return lambda c: c.hs.import_bank([next(iter(c.hs.export_bank("h"))), row_line], bank_id="imported")


def cli_import_after_header(row_line: str) -> Callable[[Ctx], int]:
    """`hindsight import` of a file of bank h's export header followed by `row_line`."""
    def run(c: Ctx) -> int:
        path = _write(c.tmp / "import.ndjson", next(iter(c.hs.export_bank("h"))) + row_line)
        return cli("import", path, "--bank", "imported")(c)

    return run


def config_file(content: str | bytes) -> Callable[[Ctx], HindsightConfig]:
    def load(c: Ctx) -> HindsightConfig:
        path = c.tmp / "config.yaml"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        return HindsightConfig.from_yaml(path)

    return load


def llm_retain(*replies: str | BaseException) -> Callable[[Ctx], Any]:
    doc = f"llm-{len(replies)}-{abs(hash(replies[0]))}"  # its own document: a stored one would be "unchanged"

    def run(c: Ctx) -> Any:
        c.llm.script(*replies)
        return c.llm_bank.retain(
            [Message(speaker="Zoë", content="I moved to Beijing with Vladimir.")],
            timestamp="2024-05-05",
            document_id=doc,
        )

    return run


# -- expected behaviours --------------------------------------------------------------------------


def stored_clean(result: Any, c: Ctx) -> None:
    for u in result.units:
        assert "\x00" not in u.text and not any("\ud800" <= ch <= "\udfff" for ch in u.text)
        u.text.encode("utf-8")
    assert result.created >= 1


def created(result: Any, c: Ctx) -> None:
    assert result.created >= 1


def entities_named(*names: str) -> Callable[[Any, Ctx], None]:
    def check(result: Any, c: Ctx) -> None:
        bank = c.llm_bank if result.units and result.units[0].bank_id == "l" else c.bank
        assert set(names) <= {e.name for e in bank.entities()}

    return check


def stored_literally(needle: str) -> Callable[[Any, Ctx], None]:
    def check(result: Any, c: Ctx) -> None:
        assert needle in texts(c.bank) or needle == result.document_id
        assert {"units", "banks"} <= {r[0] for r in c.hs.store._query("SELECT name FROM sqlite_master")}

    return check


def opaque_document_id(result: Any, c: Ctx) -> None:
    assert result.document_id == "../../../etc/passwd"
    assert sorted(p.name for p in c.hs.path.iterdir()) == sorted(["LOCK", "banks", *_db_files(c.hs.path)])


def _db_files(path: Path) -> list[str]:
    return [p.name for p in path.iterdir() if p.name.startswith("hindsight.db")]


def mentioned_in_year(year: int) -> Callable[[Any, Ctx], None]:
    def check(result: Any, c: Ctx) -> None:
        assert result.units and all(u.mentioned_at.year == year for u in result.units)
        assert all(u.mentioned_at.tzinfo is not None for u in result.units)

    return check


def mixed_zones(result: Any, c: Ctx) -> None:
    (unit,) = result.units
    assert unit.mentioned_at == datetime(2024, 5, 2, 5, 5, tzinfo=timezone.utc)  # the aware one, in UTC


def no_private_speaker(result: Any, c: Ctx) -> None:
    assert "Zed" not in texts(c.bank) and "secretname" not in texts(c.bank)


def hits_ok(result: RecallResult, c: Ctx) -> None:
    assert isinstance(result, RecallResult) and result.tokens_used <= result.budget
    ids = {u.id for u in c.bank.units()}
    assert all(h.unit.id in ids for h in result.hits)


def finds(word: str) -> Callable[[RecallResult, Ctx], None]:
    def check(result: RecallResult, c: Ctx) -> None:
        hits_ok(result, c)
        assert any(word in h.unit.text for h in result.hits)

    return check


def no_hits(result: RecallResult, c: Ctx) -> None:
    assert result.hits == [] and result.tokens_used == 0


def everything_fits(result: RecallResult, c: Ctx) -> None:
    hits_ok(result, c)
    assert len(result.hits) == result.candidates > 0


def only_world(result: RecallResult, c: Ctx) -> None:
    hits_ok(result, c)
    assert result.hits and all(h.unit.network is Network.WORLD for h in result.hits)


def only_year_1(result: RecallResult, c: Ctx) -> None:
    hits_ok(result, c)
    assert [h.unit.text for h in result.hits] == ["Maya met Bob in Athens yesterday."]  # from retain-year-1


def exit_code_2(result: int, c: Ctx) -> None:
    assert result == 2


def defaults(result: HindsightConfig, c: Ctx) -> None:
    assert result == HindsightConfig()


def graph_ok(result: Any, c: Ctx) -> None:
    assert result.number_of_nodes() > 0


def no_units(result: Any, c: Ctx) -> None:
    assert result.created == 0 and result.units == []


CASES: list[Case] = [
    # retain: emptiness, size, characters
    Case("retain-empty", retain(""), InvalidInputError),
    Case("retain-whitespace", retain(" \n\t\u3000 "), InvalidInputError),
    Case("retain-zero-width-only", retain("\u200b\u200c\u200d\ufeff"), InvalidInputError),
    Case("retain-direction-marks-only", retain("\u200f\u200e\u202e"), InvalidInputError),
    Case("retain-nul-only", retain("\x00\x00\x00"), InvalidInputError),
    Case(
        "retain-empty-messages",
        retain([Message(role="user", content=" "), Message(role="user", content="")]),
        InvalidInputError,
    ),
    Case("retain-10MB-text", retain("Maya went hiking. " * (10 * MB // 18)), ContentTooLargeError),
    Case("retain-10MB-in-messages", retain([Message(role="user", content="x" * MB)] * 10), ContentTooLargeError),
    Case("retain-10001-messages", retain([Message(role="user", content="hi")] * 10_001), ContentTooLargeError),
    Case("retain-nul-bytes", retain("Maya\x00 met\x00Bob at the\x00 lake.", timestamp="2024-05-09"), stored_clean),
    Case("retain-lone-surrogates", retain("Maya \ud800met Bob\udfff in Oslo.", timestamp="2024-05-09"), stored_clean),
    Case(
        "retain-rtl-zero-width",
        retain(
            [
                Message(
                    speaker="Maya", content="\u202eBob\u202c met \u200bMaya in Haifa \u05e9\u05dc\u05d5\u05dd \u200f"
                )
            ],
            timestamp="2024-05-09",
        ),
        created,
    ),
    Case(
        "retain-unicode-entities",
        retain([Message(speaker="Zoë", content="Zoë visited 北京 with Владимир and José.")], timestamp="2024-05-09"),
        entities_named("Zoë", "José"),
    ),
    Case(
        "retain-sql-in-content",
        retain("Robert'); DROP TABLE units;-- moved to Oslo.", timestamp="2024-05-09"),
        stored_literally("DROP TABLE units"),
    ),
    Case(
        "retain-sql-in-document-id",
        retain("Maya likes tea.", document_id="x'; DROP TABLE banks;--"),
        stored_literally("x'; DROP TABLE banks;--"),
    ),
    Case(
        "retain-dotdot-document-id", retain("Maya likes coffee.", document_id="../../../etc/passwd"), opaque_document_id
    ),
    Case("retain-surrogate-document-id", retain("Maya likes tea.", document_id="doc\ud800"), InvalidInputError),
    # retain: the document ids of derived memory (opinions, observations) are reserved
    Case("retain-opinions-document-id", retain("Maya likes tea.", document_id="_opinions"), ReservedDocumentIdError),
    Case(
        "retain-observations-document-id",
        retain("Maya likes tea.", document_id="_observations:e1"),
        ReservedDocumentIdError,
    ),
    Case("retain-reserved-prefix-document-id", retain("Maya likes tea.", document_id="_x"), ReservedDocumentIdError),
    Case(
        "retain-many-one-reserved-document-id",
        lambda c: c.bank.retain_many([RetainRequest("Maya likes tea.", document_id="tea"),
                                      RetainRequest("Maya likes coffee.", document_id="_opinions")]),
        ReservedDocumentIdError,
    ),
    Case("retain-nul-message-id", retain([Message(role="user", content="hi Bob", id="t\x00")]), InvalidInputError),
    Case(
        "retain-surrogate-message-id", retain([Message(role="user", content="hi Bob", id="t\udfff")]), InvalidInputError
    ),
    Case(
        "retain-private-speaker",
        retain(
            [Message(speaker="<private>Zed secretname</private>", role="user", content="The lake was calm today.")],
            timestamp="2024-05-09",
        ),
        no_private_speaker,
    ),
    Case("retain-dict-content", retain({"content": "Maya"}), InvalidInputError),
    Case("retain-bytes-content", retain(b"Maya likes tea"), InvalidInputError),
    Case("retain-message-without-author", retain([{"content": "who said this?"}]), InvalidInputError),
    Case("retain-context-not-text", retain("Maya likes tea.", context={"k": "v"}), InvalidInputError),
    # retain: dates
    Case("retain-year-0", retain("Maya likes tea.", timestamp="0000-01-01"), InvalidInputError),
    Case("retain-year-1", YEAR_1, mentioned_in_year(1)),
    Case(
        "retain-year-9999-last-second",
        retain("Maya met Bob in Kyoto next week.", timestamp="9999-12-31T23:59:59"),
        mentioned_in_year(9999),
    ),
    Case("retain-datetime-max", retain("Maya met Bob in Lima.", timestamp=datetime.max), mentioned_in_year(9999)),
    Case(
        "retain-year-9999-past-utc",
        retain("Maya met Bob in Apia.", timestamp="9999-12-31T23:00:00-12:00"),
        InvalidInputError,
    ),
    Case(
        "retain-naive-aware-mix",
        retain(
            [
                Message(speaker="Maya", content="I moved to Oslo.", timestamp=datetime(2024, 5, 2, 10)),
                Message(
                    speaker="Bob",
                    role="assistant",  # an assistant's reply joins the turn it answers: one unit, two zones
                    content="Nice!",
                    timestamp=datetime(2024, 5, 2, 10, 5, tzinfo=timezone(timedelta(hours=5))),
                ),
            ],
            timestamp="2024-05-02T12:00:00+02:00",
        ),
        mixed_zones,
    ),
    Case("retain-timestamp-words", retain("Maya likes tea.", timestamp="last tuesday"), InvalidInputError),
    Case("retain-timestamp-int", retain("Maya likes tea.", timestamp=1714000000), InvalidInputError),
    # bank ids
    Case("bank-id-dotdot", lambda c: c.hs.bank("../evil"), InvalidBankIdError),
    Case("bank-id-nested-dotdot", lambda c: c.hs.bank("a/../../b"), InvalidBankIdError),
    Case("bank-id-only-dots", lambda c: c.hs.bank(".."), InvalidBankIdError),
    Case("bank-id-nul", lambda c: c.hs.bank("a\x00b"), InvalidBankIdError),
    Case("bank-id-sql", lambda c: c.hs.bank("x'; DROP TABLE banks;--"), InvalidBankIdError),
    Case("delete-bank-dotdot", lambda c: c.hs.delete_bank("../h"), InvalidBankIdError),
    # recall: query syntax and characters
    Case("recall-unbalanced-quote", recall('"Bob hiking'), finds("Bob")),
    Case("recall-near", recall("NEAR(Bob hiking, 2)"), finds("Bob")),
    Case("recall-star", recall("Pepp*"), hits_ok),
    Case("recall-or", recall("Pepper OR Globex"), finds("Pepper")),
    Case("recall-minus", recall("-Bob beagle"), finds("beagle")),
    Case("recall-column-filter", recall("text: beagle"), finds("beagle")),
    Case("recall-sql", recall("'; DROP TABLE units; --"), hits_ok),
    Case("recall-nul-only", recall("\x00\x00"), no_hits),
    Case("recall-lone-surrogate", recall("Pepper \ud800"), finds("Pepper")),
    Case("recall-zero-width", recall("\u200bPepper\u200b"), hits_ok),
    Case("recall-rtl", recall("\u202ereppeP\u202c beagle"), finds("beagle")),
    Case("recall-private-query", recall("<private>Pepper beagle</private>"), no_hits),
    Case("recall-10MB", recall("Pepper " * (10 * MB // 7)), ContentTooLargeError),
    Case("recall-not-text", recall(["Pepper"]), InvalidInputError),
    # recall: budgets, networks, dates
    Case("recall-budget-0", recall("Pepper", budget=0), no_hits),
    Case("recall-budget-negative", recall("Pepper", budget=-1), InvalidInputError),
    Case("recall-budget-bigger-than-bank", recall("Pepper", budget=10**12), everything_fits),
    Case("recall-budget-float", recall("Pepper", budget=2.5), InvalidInputError),
    Case("recall-budget-bool", recall("Pepper", budget=True), InvalidInputError),
    Case("recall-top-k-negative", recall("Pepper", top_k=-1), InvalidInputError),
    Case("recall-unknown-network", recall("Pepper", networks=["memories"]), InvalidInputError),
    Case("recall-network-not-a-list", recall("Pepper", networks=5), InvalidInputError),
    Case("recall-no-networks", recall("Pepper", networks=[]), no_hits),
    Case("recall-one-network-as-string", recall("Pepper", networks="world"), only_world),
    Case("recall-query-time-year-0", recall("Pepper", query_time="0000-06-01"), InvalidInputError),
    Case("recall-query-time-max", recall("What did Bob do last week?", query_time=datetime.max), hits_ok),
    # The year-1 unit is retained again (the same document: idempotent), so the case holds when run alone.
    Case("recall-as-of-year-1", lambda c: (YEAR_1(c), recall("Maya Bob", as_of=datetime.min)(c))[1], only_year_1),
    Case(
        "recall-naive-and-aware",
        recall(
            "Pepper", query_time=datetime(2024, 6, 1), as_of=datetime(2024, 6, 1, tzinfo=timezone(timedelta(hours=-7)))
        ),
        finds("Pepper"),
    ),
    # other bank methods
    Case("units-unknown-network", lambda c: c.bank.units(network="memories"), InvalidInputError),
    Case("units-negative-limit", lambda c: c.bank.units(limit=-1), InvalidInputError),
    Case("units-negative-offset", lambda c: c.bank.units(offset=-3), InvalidInputError),
    Case("get-unit-sql", lambda c: c.bank.get_unit("' OR 1=1 --"), UnitNotFoundError),
    Case("graph-unknown-network", lambda c: c.bank.to_networkx(networks=["memories"]), InvalidInputError),
    Case("graph-naive-since", lambda c: c.bank.to_networkx(since=datetime(2024, 1, 1)), graph_ok),
    Case("graph-bad-until", lambda c: c.bank.to_networkx(until="soon"), InvalidInputError),
    Case("profile-not-a-profile", lambda c: c.bank.set_profile({"name": "x"}), InvalidInputError),
    # import: JSON that Python's parser refuses is a typed error naming the line
    Case("import-line-nested-100000-deep", import_after_header(DEEP_LINE), InvalidInputError),
    Case("import-integer-of-5000-digits", import_after_header(HUGE_INT_LINE), InvalidInputError),
    # config loading
    Case("config-malformed-yaml", config_file("store: [unclosed\n  - x"), ConfigError),
    Case("config-tabs-yaml", config_file("store:\n\thnsw_m: 8\n"), ConfigError),
    Case("config-list", config_file("- store\n- recall\n"), ConfigError),
    Case("config-unknown-key", config_file("store:\n  hnsw_mm: 8\n"), ConfigError),
    Case("config-wrong-type", config_file("store:\n  hnsw_m: many\n"), ConfigError),
    Case("config-out-of-range", config_file("store:\n  hnsw_save_every: 0\n"), ConfigError),
    Case("config-not-utf8", config_file(b"store:\n  backend: \xff\xfe\n"), ConfigError),
    Case("config-python-tag", config_file("!!python/object/apply:os.system ['true']\n"), ConfigError),
    Case("config-empty", config_file(""), defaults),
    Case("config-directory", lambda c: HindsightConfig.from_yaml(c.tmp), ConfigError),
    Case(
        "engine-malformed-config",
        lambda c: Hindsight(c.tmp / "never", config=_write(c.tmp / "e.yaml", "a: [")),
        ConfigError,
    ),
    # the CLI: every failure is exit code 2 with a message, never a traceback
    Case("cli-dotdot-bank", cli("retain", "../evil", "--text", "hi"), exit_code_2),
    Case("cli-missing-file", cli("retain", "c", "--file", "/nonexistent/x.json"), exit_code_2),
    Case("cli-bad-json", lambda c: cli("retain", "c", "--file", _write(c.tmp / "bad.json", "{nope"))(c), exit_code_2),
    Case(
        "cli-json-not-messages",
        lambda c: cli("retain", "c", "--file", _write(c.tmp / "n.json", "[1, 2]"))(c),
        exit_code_2,
    ),
    Case(
        "cli-json-message-without-author",
        lambda c: cli("retain", "c", "--file", _write(c.tmp / "m.json", '[{"content": "hi"}]'))(c),
        exit_code_2,
    ),
    Case(
        "cli-invalid-utf8-file",
        lambda c: cli("retain", "c", "--file", _write(c.tmp / "b.txt", b"\xff\xfe"))(c),
        exit_code_2,
    ),
    Case("cli-malformed-config", cli("stats", "c", config="store: [unclosed"), exit_code_2),
    Case("cli-missing-bank", cli("units", "nobody"), exit_code_2),
    Case("cli-unknown-network", cli("units", "c", "--network", "memories"), exit_code_2),
    Case("cli-year-0", cli("retain", "c", "--text", "Maya likes tea.", "--timestamp", "0000-01-01"), exit_code_2),
    Case("cli-import-line-nested-100000-deep", cli_import_after_header(DEEP_LINE), exit_code_2),
    Case("cli-import-integer-of-5000-digits", cli_import_after_header(HUGE_INT_LINE), exit_code_2),
    # the llm extractor with a misbehaving LLM
    Case("llm-timeout", llm_retain(TimeoutError("read timed out after 30 s")), ExtractionError),
    Case("llm-non-json", llm_retain("Sure! Zoë moved.", "Here you go: facts", "no json, sorry"), ExtractionError),
    Case(
        "llm-schema-violation",
        llm_retain(*['{"facts": [{"what": "Zoë moved", "fact_type": "rumour"}]}'] * 3),
        ExtractionError,
    ),
    Case("llm-facts-not-a-list", llm_retain(*['{"facts": "Zoë moved"}'] * 3), ExtractionError),
    Case("llm-wrong-json-type", llm_retain(*["[1, 2, 3]"] * 3), ExtractionError),
    Case("llm-empty-answer", llm_retain("", " ", "\n"), ExtractionError),
    Case("llm-refusal", llm_retain(*["I'm sorry, I can't help with that."] * 3), ExtractionError),
    Case("llm-truncated-json", llm_retain(*['{"facts": [{"what": "Zoë moved'] * 3), ExtractionError),
    Case("llm-huge-garbage", llm_retain(*["z" * MB] * 3), ExtractionError),
    Case(
        "llm-recovers-after-a-bad-reply", llm_retain("not json", VALID_FACTS), entities_named("Zoë", "北京", "Владимир")
    ),
    Case("llm-no-facts", llm_retain('{"facts": []}'), no_units),
]


def _write(path: Path, content: str | bytes) -> str:
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return str(path)


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[Ctx]:
    root = tmp_path_factory.mktemp("hostile")
    cli_dir = root / "cli"
    with Hindsight(cli_dir, embedder=minilm) as hs:
        hs.bank("c").retain("Maya likes green tea.", timestamp="2024-05-01")
    llm = SwitchLLM()
    hs = Hindsight(root / "nlp", embedder=minilm)
    llm_hs = Hindsight(
        root / "llm", HindsightConfig.from_dict({"retain": {"extract": {"backend": "llm"}}}), llm=llm, embedder=minilm
    )
    seed(hs.bank("h"))
    llm_hs.bank("l")
    tmp = root / "tmp"
    tmp.mkdir()
    yield Ctx(hs, llm_hs, llm, cli_dir, tmp)
    hs.close()
    llm_hs.close()


def everything(c: Ctx, minilm: Embedder) -> tuple[list[str], BankState, BankState, BankState]:
    with Hindsight(c.cli_dir, embedder=minilm) as cli_hs:
        cli_state = bank_state(cli_hs.bank("c"))
    return c.hs.banks() + c.llm_hs.banks(), bank_state(c.bank), bank_state(c.llm_bank), cli_state


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 40
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(ctx: Ctx, minilm: Embedder, case: Case, capsys: pytest.CaptureFixture[str]) -> None:
    before = everything(ctx, minilm)
    if isinstance(case.expect, type):
        with pytest.raises(case.expect):
            case.run(ctx)
        assert everything(ctx, minilm) == before
    else:
        case.expect(case.run(ctx), ctx)
    if case.id.startswith("cli"):
        out = capsys.readouterr().out
        assert "error:" in out and "Traceback" not in out
        if case.id.startswith("cli-import"):
            assert "line 2" in out and len(out.strip().splitlines()) == 1, out
    for bank in (ctx.bank, ctx.llm_bank):
        report = bank.check()
        assert report.ok, str(report)
