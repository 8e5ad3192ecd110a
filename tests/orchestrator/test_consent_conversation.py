"""Issue 42, "A 'yes' that was never said": consent is structural, in the orchestrator.

A real session with the real action path (coordinator, store, outbox worker) in-process, its
tool behind a :class:`FakeToolGateway` that records what reached the server, on a profile the
code has never seen (``bookings.shift``, a booking reference and a bare string ``when``):

* on a scripted model that classifies EVERY line as ``confirm``, a line that is not a bare yes
  ("Friday at 11", "the 14th instead?", "yes but make it 11", a name, a question, noise…) never
  runs the proposal: the server receives nothing and no operation is authorised;
* on the CPU dialogue path (the routed runner, its engine scripted to answer ``confirm`` to every
  classification), a changed value during the read-back, whatever its wording ("no wait, make
  that …", "actually …", "change it to …", "not 12, 2", "… instead?", "yes, but make it …"),
  makes a new revision that is read back, and the old revision is never executed.
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.fakes import FakeStt, FakeToolGateway, FakeTts, fake_runners
from tests.support.harness import Harness, profile, running
from vocero.contracts import events as ev
from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import AgentProfile, Caller, ToolDefinition, ToolSpec
from vocero.contracts.ports import ToolCallRequest, ToolResult
from vocero.inference.runner_set import RunnerSet
from vocero.inference.sim.script import Rule, TtsScript
from vocero.inference.sim.vad import EnergyVad
from vocero.inference.toolkit.llm import RoutedLlm
from vocero.inference.toolkit.settings import QueueSettings
from vocero.policy import ActionPlane, ExecutorSettings
from vocero.store import Store
from vocero.store.repositories import Conversations

pytestmark = pytest.mark.anyio

SHIFT = ToolDefinition(
    name="bookings.shift",
    description="Move one of the caller's bookings to another time.",
    input_schema={
        "type": "object",
        "properties": {
            "booking_ref": {"type": "string", "pattern": r"^BK-[0-9]{3}$"},
            "when": {"type": "string"},
        },
        "required": ["booking_ref", "when"],
    },
)
SPEC = ToolSpec(
    name="bookings.shift", server="bookings", resolves_to="shift_booking",
    action_class="reversible_write", requires_confirmation=True,
    required_scopes=["bookings:write"],
)  # the generic read-back: a ``{when}`` template placeholder is the policy's own date phrase
CONFIRM_EVERYTHING = [
    Rule(match=r".*", intent="confirm"),  # the model says "confirm" to whatever it hears
    Rule(match=r"move (?P<ref>BK-\d+) to (?P<when>.+)$", tool="bookings.shift",
         arguments={"booking_ref": "{ref}", "when": "{when}"}, reply="Done."),
    Rule(match=r".*", reply="I can help with bookings."),
]  # fmt: skip
NOT_A_BARE_YES = {
    "values alone": "Friday at 11",
    "a changed value asked": "the 14th instead?",
    "a question": "wait, which booking is that?",
    "a hedge": "I guess so",
    "a yes that goes on": "yes, but make it 11",
    "make that": "make that Friday",
    "actually": "actually, 11",
    "not this, that": "not 9, 11",
    "a number": "four",
    "a name": "Priya Raman",
    "other-language-ish words": "vale bueno",
    "noise": "uh hmm",
    "empty": "...",
}


def shifted(request: ToolCallRequest) -> ToolResult:
    return ToolResult(content={"status": "moved", **request.arguments})


@dataclass
class Booking:
    h: Harness
    gateway: FakeToolGateway
    plane: ActionPlane
    session_id: str

    def sent(self) -> list[ToolCallRequest]:
        return self.gateway.calls("bookings.shift")

    def spoken_since(self, mark: int) -> str:
        return "".join(p.text for n, p in self.h.received.frames[mark:] if n == "TextDelta")

    async def authorised(self) -> list[dict[str, Any]]:
        return [op for op in await self.plane.operations(self.session_id)
                if op["status"] in ("authorized", "dispatched", "committed", "executing")]


@asynccontextmanager
async def booking(
    db_path: Path, runners: RunnerSet, tools: Sequence[ToolSpec] = (SPEC,)
) -> AsyncIterator[Booking]:
    """One call on ``runners`` to a profile of ``tools``, with the real action path; only
    ``bookings.shift`` is served."""
    store = Store.open(f"sqlite+aiosqlite:///{db_path}")
    prof: AgentProfile = profile(tools=list(tools), word_budget=80)
    who = Caller(token="t", subject=f"s-{uuid.uuid4().hex}", tenant="acme", roles=["member"],
                 scopes=["bookings:write"], timezone="Europe/Lisbon")
    session_id = f"ses_{uuid.uuid4().hex[:16]}"
    gateway = FakeToolGateway([SHIFT], {"bookings.shift": shifted})
    await Conversations(store).create_session(
        session_id=session_id, tenant_id=who.tenant, subject_ref=who.subject_ref,
        profile_id=prof.id, profile_version=prof.version)
    plane = ActionPlane(
        store, clock=VirtualClock(start=time.time()), profiles=lambda _i, _v: prof,
        gateway_for=lambda _p: gateway, executor_settings=ExecutorSettings(poll_interval_s=0.05),
    )
    coordinator = plane.coordinator(session_id=session_id, caller=who, profile=prof,
                                    gateway=gateway)
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(plane.run)
            async with running(runners, prof=prof, coordinator=coordinator, caller=who,
                               tools=(SHIFT,), session_id=session_id) as h:
                yield Booking(h, gateway, plane, session_id)
            coordinator.close()
            tg.cancel_scope.cancel()
    finally:
        await store.close()


async def proposed(b: Booking, line: str, count: int) -> ev.ConfirmationRequired:
    """Say ``line`` and let the caller hear the whole read-back it brings."""
    b.h.session.on_text(line)
    question: ev.ConfirmationRequired = await b.h.until_frame("ConfirmationRequired", count)
    await b.h.until(lambda: b.h.session.machine.state == "AWAITING_CONFIRMATION"
                    and len(b.h.received.of("ResponseCompleted")) >= count)
    return question


async def answered(b: Booking, line: str) -> str:
    """Say ``line`` while asked and wait for the agent's whole answer to it."""
    mark, done = len(b.h.received.frames), len(b.h.received.of("ResponseCompleted"))
    b.h.session.on_text(line)
    await b.h.until(lambda: len(b.h.received.of("ResponseCompleted")) > done
                    and b.h.session.machine.state in ("AWAITING_CONFIRMATION", "LISTENING"))
    return b.spoken_since(mark)


