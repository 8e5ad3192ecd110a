"""Conversation repositories: sessions, turns, generations and the heard history."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from vocero.contracts.clock import VirtualClock
from vocero.store import Conversations, SessionNotFoundError, Store

pytestmark = pytest.mark.anyio

START = 1_780_000_000.0


async def new_session(repo: Conversations, session_id: str = "ses_1") -> None:
    await repo.create_session(
        session_id=session_id, tenant_id="acme", subject_ref="sub_abc", profile_id="demo",
        profile_version="3", effective={"locale": "en-US"}, resume_token_hash="f" * 64,
    )


async def test_session_round_trip(store: Store) -> None:
    clock = VirtualClock(start=START)
    repo = Conversations(store, clock=clock)
    await new_session(repo)
    stored = await repo.get_session("ses_1")
    assert stored is not None
    assert (stored.tenant_id, stored.state, stored.effective) == ("acme", "CONNECTING",
                                                                  {"locale": "en-US"})
    assert stored.created_at == datetime.fromtimestamp(START, UTC)
    assert stored.closed_at is None

    await repo.update_session("ses_1", state="LISTENING", effective={"locale": "es-ES"})
    clock.advance(30)
    closed = await repo.close_session("ses_1")
    assert closed.closed_at == datetime.fromtimestamp(START + 30, UTC)
    reread = await repo.get_session("ses_1")
    assert reread is not None
    assert (reread.state, reread.effective, reread.closed_at) == (
        "CLOSING", {"locale": "es-ES"}, closed.closed_at)
    assert await repo.get_session("ses_other") is None


async def test_resume_hash_finds_only_open_sessions(store: Store) -> None:
    repo = Conversations(store)
    await new_session(repo)
    found = await repo.session_by_resume_hash("f" * 64)
    assert found is not None
    assert found.id == "ses_1"
    await repo.close_session("ses_1")
    assert await repo.session_by_resume_hash("f" * 64) is None


async def test_turns_are_numbered_per_session(store: Store) -> None:
    repo = Conversations(store)
    await new_session(repo, "ses_1")
    await new_session(repo, "ses_2")
    first = await repo.add_turn(session_id="ses_1", turn_id="turn_1", source="audio", text="hi")
    other = await repo.add_turn(session_id="ses_2", turn_id="turn_x", source="text", text="yo")
    second = await repo.add_turn(session_id="ses_1", turn_id="turn_2", source="text", text="ok")
    assert (first.seq, second.seq, other.seq) == (1, 2, 1)


async def test_a_turn_sent_again_is_kept_once(store: Store) -> None:
    """A write whose commit was not acknowledged (the store went away) is sent again."""
    repo = Conversations(store)
    await new_session(repo, "ses_1")
    await new_session(repo, "ses_2")
    first = await repo.add_turn(session_id="ses_1", turn_id="turn_1", source="text", text="yes")
    again = await repo.add_turn(session_id="ses_1", turn_id="turn_1", source="text", text="yes")
    later = await repo.add_turn(session_id="ses_1", turn_id="turn_2", source="text", text="ok")
    assert (first.seq, again.seq, again.id, later.seq) == (1, 1, "turn_1", 2)
    assert [e.text for e in await repo.history("ses_1")] == ["yes", "ok"]
    with pytest.raises(ValueError, match="another session"):
        await repo.add_turn(session_id="ses_2", turn_id="turn_1", source="text", text="yes")
    assert await repo.history("ses_2") == []


async def test_generation_upsert_keeps_unchanged_fields_and_stamps_completion(
    store: Store,
) -> None:
    clock = VirtualClock(start=START)
    repo = Conversations(store, clock=clock)
    await new_session(repo)
    await repo.upsert_generation(generation_id="gen_1", session_id="ses_1", turn_id="turn_1",
                                 status="in_progress", generated_text="Order A1 ships Monday.")
    clock.advance(2)
    done = await repo.upsert_generation(generation_id="gen_1", session_id="ses_1",
                                        status="interrupted", heard_text="Order A1",
                                        played_ms=800, sent_ms=1200)
    assert (done.generated_text, done.heard_text, done.turn_id) == (
        "Order A1 ships Monday.", "Order A1", "turn_1")
    assert (done.played_ms, done.sent_ms) == (800, 1200)
    assert done.completed_at == datetime.fromtimestamp(START + 2, UTC)
    assert await repo.get_generation("gen_1") == done


async def test_history_interleaves_turns_and_heard_generations(store: Store) -> None:
    clock = VirtualClock(start=START)
    repo = Conversations(store, clock=clock)
    await new_session(repo)
    await repo.add_turn(session_id="ses_1", turn_id="turn_1", source="text", text="status A1?")
    await repo.upsert_generation(generation_id="gen_1", session_id="ses_1", turn_id="turn_1",
                                 status="interrupted", generated_text="Order A1 ships Monday.",
                                 heard_text="Order A1")
    clock.advance(1)
    await repo.add_turn(session_id="ses_1", turn_id="turn_2", source="audio", text="thanks")
    history = await repo.history("ses_1")
    assert [(h.role, h.text, h.generation_id, h.status) for h in history] == [
        ("user", "status A1?", "", ""),
        ("assistant", "Order A1", "gen_1", "interrupted"),
        ("user", "thanks", "", ""),
    ]


async def test_writes_to_a_missing_session_raise(store: Store) -> None:
    repo = Conversations(store)
    with pytest.raises(SessionNotFoundError):
        await repo.add_turn(session_id="ses_none", turn_id="t", source="text", text="x")
    with pytest.raises(SessionNotFoundError):
        await repo.update_session("ses_none", state="LISTENING")


async def test_generation_cannot_move_between_sessions(store: Store) -> None:
    repo = Conversations(store)
    await new_session(repo, "ses_1")
    await new_session(repo, "ses_2")
    await repo.upsert_generation(generation_id="gen_1", session_id="ses_1", status="in_progress")
    with pytest.raises(ValueError, match="another session"):
        await repo.upsert_generation(generation_id="gen_1", session_id="ses_2",
                                     status="completed")


async def test_a_closed_session_is_resumable_within_its_window_only(store: Store) -> None:
    clock = VirtualClock(start=START)
    repo = Conversations(store, clock=clock)
    await new_session(repo)
    assert await repo.session_to_resume("f" * 64, window_s=120) is None, "still open"
    await repo.close_session("ses_1")
    clock.advance(119)
    found = await repo.session_to_resume("f" * 64, window_s=120)
    assert found is not None and found.id == "ses_1"
    reopened = await repo.reopen_session("ses_1", resume_token_hash="e" * 64)
    assert (reopened.closed_at, reopened.resume_token_hash) == (None, "e" * 64)
    assert await repo.session_to_resume("f" * 64, window_s=120) is None, "the old token is spent"
    await repo.close_session("ses_1")
    clock.advance(121)
    assert await repo.session_to_resume("e" * 64, window_s=120) is None, "the window has passed"
