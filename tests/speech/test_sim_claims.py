"""The simulator answers with approved claims (SPEC §6): ``claims: [...]``, ``paraphrase``, and
``claims: auto`` after a ``knowledge.search``, validated at load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from vocero.contracts.errors import ConfigError
from vocero.contracts.ports import ClaimAnswer, LlmOutput, LlmRequest, Message, ToolIntent
from vocero.inference.sim.runners import SimLlm
from vocero.inference.sim.script import load_script

pytestmark = pytest.mark.anyio

SCRIPT: dict[str, Any] = {
    "llm": [
        {"match": "saturday", "claims": ["hours.saturday"]},
        {"match": "opened", "paraphrase": {
            "text": "Opened {what}? Only within 14 days, for store credit.",
            "claims": ["returns.opened"]}},
        {"match": "(?P<q>open|return|shipping).*", "tool": "knowledge.search",
         "arguments": {"query": "{last_user}"}, "claims": "auto"},
        {"match": ".*", "reply": "I can help with orders."},
    ]
}


def write(tmp_path: Path, script: dict[str, Any]) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump(script))
    return path


async def outputs(llm: SimLlm, messages: list[Message]) -> list[LlmOutput]:
    return [o async for o in llm.generate(LlmRequest(messages=messages))]


async def test_a_rule_answers_with_the_claims_it_names(tmp_path: Path) -> None:
    llm = SimLlm(load_script(write(tmp_path, SCRIPT)).llm)
    said = await outputs(llm, [Message(role="user", content="Are you open on Saturday?")])
    assert said == [ClaimAnswer(claim_keys=["hours.saturday"])]


async def test_a_paraphrase_is_rendered_and_cites_its_claims(tmp_path: Path) -> None:
    script = {"llm": [{"match": "opened (?P<what>\\w+)", "paraphrase": {
        "text": "Opened {what}? Only within 14 days.", "claims": ["returns.opened"]}}]}
    llm = SimLlm(load_script(write(tmp_path, script)).llm)
    said = await outputs(llm, [Message(role="user", content="can I return opened shoes")])
    assert said == [ClaimAnswer(claim_keys=["returns.opened"],
                                paraphrase="Opened shoes? Only within 14 days.")]


async def test_claims_auto_searches_then_answers_with_the_best_claims(tmp_path: Path) -> None:
    llm = SimLlm(load_script(write(tmp_path, SCRIPT)).llm)
    question = Message(role="user", content="when do you open")
    [intent] = await outputs(llm, [question])
    assert intent == ToolIntent(name="knowledge.search", arguments={"query": "when do you open"})
    found = Message(role="tool", content="", tool_name="knowledge.search", tool_status="committed",
                    tool_result={"query": "when do you open", "best": ["hours.weekdays"],
                                 "claims": [{"key": "hours.weekdays"}, {"key": "hours.saturday"}]})
    assert await outputs(llm, [question, found]) == [ClaimAnswer(claim_keys=["hours.weekdays"])]
    nothing = Message(role="tool", content="", tool_name="knowledge.search",
                      tool_status="committed", tool_result={"claims": [], "best": []})
    assert await outputs(llm, [question, nothing]) == [ClaimAnswer(claim_keys=[])]


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        ({"match": "x", "claims": "all"}, "$.llm[0].claims"),
        ({"match": "x", "claims": "auto"}, "$.llm[0].claims"),
        ({"match": "x", "paraphrase": {"text": "t", "claims": "auto"}},
         "$.llm[0].paraphrase.claims"),
        ({"match": "x", "claims": ["a"], "paraphrase": {"text": "t", "claims": ["a"]}}, "$.llm[0]"),
        ({"match": "x", "claims": ["a"], "reply": "words"}, "$.llm[0]"),
    ],
)
def test_bad_claim_rules_are_refused_at_load(
    tmp_path: Path, rule: dict[str, Any], field: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_script(write(tmp_path, {"llm": [rule]}))
    assert caught.value.field == field