# ------------------------------------------------------------ a model that confirms everything


@pytest.mark.parametrize("line", NOT_A_BARE_YES.values(), ids=NOT_A_BARE_YES.keys())
async def test_a_line_that_is_not_a_bare_yes_never_runs_the_proposal(
    db_path: Path, line: str
) -> None:
    runners, *_ = fake_runners(rules=CONFIRM_EVERYTHING)
    async with booking(db_path, runners) as b:
        await proposed(b, "move BK-101 to Thursday at 9", 1)
        said = await answered(b, line)
        assert b.sent() == [], f"{line!r} ran the proposal: {said!r}"
        assert await b.authorised() == []
        assert not any(s.status in ("authorized", "committed")
                       for s in b.h.received.of("ToolStatusChanged"))


async def test_a_bare_yes_still_runs_it_on_the_same_script(db_path: Path) -> None:
    """The control: the same script, the same read-back, a plain "yes, go ahead" binds."""
    runners, *_ = fake_runners(rules=CONFIRM_EVERYTHING)
    async with booking(db_path, runners) as b:
        question = await proposed(b, "move BK-101 to Thursday at 9", 1)
        b.h.session.on_text("yes, go ahead")
        await b.h.until(lambda: len(b.sent()) == 1)
        [sent] = b.sent()
        assert (sent.meta.proposal_id, sent.meta.revision) == (question.proposal_id, 1)
        assert sent.arguments == {"booking_ref": "BK-101", "when": "Thursday at 9"}


async def test_unclear_lines_are_asked_again_briefly_then_dropped(db_path: Path) -> None:
    runners, *_ = fake_runners(rules=CONFIRM_EVERYTHING)
    async with booking(db_path, runners) as b:
        await proposed(b, "move BK-101 to Thursday at 9", 1)
        spoken = [await answered(b, line) for line in ("I guess so", "Priya Raman", "hmm okay?")]
        assert spoken[0].startswith("Sorry, I didn't catch that. To confirm:")
        assert spoken[1].startswith("Sorry, I didn't catch that. To confirm:")
        assert spoken[2] == "I'll leave that for now; nothing has been changed."
        assert b.sent() == []


async def test_a_models_no_for_a_line_that_does_not_refuse_is_asked_about(db_path: Path) -> None:
    runners, *_ = fake_runners(rules=[Rule(match=r".*", intent="reject"), *CONFIRM_EVERYTHING[1:]])
    async with booking(db_path, runners) as b:
        await proposed(b, "move BK-101 to Thursday at 9", 1)
        assert (await answered(b, "Priya Raman")).startswith("Sorry, I didn't catch that.")
        assert b.h.session.machine.state == "AWAITING_CONFIRMATION", "not declined on a guess"
        assert await answered(b, "no thanks") == "All right, I haven't changed anything."
        assert b.sent() == []


