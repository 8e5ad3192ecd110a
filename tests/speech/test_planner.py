"""The unit planner: the seed's properties (immutable units, evidence required, unique claims,
the word budget) and its fixtures (two active dates, a conditional policy, an identifier, an
invented date, promises), under strict and assisted grounding."""

from __future__ import annotations

import dataclasses

import pytest

from tests.speech.support import RETURNS, claim, planner, refused, spoken, stream
from vocero.contracts.ports import ClaimAnswer
from vocero.speech.model import EvidenceRef, PlannedUnit, ToolEvidence
from vocero.speech.planner import FALLBACKS, UNCONFIRMED

OPENED = RETURNS[1].text
UNOPENED = RETURNS[0].text
TWO_APPOINTMENTS = ToolEvidence(
    tool_call_id="call_list", tool="appointments.list",
    result={"appointments": [
        {"appointment_id": "APT-1001", "date": "2026-12-03", "time": "10:00",
         "service": "Boiler inspection"},
        {"appointment_id": "APT-1002", "date": "2026-12-10", "time": "16:30",
         "service": "Window repair"},
    ]},
)
ORDER = ToolEvidence(
    tool_call_id="call_order", tool="orders.status", arguments={"order_id": "A123"},
    result={"order_id": "A123", "status": "shipped", "eta": "2026-12-02"},
)
FOLLOWUP = ToolEvidence(
    tool_call_id="call_fup", tool="followups.record",
    arguments={"when": "tomorrow at 11", "reason": "refund"},
    result={"followup_id": "fup_1", "due_at": "2026-12-02T11:00:00+01:00",
            "timezone": "Europe/Madrid", "channel": "phone", "state": "scheduled"},
)


# ------------------------------------------------------------------------- seed properties


def test_units_are_immutable_and_keep_no_reference_to_their_inputs() -> None:
    keys = ["returns.opened"]
    p = planner()
    [unit] = p.claims(keys)
    keys.clear()
    assert unit.claim_keys == ("returns.opened",)
    assert unit.text == OPENED
    with pytest.raises(dataclasses.FrozenInstanceError):
        unit.text = "Opened items are eligible."  # type: ignore[misc]
    with pytest.raises(AttributeError):
        unit.evidence.append(EvidenceRef(tool_call_id="x"))  # type: ignore[attr-defined]


def test_a_claim_unit_cites_its_evidence_versions() -> None:
    [unit] = planner().claims(["returns.opened"])
    assert unit.kind == "claim"
    assert unit.public_evidence() == [{"source_id": "returns.opened-policy", "version": "3"}]
    assert (unit.generation_id, unit.turn_id, unit.question_revision) == ("gen_1", "turn_1", 0)


@pytest.mark.parametrize("kind", ["claim", "tool_fact", "readback", "outcome", "promise"])
def test_a_factual_unit_without_evidence_cannot_exist(kind: str) -> None:
    with pytest.raises(ValueError, match="must cite its evidence"):
        PlannedUnit(
            unit_id="u", index=0, kind=kind, text="Something factual.",  # type: ignore[arg-type]
            speech="", claim_keys=(), evidence=(), generation_id="g", turn_id="t",
            question_revision=0, planned_at=0.0, planned_mono=0.0,
        )


def test_evidence_is_a_source_version_or_a_tool_call() -> None:
    with pytest.raises(ValueError):
        EvidenceRef(source_id="policy")
    with pytest.raises(ValueError):
        EvidenceRef(source_id="policy", version="1", tool_call_id="call")
    with pytest.raises(ValueError):
        EvidenceRef()


def test_each_claim_is_spoken_once() -> None:
    units = planner().claims(["returns.opened", "returns.opened", "returns.unopened"])
    assert spoken(units) == [OPENED, UNOPENED]
    assert refused(units) == [("", "duplicate_claim")]


def test_a_claim_is_never_cut_and_one_past_the_budget_is_refused() -> None:
    budget = len(OPENED.split()) + 3  # the first claim fits, the second does not
    units = planner(word_budget=budget).claims(["returns.opened", "returns.unopened"])
    assert spoken(units) == [OPENED]
    assert refused(units) == [(UNOPENED, "over_budget")]


def test_model_words_past_the_budget_are_refused_whole_never_cut() -> None:
    p = planner(word_budget=12)
    units = stream(p, "Thanks for waiting. This sentence goes on and on well past any budget "
                      "that was set. Bye now.")
    assert spoken(units) == ["Thanks for waiting."]
    assert refused(units)[0][1] == "over_budget"
    assert "Bye" not in " ".join(spoken(units))
    assert p.exhausted


def test_an_answer_over_budget_from_the_start_says_so() -> None:
    units = stream(planner(word_budget=3), "This sentence is too long for the budget.")
    assert spoken(units) == [FALLBACKS["over_budget"]]


