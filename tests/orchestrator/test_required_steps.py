"""Steps the policy owner requires (ADR-0030), through the conversation: the real orchestrator,
the real action path and store, the sim runners, a fake tool server recording every request.

A required disclosure is spoken before the read-back and must be *heard* (by playout) before
the write runs: a "yes" before it gets the disclosure again and the proposal waits; a barge-in
during it invalidates it; heard once, it covers the session. A verification asks the caller,
reads the record through the ordinary gate and compares: a match lets the write run, a mismatch
refuses it with its reason, said to the caller, and the server never receives the write.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from sqlalchemy import select

from tests.orchestrator.action_support import RULES, Call, call
from tests.orchestrator.test_conversation_core import asked, read_back_heard, settled
from vocero.contracts.domain import (
    AskedFact,
    RequiredStep,
    StepScope,
    ToolDefinition,
    ToolSpec,
)
from vocero.contracts.ports import ToolCallRequest, ToolResult
from vocero.inference.sim.script import Rule
from vocero.store.models import AuditEventRow, EvidenceStepRow

pytestmark = pytest.mark.anyio

NOTICE = "Calls are recorded for quality. Changes take effect at once."
DISCLOSURE = RequiredStep(
    kind="disclosure", id="recording_notice", text=NOTICE,
    applies_to=StepScope(classes=["reversible_write"]),
)
POSTCODE_Q = "What is the postcode on your account?"
BIRTH_Q = "And your date of birth?"
VERIFY = RequiredStep(
    kind="verify_identity", id="account_holder", tool="holder.lookup",
    ask=[AskedFact(field="postcode", question=POSTCODE_Q),
         AskedFact(field="birth_date", question=BIRTH_Q, type="date")],
    arguments={"postcode": "postcode"},
    match={"postcode": "postcode", "birth_date": "date_of_birth"},
    applies_to=StepScope(tools=["appointments.reschedule"]),
)


def holder(request: ToolCallRequest) -> ToolResult:
    return ToolResult(content={"postcode": "SW1A 1AA", "date_of_birth": "1980-03-12"})


HOLDER = (
    ToolSpec(name="holder.lookup", server="store", resolves_to="account_holder",
             action_class="read"),
    ToolDefinition(name="holder.lookup", description="The account holder's record.",
                   input_schema={"type": "object",
                                 "properties": {"postcode": {"type": "string"}}}),
    holder,
)


async def quiet(c: Call) -> None:
    """Until every task waits and no database transaction is open (evidence is stored)."""
    with anyio.fail_after(5):
        while True:
            await anyio.wait_all_tasks_blocked()
            if not c.store.busy:
                return
            await c.store.quiet()


def state(c: Call) -> str:
    return str(c.h.session.machine.state)


async def step_rows(c: Call) -> dict[str, str]:
    async with c.store.read() as session:
        rows = (await session.scalars(select(EvidenceStepRow).where(
            EvidenceStepRow.session_id == c.session_id,
            EvidenceStepRow.proposal_id.is_(None)))).all()
        return {row.step: row.status for row in rows}


async def step_audit(c: Call, step: str) -> list[dict[str, Any]]:
    async with c.store.read() as session:
        rows = (await session.scalars(select(AuditEventRow).where(
            AuditEventRow.session_id == c.session_id,
            AuditEventRow.kind == "evidence.updated").order_by(AuditEventRow.seq))).all()
        return [dict(r.data) for r in rows if dict(r.data).get("step") == step]


# ------------------------------------------------------------------------------ disclosure


async def test_a_yes_before_the_disclosure_was_heard_gets_it_again(db_path: Path) -> None:
    async with call(db_path, required_steps=(DISCLOSURE,)) as c:
        c.h.auto_ack = False  # the caller's client reports no playout yet: nothing heard
        first = await asked(c, "move APT-1001 to friday at 3pm", 1)
        generation = c.h.session.generations.current
        assert generation is not None
        await c.h.until_frame("AudioOut", 1)
        assert c.spoken_since(0).startswith(NOTICE.split(".")[0]), "the disclosure comes first"
        c.h.auto_ack = True
        mark = len(c.h.received.frames)
        c.h.session.on_text("yes")
        await c.h.until(lambda: NOTICE in c.spoken_since(mark))
        await c.h.until(lambda: state(c) == "AWAITING_CONFIRMATION")
        assert c.reschedules() == [], "a yes before the disclosure was heard is not consent"
        assert (await step_rows(c))["recording_notice"] == "satisfied"
        c.h.session.on_text("yes")
        await settled(c)
        [sent] = c.reschedules()
        assert (sent.meta.proposal_id, sent.meta.revision) == (first.proposal_id, 1)
        statuses = [e["status"] for e in await step_audit(c, "recording_notice")]
        assert statuses == ["in_progress", "invalidated", "in_progress", "satisfied"]


async def test_an_interrupted_disclosure_must_be_heard_again(db_path: Path) -> None:
    async with call(db_path, required_steps=(DISCLOSURE,)) as c:
        c.h.auto_ack = False
        await asked(c, "move APT-1001 to friday at 3pm", 1)
        generation = c.h.session.generations.current
        assert generation is not None
        await c.h.until_frame("AudioOut", 1)
        c.h.session.on_playout(generation.generation_id, 300)  # "Calls are recorded..." only
        c.h.session.on_speech_hint()  # the caller barges in during the notice
        await c.h.until(lambda: any(
            p.generation_id == generation.generation_id
            for p in c.h.received.of("ResponseCompleted")))
        [done] = [p for p in c.h.received.of("ResponseCompleted")
                  if p.generation_id == generation.generation_id]
        assert done.status == "interrupted" and NOTICE not in done.heard_text
        await quiet(c)
        assert (await step_rows(c))["recording_notice"] == "invalidated"
        c.h.auto_ack = True
        mark = len(c.h.received.frames)
        c.h.session.on_text("yes")
        await c.h.until(lambda: NOTICE in c.spoken_since(mark))
        await c.h.until(lambda: state(c) == "AWAITING_CONFIRMATION")
        assert c.reschedules() == []
        c.h.session.on_text("yes")
        await settled(c)
        assert len(c.reschedules()) == 1
        assert (await step_rows(c))["recording_notice"] == "satisfied"


async def test_a_disclosure_heard_once_covers_the_session(db_path: Path) -> None:
    async with call(db_path, required_steps=(DISCLOSURE,)) as c:
        await read_back_heard(c, "move APT-1001 to friday at 3pm")
        assert c.spoken_since(0).startswith(NOTICE), "the first question carries the notice"
        c.h.session.on_text("yes")
        await settled(c)
        mark = len(c.h.received.frames)
        await read_back_heard(c, "move APT-1002 to monday at 3pm", 2)
        assert NOTICE not in c.spoken_since(mark), "heard already in this session"
        c.h.session.on_text("yes")
        await settled(c, 2)
        assert len(c.reschedules()) == 2


async def test_a_write_needing_no_confirmation_waits_for_its_disclosure(db_path: Path) -> None:
    """Without the step the note is written at once; with it, the write becomes a question whose
    disclosure is heard first."""
    note = (
        ToolSpec(name="notes.add", server="store", resolves_to="add_note",
                 action_class="reversible_write"),
        ToolDefinition(name="notes.add", description="Add a note to the account.",
                       input_schema={"type": "object",
                                     "properties": {"text": {"type": "string"}},
                                     "required": ["text"]}),
        ToolResult(content={"status": "added"}),
    )
    rules = [Rule(match=r"add a note saying (?P<text>.+)", tool="notes.add",
                  arguments={"text": "{text}"}, reply="{result.summary}"), *RULES]
    async with call(db_path, required_steps=(DISCLOSURE,), extra_tools=(note,),
                    rules=rules) as c:
        c.h.session.on_text("add a note saying gate code 4")
        question = await c.h.until_frame("ConfirmationRequired")
        assert question.tool == "notes.add"
        await c.h.until(lambda: state(c) == "AWAITING_CONFIRMATION")
        await quiet(c)
        assert c.spoken_since(0).startswith(NOTICE), "the notice, then the read-back"
        assert c.gateway.calls("notes.add") == [], "nothing runs before a yes"
        assert (await step_rows(c))["recording_notice"] == "satisfied"
        c.h.session.on_text("yes")
        await settled(c)
        [sent] = c.gateway.calls("notes.add")
        assert sent.arguments["text"] == "gate code 4"


# ---------------------------------------------------------------------------- verification


async def verify_with(c: Call, postcode: str, birth: str) -> int:
    """Ask for the write, confirm it, answer the verification; the frame mark before it."""
    await read_back_heard(c, "move APT-1001 to friday at 3pm")
    mark = len(c.h.received.frames)
    c.h.session.on_text("yes")
    await c.h.until(lambda: POSTCODE_Q in c.spoken_since(mark))
    assert c.reschedules() == [] and c.gateway.calls("holder.lookup") == []
    c.h.session.on_text(postcode)
    await c.h.until(lambda: BIRTH_Q in c.spoken_since(mark))
    assert c.gateway.calls("holder.lookup") == [], "every fact is asked before the record"
    c.h.session.on_text(birth)
    return mark


async def test_a_matching_answer_lets_the_write_run(db_path: Path) -> None:
    async with call(db_path, required_steps=(VERIFY,), extra_tools=(HOLDER,)) as c:
        await verify_with(c, "sw1a 1aa", "the 12th of March 1980")
        await settled(c)
        [lookup] = c.gateway.calls("holder.lookup")
        assert lookup.arguments == {"postcode": "sw1a 1aa"}
        assert lookup.meta.proposal_id == "", "the verification is an ordinary read"
        assert len(c.reschedules()) == 1
        assert (await step_rows(c))["account_holder"] == "satisfied"


async def test_a_mismatching_answer_refuses_the_write_and_says_why(db_path: Path) -> None:
    async with call(db_path, required_steps=(VERIFY,), extra_tools=(HOLDER,)) as c:
        mark = await verify_with(c, "SW1A 1AA", "1 April 1975")
        said = "I couldn't verify your identity, so I haven't made that change."
        await c.h.until(lambda: said in c.spoken_since(mark))
        assert c.reschedules() == [], "the server never receives the write"
        assert any(s.status == "rejected" and s.reason_code == "identity_not_verified"
                   for s in c.h.received.of("ToolStatusChanged"))
        assert (await step_rows(c))["account_holder"] == "invalidated"
        assert (await step_audit(c, "account_holder"))[-1]["result"] == "failed"
        assert [op["status"] for op in await c.operations()
                if op.get("proposal_id")] == [], "no operation was authorized"
        # A failed verification holds for the session: the next write is refused at once.
        await c.h.until(lambda: state(c) == "LISTENING")
        again = len(c.h.received.frames)
        c.h.session.on_text("move APT-1001 to monday at 3pm")
        await c.h.until(lambda: said in c.spoken_since(again))
        assert len(c.questions()) == 1, "no read-back for a write that cannot run"
        assert c.reschedules() == [] and len(c.gateway.calls("holder.lookup")) == 1


async def test_the_final_gate_reads_the_stored_disclosure_evidence(db_path: Path) -> None:
    """The conversation believes the notice was heard, storage does not (its evidence write was
    lost): the write is refused at the final gate, and said so."""
    async with call(db_path, required_steps=(DISCLOSURE,)) as c:
        await read_back_heard(c, "move APT-1001 to friday at 3pm")
        await quiet(c)
        assert (await step_rows(c))["recording_notice"] == "satisfied"
        async with c.store.write() as session:
            row = (await session.scalars(select(EvidenceStepRow).where(
                EvidenceStepRow.session_id == c.session_id,
                EvidenceStepRow.step == "recording_notice"))).one()
            row.status = "invalidated"
        mark = len(c.h.received.frames)
        c.h.session.on_text("yes")
        await c.h.until(lambda: "finish an important notice" in c.spoken_since(mark))
        assert c.reschedules() == []
        assert any(s.status == "rejected" and s.reason_code == "disclosure_not_heard"
                   for s in c.h.received.of("ToolStatusChanged"))
