"""The voice vault: governed voices, encrypted reference versions, four-eyes approval and
revocation (ADR-0005).

Every change is one short, shielded write transaction that locks the voice's row and appends its
audit event in the same transaction. The vault also keeps, in memory, which versions are usable
(approved, with their ``usage_until``) and which voices are revoked: :meth:`is_usable` answers
from that alone, so it is cheap enough to ask before every spoken unit, and a revocation is seen
there before its transaction even commits. Decrypted references are cached (bounded) for
:meth:`resolve` and dropped on revocation. One process owns this state; :meth:`load` rebuilds it
from the store.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import anyio
import structlog
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from vocero.contracts.clock import SystemClock
from vocero.contracts.domain import DEFAULT_VOICE, VoiceRef
from vocero.contracts.ports import Clock
from vocero.store.audit_tx import append_in
from vocero.store.engine import Store
from vocero.store.models.voices import VoiceApprovalRow, VoiceProfileRow, VoiceVersionRow
from vocero.voice_vault import approval
from vocero.voice_vault.crypto import VaultCipher, VaultKey
from vocero.voice_vault.errors import VaultError, VaultKeyError
from vocero.voice_vault.records import VersionRecord, VoiceRecord, version_record, voice_record
from vocero.voice_vault.wav import validate_wav

log = structlog.get_logger("vocero.voice_vault")

ACTOR = "vocero.voice_vault"
DEFAULT_MODEL = "qwen3-tts-12hz-1.7b-base"
VOICE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
MAX_REF_TEXT = 2_000
MAX_REASON = 500
ENGINE_VOICE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
"""A serving engine's voice name (``alloy``, ``en_US-joe-medium``, ``af_bella``): short, no
spaces, no paths."""
ACTIVE, REVOKED = "active", "revoked"

VersionKey = tuple[str, str]


class VoiceVault:
    def __init__(
        self,
        store: Store,
        *,
        key: VaultKey | bytes,
        clock: Clock | None = None,
        model: str = DEFAULT_MODEL,
        on_revoked: Callable[[str], None] | None = None,
        cache_size: int = 32,
    ) -> None:
        self._store = store
        self._cipher = VaultCipher(key)
        self._clock = clock or SystemClock()
        self._model = model
        self._on_revoked = on_revoked
        self._cache_size = cache_size
        self._usable_until: dict[VersionKey, float] = {}
        self._revoked: set[str] = set()
        self._cache: OrderedDict[VersionKey, tuple[str, VoiceRef]] = OrderedDict()

    # ------------------------------------------------------------------------- hot path

    def is_usable(self, voice_profile_id: str, voice_version: str) -> bool:
        """Whether this voice version may speak now: approved, not revoked, within its usage
        period. In memory only; the built-in default voice is always usable."""
        if (voice_profile_id, voice_version) == (
            DEFAULT_VOICE.voice_profile_id, DEFAULT_VOICE.voice_version
        ):
            return True
        if voice_profile_id in self._revoked:
            return False
        until = self._usable_until.get((voice_profile_id, voice_version))
        return until is not None and self._clock.now() < until

    async def load(self) -> None:
        """Rebuild the in-memory revocation set and usable versions from the store."""
        async with self._read() as session:
            revoked = (await session.scalars(
                select(VoiceProfileRow.voice_id).where(VoiceProfileRow.status == REVOKED)
            )).all()
            approved = (await session.execute(
                select(VoiceVersionRow.voice_id, VoiceVersionRow.version,
                       VoiceProfileRow.usage_until)
                .join(VoiceProfileRow, VoiceProfileRow.voice_id == VoiceVersionRow.voice_id)
                .where(VoiceVersionRow.status == "approved", VoiceProfileRow.status == ACTIVE)
            )).all()
        self._revoked = set(revoked)
        self._usable_until = {(v, str(n)): until.timestamp() for v, n, until in approved}
        self._cache.clear()

    async def resolve(
        self, profile_id: str, version: str | int, *, tenant: str | None = None
    ) -> VoiceRef | None:
        """The approved reference of this version with its audio and transcript decrypted, or
        ``None`` when it is unknown, not approved, revoked, expired or of another tenant."""
        key = (profile_id, str(version))
        if not self.is_usable(*key) or not key[1].isdigit():
            return None
        cached = self._cache.get(key)
        if cached is None:
            cached = await self._load_ref(profile_id, int(key[1]))
            if cached is None or not self.is_usable(*key):
                return None
            self._remember(key, cached)
        voice_tenant, ref = cached
        return ref if tenant is None or tenant == voice_tenant else None

    # ---------------------------------------------------------------------- governance

    async def create_voice(
        self,
        *,
        voice_id: str,
        tenant: str,
        owner: str,
        purpose: str,
        languages: Sequence[str],
        usage_until: datetime,
        consent_ref: str,
        created_by: str,
    ) -> VoiceRecord:
        _check_voice(voice_id, tenant, owner, purpose, languages, consent_ref)
        now = self._now()
        if usage_until.tzinfo is None or usage_until <= now:
            raise VaultError("invalid_usage_until", "a timezone-aware time in the future")
        row = VoiceProfileRow(
            voice_id=voice_id, tenant=tenant, owner=owner, purpose=purpose,
            languages=list(languages), usage_until=usage_until.astimezone(UTC),
            consent_ref=consent_ref, status=ACTIVE, created_at=now,
        )
        try:
            async with self._write() as session:
                if await session.get(VoiceProfileRow, voice_id) is not None:
                    raise VaultError("already_exists", voice_id)
                session.add(row)
                await session.flush()
                await self._audit(session, "voice.created", created_by, {
                    "voice_id": voice_id, "tenant_id": tenant, "languages": list(languages),
                    "usage_until": row.usage_until.isoformat(), "consent_ref": consent_ref,
                })
        except IntegrityError:
            raise VaultError("already_exists", voice_id) from None
        return voice_record(row, [])

    async def add_version(
        self, voice_id: str, ref_audio_wav: bytes, ref_text: str, created_by: str, *,
        engine_voice: str = "",
    ) -> VersionRecord:
        """A new ``pending`` version holding the encrypted reference and its hashes, and the
        serving engine's voice name it is spoken with on a remote TTS (``engine_voice``; ""
        for none). Both are fixed with the version: its approvals cover them."""
        if engine_voice and not ENGINE_VOICE.fullmatch(engine_voice):
            raise VaultError("invalid_engine_voice", "1..64 letters, digits, '_', '.', ':', '-'")
        info = validate_wav(ref_audio_wav)
        text = ref_text.strip()
        if not text or len(text) > MAX_REF_TEXT:
            raise VaultError("invalid_ref_text", f"1..{MAX_REF_TEXT} characters")
        audio_sha256 = hashlib.sha256(ref_audio_wav).hexdigest()
        text_sha256 = hashlib.sha256(text.encode()).hexdigest()
        params: dict[str, Any] = {"mode": "icl", "sample_rate": info.sample_rate,
                                  "duration_ms": info.duration_ms}
        async with self._write() as session:
            profile = await self._usable_profile(session, voice_id)
            number = 1 + int((await session.scalar(
                select(func.coalesce(func.max(VoiceVersionRow.version), 0))
                .where(VoiceVersionRow.voice_id == voice_id)
            )) or 0)
            row = VoiceVersionRow(
                voice_id=profile.voice_id, version=number, audio_sha256=audio_sha256,
                text_sha256=text_sha256,
                ref_audio=self._cipher.seal(ref_audio_wav, _context(voice_id, number, "audio")),
                ref_text=self._cipher.seal_text(text, _context(voice_id, number, "text")),
                model=self._model, params=params, engine_voice=engine_voice, status="pending",
                created_at=self._now(), effective_at=None,
            )
            session.add(row)
            await session.flush()
            await self._audit(session, "voice.version_added", created_by, {
                "voice_id": voice_id, "version": number, "audio_sha256": audio_sha256,
                "text_sha256": text_sha256, "model": self._model, **params,
                "engine_voice": engine_voice,
            })
        return version_record(row, [])

    async def approve(
        self, voice_id: str, version: int, operator_name: str, operator_roles: Iterable[str]
    ) -> VersionRecord:
        """Record this operator's approval (see :mod:`~vocero.voice_vault.approval` for the
        rule); the version becomes ``approved`` when the rule is met. Refusals are audited."""
        try:
            return await self._approve(voice_id, version, operator_name, set(operator_roles))
        except VaultError as refused:
            if refused.code not in ("voice_not_found", "version_not_found"):
                async with self._write() as session:
                    await self._audit(session, "voice.approval_refused", operator_name, {
                        "voice_id": voice_id, "version": version, "reason_code": refused.code,
                    })
            raise

    async def revoke(self, voice_id: str, reason: str, by: str) -> VoiceRecord:
        """Revoke the voice and every version. New syntheses are refused the moment the voice's
        row is locked (before the commit); cached references are dropped. Idempotent."""
        reason = reason.strip()
        if not reason or len(reason) > MAX_REASON:
            raise VaultError("invalid_reason", f"1..{MAX_REASON} characters")
        async with self._write() as session:
            profile = await _locked_profile(session, voice_id)
            if profile.status == REVOKED:
                self._revoked.add(voice_id)
            else:
                self._block(voice_id)
                versions = await _versions(session, voice_id)
                for row in versions:
                    row.status = approval.next_status(row.status, "revoke")
                profile.status = REVOKED
                await self._audit(session, "voice.revoked", by, {
                    "voice_id": voice_id, "reason": reason,
                    "versions": [row.version for row in versions],
                })
        record = await self.get(voice_id)
        assert record is not None
        return record

    async def get(self, voice_id: str) -> VoiceRecord | None:
        """The voice and its versions with status and approvals; never audio or transcript."""
        async with self._read() as session:
            profile = await session.get(VoiceProfileRow, voice_id)
            if profile is None:
                return None
            versions = await _versions(session, voice_id)
            approvals = await _approvals(session, voice_id)
        return voice_record(profile, [
            version_record(row, [a for a in approvals if a.version == row.version])
            for row in versions
        ])

    # ------------------------------------------------------------------------ internals

    async def _approve(
        self, voice_id: str, version: int, operator: str, roles: set[str]
    ) -> VersionRecord:
        async with self._write() as session:
            profile = await self._usable_profile(session, voice_id)
            row = await session.get(VoiceVersionRow, (voice_id, version))
            if row is None:
                raise VaultError("version_not_found", f"{voice_id} v{version}")
            existing = [a for a in await _approvals(session, voice_id) if a.version == version]
            pairs = [(a.operator, a.role) for a in existing]
            approval.next_status(row.status, "approval_partial")  # refuses approved or revoked
            role = approval.approval_role(operator, roles, pairs)
            complete = approval.is_complete([*pairs, (operator, role)])
            now = self._now()
            added = VoiceApprovalRow(id=f"vap_{uuid.uuid4().hex}", voice_id=voice_id,
                                     version=version, operator=operator, role=role,
                                     created_at=now)
            session.add(added)
            row.status = approval.next_status(
                row.status, "approval_complete" if complete else "approval_partial"
            )
            data = {"voice_id": voice_id, "version": version, "role": role,
                    "status": row.status, "audio_sha256": row.audio_sha256,
                    "text_sha256": row.text_sha256, "engine_voice": row.engine_voice}
            await self._audit(session, "voice.approval_recorded", operator, data)
            if complete:
                row.effective_at = now
                await self._audit(session, "voice.approved", operator, {
                    **data, "approvers": [name for name, _ in pairs] + [operator],
                })
            until = profile.usage_until.timestamp()
        if complete:
            self._usable_until[(voice_id, str(version))] = until
        return version_record(row, [*existing, added])

    async def _usable_profile(self, session: AsyncSession, voice_id: str) -> VoiceProfileRow:
        profile = await _locked_profile(session, voice_id)
        if profile.status == REVOKED:
            raise VaultError("voice_revoked", voice_id)
        if profile.usage_until <= self._now():
            raise VaultError("voice_expired", voice_id)
        return profile

    async def _load_ref(self, voice_id: str, version: int) -> tuple[str, VoiceRef] | None:
        async with self._read() as session:
            profile = await session.get(VoiceProfileRow, voice_id)
            row = await session.get(VoiceVersionRow, (voice_id, version))
        if profile is None or row is None or profile.status != ACTIVE:
            return None
        if row.status != "approved" or profile.usage_until <= self._now():
            return None
        try:
            audio = self._cipher.open(row.ref_audio, _context(voice_id, version, "audio"))
            text = self._cipher.open_text(row.ref_text, _context(voice_id, version, "text"))
        except VaultKeyError:
            log.error("vault.decrypt_failed", voice_id=voice_id, version=version)
            return None
        ref = VoiceRef(voice_profile_id=voice_id, voice_version=str(version),
                       ref_audio=audio, ref_text=text,
                       x_vector_only=row.params.get("mode") == "x_vector",
                       engine_voice=row.engine_voice)
        return profile.tenant, ref

    def _remember(self, key: VersionKey, value: tuple[str, VoiceRef]) -> None:
        self._cache[key] = value
        self._cache.move_to_end(key)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _block(self, voice_id: str) -> None:
        self._revoked.add(voice_id)
        for key in [k for k in self._usable_until if k[0] == voice_id]:
            del self._usable_until[key]
        for key in [k for k in self._cache if k[0] == voice_id]:
            del self._cache[key]
        if self._on_revoked is not None:
            self._on_revoked(voice_id)
        log.info("vault.voice_blocked", voice_id=voice_id)

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.now(), UTC)

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncSession]:
        """One short write transaction, shielded: a cancel never lands mid-write."""
        with anyio.CancelScope(shield=True):
            async with self._store.write() as session:
                yield session

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncSession]:
        """One short read transaction, shielded too: :meth:`resolve` runs while a session opens,
        and a cancel landing inside aiosqlite would leave its connection half-closed."""
        with anyio.CancelScope(shield=True):
            async with self._store.read() as session:
                yield session

    async def _audit(
        self, session: AsyncSession, kind: str, operator: str, data: dict[str, Any]
    ) -> None:
        await append_in(session, kind, {**data, "operator": operator}, at=self._now(),
                        actor=ACTOR)


def _context(voice_id: str, version: int, field: str) -> str:
    return f"vocero.voice/{voice_id}/{version}/{field}"


def _check_voice(voice_id: str, tenant: str, owner: str, purpose: str,
                 languages: Sequence[str], consent_ref: str) -> None:
    if not VOICE_ID.fullmatch(voice_id) or voice_id == DEFAULT_VOICE.voice_profile_id:
        raise VaultError("invalid_voice", "voice_id")
    for name, value in (("tenant", tenant), ("owner", owner), ("purpose", purpose),
                        ("consent_ref", consent_ref)):
        if not value.strip():
            raise VaultError("invalid_voice", name)
    if not languages or not all(isinstance(lang, str) and lang.strip() for lang in languages):
        raise VaultError("invalid_voice", "languages")


async def _locked_profile(session: AsyncSession, voice_id: str) -> VoiceProfileRow:
    profile = (await session.scalars(
        select(VoiceProfileRow).where(VoiceProfileRow.voice_id == voice_id).with_for_update()
    )).first()
    if profile is None:
        raise VaultError("voice_not_found", voice_id)
    return profile


async def _versions(session: AsyncSession, voice_id: str) -> list[VoiceVersionRow]:
    query = (select(VoiceVersionRow).where(VoiceVersionRow.voice_id == voice_id)
             .order_by(VoiceVersionRow.version))
    return list((await session.scalars(query)).all())


async def _approvals(session: AsyncSession, voice_id: str) -> list[VoiceApprovalRow]:
    query = (select(VoiceApprovalRow).where(VoiceApprovalRow.voice_id == voice_id)
             .order_by(VoiceApprovalRow.created_at))
    return list((await session.scalars(query)).all())