def test_unknown_and_expired_claims_are_refused_and_the_caller_hears_a_fallback() -> None:
    expired = claim("sale", "The sale ends on Friday.", valid_until="2026-11-30")
    units = planner(claims=[*RETURNS, expired]).claims(["nope", "sale"])
    assert refused(units) == [("", "unknown_claim"), ("", "claim_expired")]
    assert spoken(units) == [UNCONFIRMED]
    assert units[-1].kind == "fallback"


def test_no_claim_found_is_a_truthful_fallback() -> None:
    units = planner().answer(ClaimAnswer(claim_keys=[]))
    assert [(u.kind, u.text) for u in units] == [("fallback", FALLBACKS["no_claims"])]


def test_units_are_numbered_in_order_and_have_unique_ids() -> None:
    p = planner()
    units = p.say("Let me check.") + p.claims(["returns.opened", "nope"])
    assert [u.index for u in units] == list(range(len(units)))
    assert len({u.unit_id for u in units}) == len(units)


def test_the_tts_reads_identifiers_spelled_and_the_text_keeps_them() -> None:
    p = planner(caller=["where is order A123"])
    [unit] = p.tool_result(ORDER)
    assert "A123" in unit.text and "A 1 2 3" in unit.speech
    assert unit.kind == "tool_fact"
    assert unit.public_evidence() == [{"tool_call_id": "call_order"}]


# ------------------------------------------------------------------------- conditional policy


def test_strict_grounding_speaks_approved_wording_instead_of_a_paraphrase() -> None:
    answer = ClaimAnswer(claim_keys=["returns.opened"],
                         paraphrase="You can only return opened stuff within 14 days for "
                                    "store credit, unless they arrived damaged.")
    units = planner(grounding="strict").answer(answer)
    assert spoken(units) == [OPENED]
    assert refused(units) == [(answer.paraphrase, "strict_grounding")]


def test_assisted_grounding_speaks_a_paraphrase_that_keeps_every_condition() -> None:
    text = ("Opened items? You can only send them back within 14 days for store credit, "
            "unless they arrived damaged.")
    units = planner(grounding="assisted").claims(["returns.opened"], paraphrase=text)
    assert [(u.kind, u.text, u.claim_keys) for u in units if u.speakable] == [
        ("claim", text, ("returns.opened",))]


@pytest.mark.parametrize(
    ("paraphrase", "reason"),
    [
        ("Opened items can be returned within 14 days for store credit, unless they arrived "
         "damaged.", "restriction_changed"),  # "only" dropped
        ("Opened items can only be returned within 14 days for store credit.",
         "restriction_changed"),  # the exception dropped with "unless"
        ("Opened items can only be returned within 30 days for store credit, unless they "
         "arrived damaged.", "unsupported_value"),  # the unopened period
        ("Opened items can not only be returned within 14 days for store credit, unless they "
         "arrived damaged.", "restriction_changed"),  # a negation added
        ("Opened items can only be exchanged within 14 days, unless they arrived damaged.",
         "condition_missing"),  # "for store credit" gone
    ],
)
def test_a_paraphrase_that_changes_the_answer_is_refused(paraphrase: str, reason: str) -> None:
    units = planner(grounding="assisted").claims(["returns.opened"], paraphrase=paraphrase)
    assert refused(units) == [(paraphrase, reason)]
    assert spoken(units) == [UNCONFIRMED]
    assert OPENED not in spoken(units) and paraphrase not in spoken(units)


def test_a_correction_from_opened_to_unopened_plans_the_other_claim() -> None:
    first = planner(caller=["can I return an opened blender"]).claims(["returns.opened"])
    second = planner(caller=["can I return an opened blender", "sorry, it is unopened"]).claims(
        ["returns.unopened"])
    assert spoken(first) == [OPENED] and spoken(second) == [UNOPENED]


# ------------------------------------------------------------------------- dates and values


def test_with_two_active_dates_only_dates_of_the_evidence_are_spoken() -> None:
    p = planner()
    p.add_tool_result(TWO_APPOINTMENTS)
    units = stream(p, "Your boiler inspection is on Thursday, December 3 at 10 AM. "
                      "The window repair is on December 4. ")
    assert spoken(units)[0] == "Your boiler inspection is on Thursday, December 3 at 10 AM."
    assert units[0].kind == "tool_fact"
    assert units[0].public_evidence() == [{"tool_call_id": "call_list"}]
    assert refused(units) == [("The window repair is on December 4.", "unsupported_value")]
    assert spoken(units)[-1] == UNCONFIRMED


def test_the_readout_of_two_dates_names_each_date_not_that_day() -> None:
    p = planner()
    [unit] = p.tool_result(TWO_APPOINTMENTS)
    assert "December 3" in unit.text and "December 10" in unit.text
    assert "that day" not in unit.text


def test_an_invented_date_is_never_spoken() -> None:
    p = planner(caller=["when will order A123 arrive"])
    p.add_tool_result(ORDER)
    units = stream(p, "Order A123 should arrive on Friday. ")
    assert refused(units) == [("Order A123 should arrive on Friday.", "unsupported_value")]
    assert spoken(units) == [UNCONFIRMED]
    good = planner(caller=["when will order A123 arrive"])
    good.add_tool_result(ORDER)
    assert spoken(stream(good, "Order A123 should arrive tomorrow, Wednesday. ")) == [
        "Order A123 should arrive tomorrow, Wednesday."]


