"""The governed voice on every runner set (SPEC §3, issue 41): the voice a session speaks is the
one ``effective`` reports, on the CPU runners (Piper), the GB10 runners (Qwen3-TTS, a fake model
standing in for its weights) and a remote TTS (an OpenAI-compatible speech server over HTTP).

Each test runs the real composition root in process: the voice vault's operator API, the
realtime WebSocket and the session's runners, with only the TTS stage swapped for the runner set
under test (the sim runners serve the rest). What is asserted is what the engine was asked to
speak and in which voice, the frames the caller received and the audit trail.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from starlette.testclient import TestClient

from tests.inference.test_gb10 import FakeQwenModel
from tests.support.engines import ScriptedEngine
from tests.support.voices import make_wav
from tests.support.wsclient import ProtocolClient
from vocero.app import runtime as runtime_module
from vocero.app.server import create_app
from vocero.app.settings import Settings
from vocero.contracts.ports import Tts
from vocero.inference.cpu.tts import PiperEngine
from vocero.inference.gb10.tts import QwenTtsEngine
from vocero.inference.toolkit.settings import QueueSettings
from vocero.inference.toolkit.tts import TextToSpeech

OPERATORS = [
    {"token": "owner-token", "name": "olga", "roles": ["business_owner"]},
    {"token": "sec-token", "name": "sam", "roles": ["security"]},
]
OWNER, SEC = ({"authorization": f"Bearer {t}"} for t in ("owner-token", "sec-token"))
ADMIN = {"authorization": "Bearer op-admin-token"}
VOICE = {
    "voice_id": "corp-en", "tenant": "acme", "owner": "Brand team",
    "purpose": "Agent voice for customer calls", "languages": ["en"],
    "usage_until": "2099-01-01T00:00:00Z", "consent_ref": "consent-2026-001",
}
REF_TEXT = "Hello, this is the Acme assistant."
ENGINE_VOICE = "corp_en_v1"
HOUSE_VOICE = "house-voice"
"""``--tts-voice``: the remote TTS's built-in voice."""
REPLY = "I can help with orders and appointments."


def profile(*, voice: bool = True, fallback: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "voiced", "version": "1", "match": {"tenant": "acme", "roles": ["customer"]},
        "instructions": "Be brief.",
    }
    if voice:
        body["voice"] = {"profile_id": "corp-en", "version": "1"}
    if fallback:
        body["allow_voice_fallback"] = True
    return body


# ------------------------------------------------------------------------ the runner sets


class FakePiperVoice:
    """``piper.PiperVoice`` as ``PiperEngine.render`` calls it (piper-tts 1.3): the sentences it
    was asked to speak are recorded; each is 0.1 s of a tone."""

    def __init__(self) -> None:
        self.sentences: list[str] = []

    def synthesize(self, sentence: str, syn_config: Any = None) -> Iterator[Any]:
        self.sentences.append(sentence)
        tone = (0.2 * np.sin(np.arange(2205) * 0.1) * 32767).astype("<i2").tobytes()
        yield type("Chunk", (), {"audio_int16_bytes": tone})()


class FakePiper(PiperEngine):
    """The real engine (its voice checks) with :class:`FakePiperVoice` for the ONNX model."""

    def __init__(self, directory: Path) -> None:
        config = directory / "voice.onnx.json"
        config.write_text(json.dumps({"audio": {"sample_rate": 22_050}}))
        super().__init__(str(directory / "voice.onnx"), str(config), allow_voice_fallback=False)
        self.fake = FakePiperVoice()

    def load(self) -> None:
        self._voice = self.fake


@dataclasses.dataclass
class RunnerSet:
    """One runner set under test and what its engine was asked to speak."""

    kind: str
    spoken: Callable[[], list[tuple[str, str]]]
    """(text, voice) of every synthesis the engine did since the app started, warm-up included:
    the voice is the engine's own name of it (Piper: its one voice; Qwen3-TTS: the preset
    speaker, or ``clone`` for a vault reference; remote: the ``voice`` of the request)."""
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)
    tts: Tts | None = None


