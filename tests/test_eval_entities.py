"""eval/entities.py: the gold fixture is well formed, and the scores follow their definitions on a hand-made case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.entities import (
    ACCEPTED,
    DEFAULT_DATA,
    SPEAKER,
    GoldConversation,
    Predicted,
    PredictedEntity,
    PredictedMention,
    load_gold,
    score,
    surface_form,
)


def test_the_gold_fixture_is_large_and_varied_enough() -> None:
    conversations = load_gold(DEFAULT_DATA)
    mentions = [g for c in conversations for s in c.sessions for m in s.messages for g in m.mentions]
    assert len(conversations) >= 5 and len(mentions) >= 150
    kinds = {kind for c in conversations for _, kind in c.entities.values()}
    assert {"person", "pet", "place", "organisation"} <= kinds <= set(ACCEPTED)
    forms: dict[tuple[str, str], set[str]] = {}
    for c in conversations:
        for s in c.sessions:
            for m in s.messages:
                for g in m.mentions:
                    forms.setdefault((c.id, g.entity), set()).add(surface_form(g.text))
                    assert m.content[g.start:g.end] == g.text
    assert sum(len(f) > 1 for f in forms.values()) >= 20  # aliases, nicknames, variants


@pytest.fixture
def gold(tmp_path: Path) -> list[GoldConversation]:
    path = tmp_path / "gold.json"
    path.write_text(json.dumps({"conversations": [{
        "id": "c", "speakers": {"Ann": "ann", "Bo": "bo"},
        "entities": {"ann": {"name": "Ann", "kind": "person"}, "bo": {"name": "Bo", "kind": "person"},
                     "meg": {"name": "Margaret", "kind": "person"}, "rex": {"name": "Rex", "kind": "pet"},
                     "acme": {"name": "Acme", "kind": "organisation"}},
        "sessions": [{"id": "s1", "date": "2024-01-01T10:00:00+00:00", "messages": [
            {"speaker": "Ann", "role": "user", "content": "My aunt Margaret, we call her Meg, has a dog Rex.",
             "mentions": [{"text": "Margaret", "entity": "meg"}, {"text": "Meg", "entity": "meg"},
                          {"text": "Rex", "entity": "rex"}]},
            {"speaker": "Bo", "role": "user", "content": "Mostly Acme and friends.",
             "mentions": [{"text": "Acme", "entity": "acme"}]},
        ]}],
    }]}))
    return load_gold(path)


def at(gold: list[GoldConversation], key: str, text: str) -> tuple[int, int]:
    content = next(m.content for s in gold[0].sessions for m in s.messages if m.key == key)
    return content.index(text), content.index(text) + len(text)


def test_scores_on_a_hand_made_case(gold: list[GoldConversation]) -> None:
    def case(meg_to: str, rex_label: str) -> Predicted:
        labels = {"Margaret": "PERSON", "Meg": "ORG", "Rex": rex_label, "Mostly Acme": "ORG", "Ann": "PERSON",
                  "Bo": "PERSON"}
        entities = [PredictedEntity("c", i, i, label, [i]) for i, label in labels.items() if i != "Meg" or
                    meg_to == "Meg"]
        mentions = [PredictedMention("s1-0", *at(gold, "s1-0", "Margaret"), "Margaret"),
                    PredictedMention("s1-0", *at(gold, "s1-0", "Meg"), meg_to),
                    PredictedMention("s1-0", *at(gold, "s1-0", "Rex"), "Rex"),
                    PredictedMention("s1-1", *at(gold, "s1-1", "Mostly Acme"), "Mostly Acme"),
                    PredictedMention("s1-0", SPEAKER, SPEAKER, "Ann"), PredictedMention("s1-1", SPEAKER, SPEAKER, "Bo")]
        return Predicted(entities, mentions)

    report = score(gold, {"c": case("Meg", "ORG")})
    s = report.scores
    # Meg split off Margaret is not a canonical entity; the junk span reaches outside the gold "Acme".
    assert (s.predicted_entities, s.gold_entities) == (6, 5)
    assert s.entity_precision == pytest.approx(4 / 6, abs=1e-4) and s.entity_recall == pytest.approx(4 / 5, abs=1e-4)
    assert (s.multi_form_entities, s.alias_merge_accuracy) == (1, 0.0)
    assert s.kind_accuracy == pytest.approx(3 / 4, abs=1e-4)  # Rex is a pet, not an ORG
    assert s.mention_precision == pytest.approx(3 / 4, abs=1e-4) and s.mention_recall == pytest.approx(3 / 4, abs=1e-4)
    assert report.missed == ["c/acme"]

    s = score(gold, {"c": case("Margaret", "PET")}).scores
    assert s.entity_precision == pytest.approx(4 / 5, abs=1e-4)
    assert s.alias_merge_accuracy == 1.0 and s.kind_accuracy == 1.0
