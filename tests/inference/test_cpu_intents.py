"""The CPU dialogue manager's intent model learns a profile from the profile alone.

Every profile here is invented in the test (no demo names), so what is recognised comes from the
tools' descriptions, names, schemas and examples and the claims' topics, never from a lexicon of
one profile. Speed is not asserted here: ``vocero bench dialogue`` holds ``fit_ms`` and
``classify_p95_ms``.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from vocero.bench.dialogue import HELD_OUT, ROOT, score_all, weakest
from vocero.contracts.domain import AgentProfile, ProfileMatch, ToolDefinition, ToolSpec
from vocero.contracts.ports import ClaimTopic
from vocero.contracts.prohibited import prohibited_tools
from vocero.inference.dialogue.intent_material import material
from vocero.inference.dialogue.intents import ACTS, OUT_OF_SCOPE, IntentModel

PROFILES = Path(__file__).resolve().parents[2] / "fixtures" / "profiles"


def _schema(**properties: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {k: {"type": "string", "description": d} for k, d in properties.items()},
    }


TRACK = ToolDefinition(
    name="parcels.track",
    description="Find where a parcel is by its tracking code.",
    input_schema=_schema(tracking_code="The code printed on the receipt"),
)
MOVE = ToolDefinition(
    name="visits.move",
    description="Move a home visit to another day and time. The caller must confirm first.",
    input_schema=_schema(visit_ref="The visit's reference", new_day="The day the caller wants"),
)
PAY = ToolDefinition(
    name="invoices.pay",
    description="Pay an open invoice with the card on file.",
    input_schema=_schema(invoice_number="The invoice's number"),
)
ANSWERS = ToolDefinition(
    name="help.answers",
    description="Answers from the company's approved help articles.",
    input_schema=_schema(query="The caller's question in their own words"),
    builtin="knowledge.search",
)
RINGBACK = ToolDefinition(
    name="ringback.schedule",
    description="Schedule a phone call to the caller later.",
    input_schema=_schema(when="When, in the caller's words", reason="What it is about"),
    builtin="followups.record",
)
TOOLS = [TRACK, MOVE, PAY, ANSWERS, RINGBACK]
CLAIMS = [
    ClaimTopic(key="warranty.length", text="Every device has a two-year warranty.",
               topics=["warranty", "guarantee", "broken device"]),
    ClaimTopic(key="delivery.area", text="We deliver anywhere on the mainland within 48 hours.",
               topics=["delivery area", "where do you deliver", "islands"]),
    ClaimTopic(key="payment.methods", text="We accept cards and bank transfers.",
               topics=["payment methods", "pay by card", "paypal"]),
]  # fmt: skip


@pytest.fixture(scope="module")
def model() -> IntentModel:
    return IntentModel.fit(TOOLS, CLAIMS)


def test_the_labels_are_the_tools_names_and_the_acts(model: IntentModel) -> None:
    assert set(model.intents) == {t.name for t in TOOLS} | set(ACTS)


def test_rank_is_every_intent_with_a_probability_best_first(model: IntentModel) -> None:
    ranked = model.rank("where is my parcel")
    assert [label for label, _ in ranked][:1] == ["parcels.track"]
    assert {label for label, _ in ranked} == set(model.intents)
    scores = [score for _, score in ranked]
    assert scores == sorted(scores, reverse=True)
    assert sum(scores) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("line", "tool"),
    [
        ("wheres my parcel the code is XY12", "parcels.track"),
        ("has my package been delivered", "parcels.track"),
        ("tracking code 88A12 please", "parcels.track"),
        ("i need to push my visit to next week", "visits.move"),
        ("can you move my home visit to friday", "visits.move"),
        ("i want to pay my invoice", "invoices.pay"),
        ("id like to settle my bill", "invoices.pay"),
        ("call me back tomorrow at 4", "ringback.schedule"),
        ("can somebody ring me later", "ringback.schedule"),
    ],
)
def test_a_tool_is_recognised_from_its_own_description(
    model: IntentModel, line: str, tool: str
) -> None:
    assert model.decide(line).intent == tool


@pytest.mark.parametrize(
    ("line", "act"),
    [
        ("hello", "greet"),
        ("good morning", "greet"),
        ("thank you very much", "thanks"),
        ("ok bye", "goodbye"),
        ("can i speak to a human", "person"),
        ("sorry say that again", "repeat"),
        ("what can you do for me", "capabilities"),
        ("am i talking to a robot", "identity"),
        ("no forget it", "decline"),
    ],
)
def test_conversational_acts_are_recognised(model: IntentModel, line: str, act: str) -> None:
    assert model.decide(line).intent == act


@pytest.mark.parametrize("name", ["help.answers", "faq.lookup"])
def test_a_catalog_question_goes_to_the_knowledge_tool_whatever_it_is_called(name: str) -> None:
    knowledge = ToolDefinition(
        name=name, description="Approved answers.", input_schema={}, builtin="knowledge.search"
    )
    model = IntentModel.fit([TRACK, MOVE, PAY, knowledge], CLAIMS)
    for line in ("how long is the warranty", "do you deliver to the islands", "can i use paypal"):
        assert model.decide(line).intent == name, line


def test_without_a_knowledge_tool_claims_are_not_material() -> None:
    with_claims = IntentModel.fit([TRACK, MOVE], CLAIMS)
    without = IntentModel.fit([TRACK, MOVE], [])
    line = "how long is the warranty"
    assert with_claims.rank(line) == without.rank(line)
    assert set(with_claims.intents) == {"parcels.track", "visits.move", *ACTS}


@pytest.mark.parametrize(
    "line",
    [
        "whats the weather like tomorrow",
        "tell me a joke",
        "who won the match last night",
        "tell me about football",
    ],
)
def test_what_nothing_covers_is_out_of_scope(model: IntentModel, line: str) -> None:
    assert model.decide(line).intent == OUT_OF_SCOPE


def test_an_empty_or_unrecognisable_line_is_out_of_scope(model: IntentModel) -> None:
    assert model.decide("").intent == OUT_OF_SCOPE
    assert model.decide(" ... ").intent == OUT_OF_SCOPE


def test_an_off_topic_subject_is_in_scope_for_a_profile_whose_tool_covers_it() -> None:
    forecast = ToolDefinition(
        name="forecast.get",
        description="Tell the caller the weather forecast for their town.",
        input_schema=_schema(town="The caller's town"),
    )
    model = IntentModel.fit([forecast, TRACK], [])
    assert model.decide("whats the weather like tomorrow").intent == "forecast.get"


def _refusing(*specs: ToolSpec) -> AgentProfile:
    return AgentProfile(id="shop", version="1", match=ProfileMatch(tenant="t"), tools=list(specs))


FORGIVE = ToolSpec(name="invoices.forgive", server="billing", resolves_to="write_off_invoice",
                   action_class="prohibited")  # fmt: skip


def test_a_profiles_prohibited_tools_are_material_named_by_their_own_words() -> None:
    paying = ToolSpec(name="invoices.pay", server="billing", resolves_to="pay_invoice",
                      action_class="irreversible")  # fmt: skip
    said = ToolSpec(name="cards.swap", server="billing", resolves_to="replaceCard",
                    action_class="prohibited", description="Replace the card on file.",
                    examples=["put a new card on my account"])  # fmt: skip
    assert prohibited_tools(_refusing(paying, FORGIVE, said)) == [
        ToolDefinition(name="invoices.forgive", description="Write off invoice.", input_schema={}),
        ToolDefinition(name="cards.swap", description="Replace the card on file.", input_schema={},
                       examples=["put a new card on my account"]),
    ]  # fmt: skip


def test_a_request_for_what_only_a_prohibited_tool_does_is_out_of_scope() -> None:
    refused = prohibited_tools(_refusing(FORGIVE))
    model = IntentModel.fit(TOOLS, CLAIMS, refused)
    line = "can you write off my invoice"
    assert IntentModel.fit(TOOLS, CLAIMS).decide(line).intent == "invoices.pay", "the control"
    decision = model.decide(line)
    assert (decision.intent, decision.refused) == (OUT_OF_SCOPE, "invoices.forgive")
    assert model.decide("I want to pay invoice 4471").intent == "invoices.pay"
    assert model.decide("where is my parcel").intent == "parcels.track"
    assert set(model.intents) == {t.name for t in TOOLS} | set(ACTS), "never a label decided"
    assert "refused:invoices.forgive" in dict(model.rank(line))


def test_the_bench_fits_the_prohibited_tools_as_the_agent_does(tmp_path: Path) -> None:
    (tmp_path / "demo.yaml").write_text(
        "profile: demo\n"
        "lines:\n"
        "  - {say: 'please close my account for good', intent: out_of_scope}\n",
        encoding="utf-8",
    )
    report = anyio.run(partial(score_all, tmp_path, PROFILES, servers=False))
    assert report["files"][0]["errors"] == []


CLASSES = [
    ToolDefinition(name=name, description=description, input_schema={})
    for name, description in (
        ("schedule.view", "List the caller's booked classes, soonest first."),
        ("schedule.add", "Book a class with a trainer."),
        ("schedule.shift", "Move a booked class to a new time."),
        ("schedule.call_off", "Call off a booked class."),
        ("passes.show", "Show the caller's gym passes and their expiry dates."),
    )
]  # fmt: skip


@pytest.mark.parametrize(
    ("line", "intent"),
    [
        ("can you cancel my class on friday", "schedule.call_off"),
        ("please drop my class tomorrow", "schedule.call_off"),
        ("what classes have i got", "schedule.view"),
        ("book me a class with a trainer", "schedule.add"),
    ],
)
def test_a_verb_of_the_names_area_is_not_every_siblings_action(line: str, intent: str) -> None:
    """``schedule.*``: "schedule" is what the tools are about; each one's action is the rest of
    its name ("call_off" spelt as two words) or its description's verb, so a cancellation is no
    booking (all five were booked by "schedule" before)."""
    assert IntentModel.fit(CLASSES, []).decide(line).intent == intent


def test_the_everyday_words_are_those_of_the_first_noun_the_thesaurus_knows() -> None:
    mine = ToolDefinition(name="agenda.mine", description="List the caller's booked visits.",
                          input_schema={})  # fmt: skip
    texts, labels = material([mine], [])
    said = " ".join(t for t, label in zip(texts, labels, strict=True) if label == mine.name)
    assert "appointment" in said, "visit's everyday words, though 'agenda' comes first"


def test_a_profiles_examples_teach_its_own_phrasing() -> None:
    meter = ToolDefinition(
        name="meters.submit",
        description="Submit a gas meter reading.",
        input_schema={},
        examples=["here are the numbers off my dial", "i have the figures from the dial"],
    )
    model = IntentModel.fit([meter, TRACK, MOVE], [])
    assert model.decide("i have got the numbers from the dial for you").intent == "meters.submit"


def test_the_same_material_gives_the_same_model() -> None:
    first, second = IntentModel.fit(TOOLS, CLAIMS), IntentModel.fit(TOOLS, CLAIMS)
    for line in ("where is my parcel", "no thanks", "how long is the warranty"):
        assert first.rank(line) == second.rank(line)


def test_the_bench_scores_a_held_out_file_with_its_confusion(tmp_path: Path) -> None:
    (tmp_path / "demo.yaml").write_text(
        "profile: demo\n"
        "lines:\n"
        "  - {say: 'hello there', intent: greet}\n"
        "  - {say: 'where is my order A123', intent: orders.status}\n"
        "  - {say: 'thank you so much', intent: thanks}\n",
        encoding="utf-8",
    )
    scored_all = anyio.run(partial(score_all, tmp_path, PROFILES, servers=False))
    result = json.loads(json.dumps(scored_all))  # what --json writes
    assert result["lines"] == 3
    assert 0.0 <= result["accuracy"] <= 1.0
    (scored,) = result["files"]
    assert scored["profile"] == "demo"
    assert scored["split"] == "tuning"  # the default
    assert scored["lines"] == 3
    assert result["profiles"]["demo"]["lines"] == 3
    assert result["splits"]["tuning"] == {
        "profiles": ["demo"], "lines": 3, "correct": scored["correct"],
        "accuracy": scored["accuracy"],
    }  # fmt: skip
    assert result["splits"]["heldout"]["lines"] == 0
    assert scored["fit_ms"] > 0 and scored["classify_p95_ms"] > 0
    assert set(scored["confusion"]) == {"greet", "orders.status", "thanks"}
    assert sum(n for row in scored["confusion"].values() for n in row.values()) == 3
    greet = scored["by_intent"]["greet"]
    assert greet["n"] == 1 and set(greet) == {"n", "correct", "recall", "precision"}
    assert scored["accuracy"] == round(1 - len(scored["errors"]) / 3, 4)
    for error in scored["errors"]:
        assert {"say", "intent", "predicted"} <= set(error)
    # Prohibited tools and the follow-up queue's call tool are not the model's to pick.
    assert "account.close" not in scored["intents"]
    assert "calls.place" not in scored["intents"]


def test_the_bench_scores_every_line_set_by_profile_and_the_heldout_apart() -> None:
    """Every file of fixtures/dialogue is scored, its profile found wherever it lives (an id of
    fixtures/profiles or a folder such as fixtures/profiles-heldout/sunway), one entry per
    profile with as many lines as its file, and the held-out profile in its own split."""
    expected = {}
    for file in sorted(HELD_OUT.glob("*.yaml")):
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
        expected[Path(data["profile"]).name] = (len(data["lines"]), data.get("split", "tuning"))
    assert {"maple", "northwind", "sunway", "wattle"} <= set(expected)
    assert expected["wattle"][1] == "heldout"  # sunway was held out until it was tuned on
    result = anyio.run(partial(score_all, HELD_OUT, PROFILES, servers=False))
    profiles = result["profiles"]
    assert {p: (f["lines"], f["split"]) for p, f in profiles.items()} == expected
    for figures in profiles.values():
        assert figures["accuracy"] == round(figures["correct"] / figures["lines"], 4)
        assert all(w["recall"] < 1 for w in figures["weakest"])
    heldout, tuning = result["splits"]["heldout"], result["splits"]["tuning"]
    assert "wattle" in heldout["profiles"] and "wattle" not in tuning["profiles"]
    assert heldout["lines"] == sum(n for n, split in expected.values() if split == "heldout")
    assert heldout["correct"] == sum(profiles[p]["correct"] for p in heldout["profiles"])
    assert tuning["lines"] + heldout["lines"] == result["lines"]


def test_a_profile_folder_is_relative_to_the_root_and_holds_one_profile(tmp_path: Path) -> None:
    (tmp_path / "maple.yaml").write_text(
        "profile: fixtures/profiles-heldout/maple\nsplit: heldout\n"
        "lines:\n  - {say: 'is my prescription ready', intent: pharmacy.check}\n",
        encoding="utf-8",
    )
    result = anyio.run(partial(score_all, tmp_path, PROFILES, servers=False, root=ROOT))
    (scored,) = result["files"]
    assert scored["profile"] == "maple"
    assert scored["profile_source"] == "fixtures/profiles-heldout/maple"
    assert "pharmacy.check" in scored["intents"]
    assert "pharmacy.dose" not in scored["intents"]  # prohibited
    assert result["splits"]["heldout"]["profiles"] == ["maple"]
    (tmp_path / "maple.yaml").write_text(
        "profile: fixtures/profiles\nlines:\n  - {say: 'hello', intent: greet}\n",
        encoding="utf-8",
    )
    with pytest.raises(LookupError, match="must hold one profile"):
        anyio.run(partial(score_all, tmp_path, PROFILES, servers=False, root=ROOT))


def test_two_line_sets_for_one_profile_are_refused(tmp_path: Path) -> None:
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text(
            "profile: demo\nlines:\n  - {say: 'hello', intent: greet}\n", encoding="utf-8"
        )
    with pytest.raises(ValueError, match="already has a line set"):
        anyio.run(partial(score_all, tmp_path, PROFILES, servers=False))


def test_the_weakest_intents_are_the_lowest_recall_below_one() -> None:
    by_intent: dict[str, dict[str, Any]] = {
        "greet": {"n": 2, "correct": 2, "recall": 1.0, "precision": 1.0},
        "a.read": {"n": 4, "correct": 2, "recall": 0.5, "precision": 1.0},
        "b.write": {"n": 2, "correct": 1, "recall": 0.5, "precision": 0.5},
        "c.ask": {"n": 5, "correct": 1, "recall": 0.2, "precision": 1.0},
        "out_of_scope": {"n": 0, "correct": 0, "recall": None, "precision": 0.0},
    }
    assert [w["intent"] for w in weakest(by_intent)] == ["c.ask", "a.read", "b.write"]
    assert [w["intent"] for w in weakest(by_intent, 1)] == ["c.ask"]


def test_the_bench_refuses_a_label_the_profile_does_not_have(tmp_path: Path) -> None:
    (tmp_path / "demo.yaml").write_text(
        "profile: demo\nlines:\n  - {say: 'fly me to the moon', intent: rockets.launch}\n",
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match=r"rockets\.launch"):
        anyio.run(partial(score_all, tmp_path, PROFILES, servers=False))