@contextmanager
def runner_set(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunnerSet]:
    if kind == "remote":
        with ScriptedEngine([]) as engine:
            def remote() -> list[tuple[str, str]]:
                return [(r["input"], r["voice"]) for r in engine.requests if "input" in r]

            yield RunnerSet(kind, remote, settings={
                "tts_url": engine.url, "tts_model": "scripted", "tts_voice": HOUSE_VOICE})
        return
    if kind == "cpu":
        piper = FakePiper(tmp_path)
        tts = TextToSpeech(piper, QueueSettings())
        yield _swapped(RunnerSet(kind, lambda: [(s, "piper") for s in piper.fake.sentences],
                                 tts=tts), monkeypatch)
        return
    qwen = QwenTtsEngine("base-dir", preset_model_dir="custom-dir", speaker="Ryan",
                         device="cpu", streaming=False)
    fake = FakeQwenModel(speakers=["ryan", "aiden"])
    qwen._model = qwen._preset = fake

    def gb10() -> list[tuple[str, str]]:
        return fake.spoken

    yield _swapped(RunnerSet(kind, gb10, tts=TextToSpeech(qwen, QueueSettings())), monkeypatch)


def _swapped(chosen: RunnerSet, monkeypatch: pytest.MonkeyPatch) -> RunnerSet:
    """The app's runners with the TTS stage of ``chosen`` (the sim runners serve the rest)."""
    real = runtime_module.build_runners
    tts = chosen.tts
    assert tts is not None

    def build(settings: Settings) -> Any:
        shared, per_session = real(settings)
        return (dataclasses.replace(shared, kind=chosen.kind, tts=tts),
                lambda: dataclasses.replace(per_session(), kind=chosen.kind, tts=tts))

    monkeypatch.setattr(runtime_module, "build_runners", build)
    return chosen


@contextmanager
def app(
    sim_settings: Settings, tmp_path: Path, runners: RunnerSet, voiced: dict[str, Any]
) -> Iterator[TestClient]:
    operators = tmp_path / "operators.yaml"
    operators.write_text(yaml.safe_dump(OPERATORS))
    profiles = tmp_path / "profiles"
    profiles.mkdir(exist_ok=True)
    (profiles / "voiced.yaml").write_text(yaml.safe_dump(voiced))
    settings = dataclasses.replace(sim_settings, operators=str(operators),
                                   profiles=str(profiles), **runners.settings)
    with TestClient(create_app(settings)) as client:
        assert client.portal is not None
        client.portal.call(client.app.state.runtime.ready.wait)  # type: ignore[attr-defined]
        yield client