def test_an_invented_identifier_is_refused() -> None:
    p = planner(caller=["status of order A123"])
    p.add_tool_result(ORDER)
    units = stream(p, "Order A124 has shipped.")
    assert refused(units) == [("Order A124 has shipped.", "unsupported_value")]


def test_values_the_caller_said_may_be_repeated() -> None:
    units = stream(planner(caller=["my order is B52"]), "Let me look up order B52.")
    assert [(u.kind, u.text) for u in units] == [("conversational", "Let me look up order B52.")]


def test_in_strict_grounding_a_policy_in_the_models_own_words_is_refused() -> None:
    units = stream(planner(), "We are open from 9 AM on Saturdays.")
    assert refused(units) == [("We are open from 9 AM on Saturdays.", "unsupported_value")]


def test_a_knowledge_search_result_is_answered_with_its_best_claims() -> None:
    found = ToolEvidence(tool_call_id="call_k", tool="knowledge.search", result={
        "query": "open saturday", "best": ["hours.saturday"],
        "claims": [{"key": "hours.saturday", "text": RETURNS[2].text, "conditions": [],
                    "evidence": [{"source_id": "hours.saturday-policy", "version": "3"}]}],
    })
    p = planner()
    units = p.tool_result(found)
    assert [(u.kind, u.text) for u in units] == [("claim", RETURNS[2].text)]
    units = stream(p, "Our stores are open until 2 PM on Saturdays.")
    assert refused(units), "search results support nothing but their claims"


# ------------------------------------------------------------------------- promises


def test_a_promise_without_a_follow_up_record_is_refused() -> None:
    units = stream(planner(caller=["can someone call me tomorrow at 11"]),
                   "Someone will call you tomorrow at 11.")
    assert refused(units) == [("Someone will call you tomorrow at 11.", "promise_unbacked")]
    assert spoken(units) == [FALLBACKS["promise_unbacked"]]


def test_a_promise_backed_by_the_sessions_record_is_spoken_citing_it() -> None:
    p = planner(session_tools=[FOLLOWUP])
    units = stream(p, "Someone will call you tomorrow at 11 AM.")
    assert [(u.kind, u.text) for u in units] == [
        ("promise", "Someone will call you tomorrow at 11 AM.")]
    assert units[0].public_evidence() == [{"tool_call_id": "call_fup"}]


def test_a_record_of_the_built_in_under_another_name_backs_a_promise() -> None:
    """As the executor hands it over (the store's answer is the write's receipt), from a profile
    that calls the built-in ``callbacks.book``: nothing hangs on the demo's name."""
    renamed = dataclasses.replace(
        FOLLOWUP, tool="callbacks.book", builtin="followups.record",
        result={"summary": "Done.", "operation_id": "op_1", "receipt": dict(FOLLOWUP.result or {})})
    units = stream(planner(session_tools=[renamed]), "Someone will call you tomorrow at 11 AM.")
    assert [(u.kind, u.text) for u in units] == [
        ("promise", "Someone will call you tomorrow at 11 AM.")]
    mcp = dataclasses.replace(renamed, tool="followups.record", builtin="")
    units = stream(planner(session_tools=[mcp]), "Someone will call you tomorrow at 11 AM.")
    assert refused(units) == [("Someone will call you tomorrow at 11 AM.", "promise_unbacked")], (
        "an MCP tool that happens to share the name is no record of Vocero's")


def test_a_promise_for_another_time_than_the_record_is_refused() -> None:
    units = stream(planner(session_tools=[FOLLOWUP]), "We'll call you tomorrow at 4 PM.")
    assert refused(units) == [("We'll call you tomorrow at 4 PM.", "unsupported_value")]


def test_an_unrecorded_follow_up_backs_no_promise() -> None:
    refusal = ToolEvidence(tool_call_id="call_x", tool="followups.record",
                           result={"recorded": False, "reason": "when_mismatch"})
    units = stream(planner(session_tools=[refusal]), "Someone will call you back.")
    assert refused(units) == [("Someone will call you back.", "promise_unbacked")]


def test_an_offer_is_not_a_promise() -> None:
    units = stream(planner(caller=["call me tomorrow"]),
                   "Shall I have someone call you tomorrow?")
    assert [(u.kind, u.speakable) for u in units] == [("conversational", True)]


def test_the_same_fallback_is_said_once_per_generation() -> None:
    p = planner()
    units = stream(p, "It costs $40. It takes 9 days. Anything else?")
    assert spoken(units) == [UNCONFIRMED, "Anything else?"]
    assert len(refused(units)) == 2


def test_abbreviations_do_not_end_a_sentence() -> None:
    p = planner(caller=["is it at 10 a.m. tomorrow"])
    units = stream(p, "At 10 a.m. tomorrow, yes. Anything else?")
    assert spoken(units) == ["At 10 a.m. tomorrow, yes.", "Anything else?"]