# ------------------------------------------------------------------- the CPU dialogue path


class ConfirmingEngine:
    """The routed runner's engine, scripted: every classification it is asked is ``confirm``;
    it is never asked to chat (the runner speaks grounded text)."""

    def __init__(self) -> None:
        self.classified: list[str] = []

    def load(self) -> None:
        return None

    def json_object(
        self, messages: list[dict[str, str]], shape: dict[str, Any], *, max_tokens: int = 160
    ) -> dict[str, Any]:
        if "intent" in shape.get("properties", {}):
            self.classified.append(messages[-1]["content"])
            return {"intent": "confirm"}
        return {}

    def chat_stream(self, messages: list[dict[str, str]], *, max_tokens: int) -> Iterator[str]:
        raise AssertionError("the grounded runner does not chat")


def cpu_runners(engine: ConfirmingEngine) -> RunnerSet:
    llm = RoutedLlm(engine, QueueSettings(), today=lambda: dt.date(2026, 12, 2))  # type: ignore[arg-type]
    return RunnerSet(kind="cpu", vad=EnergyVad(), stt=FakeStt([]), llm=llm,
                     tts=FakeTts(TtsScript(ms_per_char=10.0)))


CORRECTIONS = [
    ("no wait, make that Friday at 11", "Friday at 11"),
    ("actually Saturday at 10", "Saturday at 10"),
    ("change it to 12", "Saturday at 12"),
    ("not 12, 2", "Saturday at 2"),
    ("the 14th instead?", "the 14th at 2"),
    ("yes, but make it 4", "the 14th at 4"),
    ("Monday at 3", "Monday at 3"),
]


async def test_a_changed_value_in_any_wording_is_a_new_revision_on_the_cpu_dialogue(
    db_path: Path,
) -> None:
    engine = ConfirmingEngine()
    async with booking(db_path, cpu_runners(engine)) as b:
        first = await proposed(b, "please move booking BK-101 to Thursday at 9", 1)
        assert first.fields["when"] == "Thursday at 9"
        questions = [first]
        for count, (line, when) in enumerate(CORRECTIONS, start=2):
            mark = len(b.h.received.frames)
            question = await proposed(b, line, count)
            assert (question.proposal_id, question.revision) == (
                first.proposal_id, questions[-1].revision + 1), line
            assert question.fields["when"] == when, line
            assert when in b.spoken_since(mark), f"the new revision is read back after {line!r}"
            assert "didn't catch that" not in b.spoken_since(mark), line
            questions.append(question)
            assert b.sent() == [], f"{line!r} ran a revision"
        # The first revision can no longer be confirmed (SPEC §2)...
        b.h.session.on_confirmation(first.proposal_id, first.revision, "confirm")
        error = await b.h.until_frame("Error")
        assert error.code == "PROPOSAL_CHANGED"
        # ...and a plain yes runs the last one, exactly as it was read back.
        await b.h.until(lambda: b.h.session.machine.state == "AWAITING_CONFIRMATION")
        b.h.session.on_text("yes please")
        await b.h.until(lambda: len(b.sent()) == 1)
        [sent] = b.sent()
        assert sent.arguments == {"booking_ref": "BK-101", "when": "Monday at 3"}
        assert (sent.meta.proposal_id, sent.meta.revision) == (
            questions[-1].proposal_id, questions[-1].revision)


ASKS_BETWEEN = [
    Rule(match=r"what time do you open", intent="new_request"),
    *CONFIRM_EVERYTHING[:2],
    Rule(match=r"what time do you open", reply="We open at nine."),
    *CONFIRM_EVERYTHING[2:],
]


@pytest.mark.parametrize(("yes", "runs"), [("yes, please shift it", True), ("yes", False)])
async def test_a_yes_naming_the_proposal_answers_it_after_a_question_in_between(
    db_path: Path, yes: str, runs: bool
) -> None:
    """Issue 42 (Gannet): asked something else mid-question and answered, the caller's "yes,
    please shift it" binds the read-back they heard; a bare "yes" may answer what they heard
    last, so it is asked about (nothing runs)."""
    runners, *_ = fake_runners(rules=ASKS_BETWEEN)
    async with booking(db_path, runners) as b:
        question = await proposed(b, "move BK-101 to Thursday at 9", 1)
        assert "nine" in await answered(b, "wait, what time do you open?")
        said = await answered(b, yes)
        if runs:
            await b.h.until(lambda: len(b.sent()) == 1)
            [sent] = b.sent()
            assert (sent.meta.proposal_id, sent.meta.revision) == (question.proposal_id, 1)
        else:
            assert said.startswith("Just to be sure. To confirm:") and b.sent() == []