@pytest.fixture(params=["cpu", "gb10", "remote"])
def runners(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[RunnerSet]:
    with runner_set(request.param, tmp_path, monkeypatch) as chosen:
        yield chosen


def approved_voice(api: TestClient, **version: str) -> None:
    """corp-en v1, approved by two operators of different roles (``engine_voice`` as given)."""
    assert api.post("/v1/voices", json=VOICE, headers=OWNER).status_code == 201
    body = {"ref_audio": base64.b64encode(make_wav(1.5)).decode(), "ref_text": REF_TEXT,
            **version}
    added = api.post("/v1/voices/corp-en/versions", json=body, headers=OWNER)
    assert added.status_code == 201, added.text
    for headers in (OWNER, SEC):
        assert api.post("/v1/voices/corp-en/versions/1/approvals",
                        headers=headers).status_code == 200


def audit(api: TestClient, kind: str) -> list[dict[str, Any]]:
    assert api.portal is not None
    api.portal.call(api.app.state.runtime.audits_settled)  # type: ignore[attr-defined]
    items = api.get("/v1/audit", headers=ADMIN).json()["items"]
    return [e["data"] for e in items if e["kind"] == kind]


def turn(pc: ProtocolClient, text: str = "hello") -> dict[str, Any]:
    """A typed turn, answered in full: its ``response.completed.v1``."""
    pc.send("input.text.v1", {"text": text})
    return dict(pc.expect("response.completed.v1")["data"]["payload"])


def audio_of(pc: ProtocolClient, generation_id: str) -> list[dict[str, Any]]:
    return [p for p in pc.of_type("response.audio_delta.v1")
            if p["generation_id"] == generation_id]


def refused(api: TestClient) -> tuple[str, int]:
    """A connect that must be refused: the ``error.v1`` code and the close code."""
    with api.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.send("session.connect.v1", {"token": "demo-token"})
        frame = pc.receive()
        assert frame["type"] == "vocero.error.v1", frame
        return frame["data"]["payload"]["code"], pc.expect_close()


# ------------------------------------------------------------------------------- the tests

SPOKEN_VAULT_VOICE = {"cpu": None, "gb10": "clone", "remote": ENGINE_VOICE}
"""How each runner set speaks the approved vault version (``None``: it cannot; Piper does not
clone)."""
BUILTIN = {"cpu": "piper", "gb10": "Ryan", "remote": HOUSE_VOICE}
"""Each runner set's built-in voice, as its engine names it."""


def test_effective_names_the_voice_actually_spoken(
    runners: RunnerSet, sim_settings: Settings, tmp_path: Path
) -> None:
    """An approved vault voice: spoken as approved where the runner can (a clone on the GB10,
    the approved ``engine_voice`` on a remote TTS) and reported so; on Piper, which cannot clone,
    the session is refused with ``VOICE_UNAVAILABLE`` rather than spoken in Piper's voice."""
    with app(sim_settings, tmp_path, runners, profile()) as api:
        approved_voice(api, engine_voice=ENGINE_VOICE)
        before = len(runners.spoken())
        wanted = SPOKEN_VAULT_VOICE[runners.kind]
        if wanted is None:
            assert refused(api) == ("VOICE_UNAVAILABLE", 4403)
            assert audit(api, "session.voice_denied")[-1]["reason_code"] == (
                "voice_not_spoken_by_runner")
            assert runners.spoken()[before:] == []
            return
        with api.websocket_connect("/v1/realtime") as ws:
            pc = ProtocolClient(ws)
            effective = pc.connect()["data"]["payload"]["effective"]
            assert (effective["voice_profile_id"], effective["voice_version"]) == ("corp-en", "1")
            done = turn(pc)
            assert done["status"] == "completed" and audio_of(pc, done["generation_id"])
        spoken = runners.spoken()[before:]
        assert spoken and " ".join(text for text, _ in spoken) == REPLY
        assert {voice for _, voice in spoken} == {wanted}


@pytest.mark.parametrize("kind", ["gb10"])
def test_the_gb10_builtin_voice_is_a_preset_speaker(
    kind: str, sim_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No vault voice: ``effective`` says ``builtin``/``default`` and the GB10 speaks the
    CustomVoice model's preset speaker, warm-up included; nothing is cloned. (The built-in
    voice of the other sets, Piper's and ``--tts-voice``, is asserted with the fallback.)"""
    with runner_set(kind, tmp_path, monkeypatch) as runners, app(
        sim_settings, tmp_path, runners, profile(voice=False)
    ) as api:
        before = len(runners.spoken())
        with api.websocket_connect("/v1/realtime") as ws:
            pc = ProtocolClient(ws)
            effective = pc.connect()["data"]["payload"]["effective"]
            assert (effective["voice_profile_id"], effective["voice_version"]) == (
                "builtin", "default")
            assert turn(pc)["status"] == "completed"
        spoken = runners.spoken()
        assert spoken[before:] and {v for _, v in spoken} == {BUILTIN[kind]}  # warm-up too


@pytest.mark.parametrize("kind", ["remote"])
def test_a_version_without_an_engine_voice_is_refused_on_a_remote_tts(
    kind: str, sim_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with runner_set(kind, tmp_path, monkeypatch) as runners, app(
        sim_settings, tmp_path, runners, profile()
    ) as api:
        approved_voice(api)  # no engine_voice
        before = len(runners.spoken())
        assert refused(api) == ("VOICE_UNAVAILABLE", 4403)
        assert runners.spoken()[before:] == []  # nothing was said, in any voice
        denied = audit(api, "session.voice_denied")
        assert denied == [{"tenant_id": "acme", "profile_id": "voiced",
                           "voice_profile_id": "corp-en", "voice_version": "1",
                           "reason_code": "voice_not_spoken_by_runner"}]


@pytest.mark.parametrize("kind", ["remote", "cpu"])
def test_with_the_profiles_fallback_the_builtin_voice_speaks_and_effective_says_so(
    kind: str, sim_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``allow_voice_fallback``: a version the runner cannot speak (no ``engine_voice`` on a
    remote TTS; any clone on Piper) gives way to the runner's built-in voice, and ``effective``
    names the built-in voice, not the vault's; the fallback is audited."""
    with runner_set(kind, tmp_path, monkeypatch) as runners, app(
        sim_settings, tmp_path, runners, profile(fallback=True)
    ) as api:
        approved_voice(api)
        before = len(runners.spoken())
        with api.websocket_connect("/v1/realtime") as ws:
            pc = ProtocolClient(ws)
            effective = pc.connect()["data"]["payload"]["effective"]
            assert (effective["voice_profile_id"], effective["voice_version"]) == (
                "builtin", "default")
            assert turn(pc)["status"] == "completed"
        spoken = runners.spoken()[before:]
        assert spoken and {voice for _, voice in spoken} == {BUILTIN[kind]}
        (fallback,) = audit(api, "session.voice_fallback")
        assert (fallback["voice_profile_id"], fallback["spoken_voice_profile_id"]) == (
            "corp-en", "builtin")


def test_the_remote_engine_is_asked_for_the_approved_engine_voice(
    sim_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What reached the engine: every request of the session names the approved version's
    ``engine_voice``, never ``--tts-voice``; the API shows it with the version and the approval
    audit binds it."""
    with runner_set("remote", tmp_path, monkeypatch) as runners, app(
        sim_settings, tmp_path, runners, profile()
    ) as api:
        approved_voice(api, engine_voice=ENGINE_VOICE)
        shown = api.get("/v1/voices/corp-en", headers=OWNER).json()
        assert [v["engine_voice"] for v in shown["versions"]] == [ENGINE_VOICE]
        assert audit(api, "voice.approved")[0]["engine_voice"] == ENGINE_VOICE
        before = len(runners.spoken())
        with api.websocket_connect("/v1/realtime") as ws:
            pc = ProtocolClient(ws)
            pc.connect()
            turn(pc)
            turn(pc, "tell me a story")
        voices = [voice for _, voice in runners.spoken()[before:]]
        assert len(voices) >= 2 and set(voices) == {ENGINE_VOICE}


@pytest.mark.parametrize("kind", ["gb10", "remote"])
def test_a_revoked_voice_is_refused_mid_session(
    kind: str, sim_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Revocation while a session speaks the voice: the next unit is not synthesized at all
    (the engine is asked nothing more), the caller gets ``VOICE_UNAVAILABLE`` and the words as
    text; a new session is refused. (Piper never speaks a vault voice: the CPU set is covered
    by its refusal in the tests above.)"""
    with runner_set(kind, tmp_path, monkeypatch) as runners, app(
        sim_settings, tmp_path, runners, profile()
    ) as api:
        approved_voice(api, engine_voice=ENGINE_VOICE)
        with api.websocket_connect("/v1/realtime") as ws:
            pc = ProtocolClient(ws)
            pc.connect()
            first = turn(pc)
            assert audio_of(pc, first["generation_id"])
            spoken = len(runners.spoken())
            revoked = api.post("/v1/voices/corp-en/revoke", json={"reason": "consent withdrawn"},
                               headers=SEC)
            assert revoked.status_code == 200
            second = turn(pc)
            assert runners.spoken()[spoken:] == []
            assert audio_of(pc, second["generation_id"]) == []
            texts = [p["text"] for p in pc.of_type("response.text_delta.v1")
                     if p["generation_id"] == second["generation_id"]]
            assert "".join(texts) == REPLY
            assert [p["code"] for p in pc.of_type("error.v1")] == ["VOICE_UNAVAILABLE"]
        assert refused(api) == ("VOICE_UNAVAILABLE", 4403)
        if kind == "gb10":  # the clone prompts of the revoked voice are gone
            tts = runners.tts
            assert isinstance(tts, TextToSpeech)
            engine = tts._engine
            assert isinstance(engine, QwenTtsEngine) and engine.cached_voices() == []

