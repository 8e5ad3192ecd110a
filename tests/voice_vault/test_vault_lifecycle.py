"""The vault against a real store: encrypted versions, four-eyes approval, immediate
revocation, resolution of approved voices only, and an audit trail without content."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from tests.support.voices import KEY, make_wav, voice_fields
from vocero.contracts.clock import VirtualClock
from vocero.store import AuditLog, Store
from vocero.store.models import VoiceVersionRow
from vocero.voice_vault import VaultError, VoiceVault

pytestmark = pytest.mark.anyio

REF_TEXT = "Hola, soy la voz corporativa de Acme."


async def approved_voice(vault: VoiceVault, clock: VirtualClock) -> bytes:
    audio = make_wav(2.0, rate=24_000)
    await vault.create_voice(**voice_fields(clock))
    await vault.add_version("corp-es", audio, REF_TEXT, "olga")
    await vault.approve("corp-es", 1, "olga", ["business_owner"])
    await vault.approve("corp-es", 1, "sam", ["security"])
    return audio


async def code_of(call: object) -> str:
    with pytest.raises(VaultError) as caught:
        await call  # type: ignore[misc]
    return caught.value.code


async def test_a_version_is_stored_encrypted_with_its_hashes(
    vault: VoiceVault, store: Store, clock: VirtualClock
) -> None:
    audio = make_wav(2.0)
    await vault.create_voice(**voice_fields(clock))
    version = await vault.add_version("corp-es", audio, f"  {REF_TEXT}\n", "olga")
    assert (version.version, version.status, version.approvals) == (1, "pending", [])
    assert version.params == {"mode": "icl", "sample_rate": 16_000, "duration_ms": 2000}
    async with store.read() as session:
        row = (await session.scalars(select(VoiceVersionRow))).one()
    assert row.ref_audio != audio and audio[44:108] not in row.ref_audio
    assert "Acme" not in row.ref_text
    assert row.audio_sha256 == version.audio_sha256 and len(row.audio_sha256) == 64
    second = await vault.add_version("corp-es", audio, REF_TEXT, "olga")
    assert second.version == 2
    assert (second.audio_sha256, second.text_sha256) == (version.audio_sha256,
                                                         version.text_sha256)


async def test_creation_is_validated(vault: VoiceVault, clock: VirtualClock) -> None:
    past = datetime.fromtimestamp(clock.now(), UTC) - timedelta(seconds=1)
    naive = datetime(2099, 1, 1)
    assert await code_of(vault.create_voice(**voice_fields(clock, usage_until=past))) == (
        "invalid_usage_until")
    assert await code_of(vault.create_voice(**voice_fields(clock, usage_until=naive))) == (
        "invalid_usage_until")
    assert await code_of(vault.create_voice(**voice_fields(clock, voice_id="builtin"))) == (
        "invalid_voice")
    assert await code_of(vault.create_voice(**voice_fields(clock, languages=[]))) == (
        "invalid_voice")
    await vault.create_voice(**voice_fields(clock))
    assert await code_of(vault.create_voice(**voice_fields(clock))) == "already_exists"
    assert await code_of(vault.add_version("nope", make_wav(), "x", "olga")) == (
        "voice_not_found")
    assert await code_of(vault.add_version("corp-es", make_wav(), "  ", "olga")) == (
        "invalid_ref_text")


async def test_four_eyes(vault: VoiceVault, clock: VirtualClock) -> None:
    await vault.create_voice(**voice_fields(clock))
    await vault.add_version("corp-es", make_wav(), REF_TEXT, "olga")
    first = await vault.approve("corp-es", 1, "olga", ["business_owner", "security"])
    assert first.status == "pending"
    assert await code_of(vault.approve("corp-es", 1, "olga", ["business_owner", "security"])) == (
        "same_operator")
    assert await code_of(vault.approve("corp-es", 1, "omar", ["business_owner"])) == "same_role"
    assert await code_of(vault.approve("corp-es", 1, "vic", ["viewer"])) == "role_not_allowed"
    assert await code_of(vault.approve("corp-es", 2, "sam", ["security"])) == "version_not_found"
    assert not vault.is_usable("corp-es", "1")
    done = await vault.approve("corp-es", 1, "sam", ["security"])
    assert done.status == "approved" and done.effective_at is not None
    assert [(a.operator, a.role) for a in done.approvals] == [
        ("olga", "business_owner"), ("sam", "security")]
    assert await code_of(vault.approve("corp-es", 1, "lea", ["legal"])) == "already_approved"
    assert vault.is_usable("corp-es", "1")


async def test_resolve_only_an_approved_version(vault: VoiceVault, clock: VirtualClock) -> None:
    await vault.create_voice(**voice_fields(clock))
    audio = make_wav()
    await vault.add_version("corp-es", audio, REF_TEXT, "olga")
    assert await vault.resolve("corp-es", "1") is None
    await vault.approve("corp-es", 1, "olga", ["business_owner"])
    assert await vault.resolve("corp-es", "1") is None
    await vault.approve("corp-es", 1, "ada", ["admin"])
    ref = await vault.resolve("corp-es", "1", tenant="acme")
    assert ref is not None
    assert (ref.voice_profile_id, ref.voice_version, ref.ref_text) == ("corp-es", "1", REF_TEXT)
    assert ref.ref_audio == audio and not ref.x_vector_only
    assert await vault.resolve("corp-es", "1", tenant="globex") is None  # no cross-tenant use
    assert await vault.resolve("corp-es", "2") is None
    assert await vault.resolve("corp-es", "one") is None
    assert await vault.resolve("ghost", "1") is None


async def test_revocation_is_immediate_and_final(store: Store, clock: VirtualClock) -> None:
    forgotten: list[str] = []
    vault = VoiceVault(store, key=KEY, clock=clock, on_revoked=forgotten.append)
    await approved_voice(vault, clock)
    await vault.add_version("corp-es", make_wav(), REF_TEXT, "olga")
    assert await vault.resolve("corp-es", "1") is not None  # cached now
    usable = lambda: vault.is_usable("corp-es", "1")  # noqa: E731 - what a session holds
    assert usable()
    voice = await vault.revoke("corp-es", "consent withdrawn", "sam")
    assert not usable()
    assert forgotten == ["corp-es"]
    assert voice.status == "revoked"
    assert [v.status for v in voice.versions] == ["revoked", "revoked"]
    assert await vault.resolve("corp-es", "1") is None
    assert await code_of(vault.approve("corp-es", 2, "olga", ["business_owner"])) == (
        "voice_revoked")
    assert await code_of(vault.add_version("corp-es", make_wav(), REF_TEXT, "olga")) == (
        "voice_revoked")
    again = await vault.revoke("corp-es", "twice", "sam")
    assert again == voice
    assert await code_of(vault.revoke("ghost", "x", "sam")) == "voice_not_found"


async def test_usage_period_ends(vault: VoiceVault, clock: VirtualClock) -> None:
    await approved_voice(vault, clock)
    assert vault.is_usable("corp-es", "1")
    clock.advance(timedelta(days=30).total_seconds())
    assert not vault.is_usable("corp-es", "1")
    assert await vault.resolve("corp-es", "1") is None
    assert await code_of(vault.add_version("corp-es", make_wav(), REF_TEXT, "olga")) == (
        "voice_expired")


async def test_a_new_process_rebuilds_the_state_from_the_store(
    vault: VoiceVault, store: Store, clock: VirtualClock
) -> None:
    audio = await approved_voice(vault, clock)
    await vault.create_voice(**voice_fields(clock, voice_id="old"))
    await vault.revoke("old", "retired", "sam")
    restarted = VoiceVault(store, key=KEY, clock=clock)
    assert not restarted.is_usable("corp-es", "1")
    await restarted.load()
    assert restarted.is_usable("corp-es", "1")
    assert not restarted.is_usable("old", "1")
    ref = await restarted.resolve("corp-es", 1)
    assert ref is not None and ref.ref_audio == audio
    wrong_key = VoiceVault(store, key=bytes(32), clock=clock)
    await wrong_key.load()
    assert await wrong_key.resolve("corp-es", "1") is None  # fails closed


async def test_default_voice_is_always_usable(vault: VoiceVault) -> None:
    assert vault.is_usable("builtin", "default")


async def test_everything_is_audited_without_content(
    vault: VoiceVault, store: Store, clock: VirtualClock
) -> None:
    audio = await approved_voice(vault, clock)
    await code_of(vault.approve("corp-es", 1, "olga", ["business_owner"]))
    await vault.revoke("corp-es", "consent withdrawn", "sam")
    events = await AuditLog(store).events()
    assert [e.kind for e in events] == [
        "voice.created", "voice.version_added", "voice.approval_recorded",
        "voice.approval_recorded", "voice.approved", "voice.approval_refused", "voice.revoked",
    ]
    added = events[1].data
    assert added["audio_sha256"] and added["text_sha256"] and added["operator"] == "olga"
    approved = events[4].data
    assert approved["approvers"] == ["olga", "sam"] and approved["operator"] == "sam"
    assert events[5].data["reason_code"] == "already_approved"
    assert events[6].data["versions"] == [1]
    dumped = json.dumps([e.data for e in events])
    assert "Acme" not in dumped and "corporativa" not in dumped
    assert audio.hex()[:64] not in dumped
    assert (await AuditLog(store).verify()).ok


async def test_a_version_names_its_engine_voice_and_its_approval_covers_it(
    vault: VoiceVault, store: Store, clock: VirtualClock
) -> None:
    """Issue 41: the serving engine's voice a version is spoken with on a remote TTS is stored
    with the version, fixed, shown, audited with each approval and handed to the runner with
    the resolved voice; a name that is not a short engine voice name is refused."""
    await vault.create_voice(**voice_fields(clock))
    audio = make_wav(2.0)
    for bad in ("two words", "../voices/x", "v" * 65, "-leading"):
        assert await code_of(vault.add_version("corp-es", audio, REF_TEXT, "olga",
                                               engine_voice=bad)) == "invalid_engine_voice"
    version = await vault.add_version("corp-es", audio, REF_TEXT, "olga",
                                      engine_voice="en_US-joe-medium")
    assert version.engine_voice == "en_US-joe-medium"
    plain = await vault.add_version("corp-es", audio, REF_TEXT, "olga")
    assert (plain.version, plain.engine_voice) == (2, "")
    await vault.approve("corp-es", 1, "olga", ["business_owner"])
    await vault.approve("corp-es", 1, "sam", ["security"])
    await vault.approve("corp-es", 2, "olga", ["business_owner"])
    await vault.approve("corp-es", 2, "sam", ["security"])
    resolved = await vault.resolve("corp-es", 1, tenant="acme")
    assert resolved is not None and resolved.engine_voice == "en_US-joe-medium"
    unnamed = await vault.resolve("corp-es", 2, tenant="acme")
    assert unnamed is not None and unnamed.engine_voice == ""
    record = await vault.get("corp-es")
    assert record is not None
    assert [v.engine_voice for v in record.versions] == ["en_US-joe-medium", ""]
    events = [e for e in await AuditLog(store).events(limit=100)
              if e.kind.startswith("voice.") and e.data.get("version") == 1]
    bound = {e.kind: e.data["engine_voice"] for e in events}
    assert bound == {"voice.version_added": "en_US-joe-medium",
                     "voice.approval_recorded": "en_US-joe-medium",
                     "voice.approved": "en_US-joe-medium"}
