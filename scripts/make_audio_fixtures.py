"""Regenerate the WAV fixtures under ``fixtures/audio/`` with espeak-ng and sox.

All fixtures are 16 kHz mono PCM16, the realtime input format. ``barge_in.wav`` is the browser
test's fake microphone: a first utterance, a pause long enough for server VAD to end the turn and
for the answer to start playing, then a second utterance that interrupts that answer. Chromium
loops the file, so it ends with silence long enough for the test to finish first.

Usage: python scripts/make_audio_fixtures.py
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

AUDIO_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "audio"
FORMAT = ["-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer"]
TRIM = ["silence", "1", "0.02", "1%", "reverse", "silence", "1", "0.02", "1%", "reverse"]

# (text, seconds of silence before it); then the tail silence.
BARGE_IN = [("hello there", 0.3), ("stop please", 1.5)]
BARGE_IN_TAIL_S = 2.0


def speak(text: str, out: Path) -> None:
    """One trimmed, normalised utterance in the fixture format."""
    raw = out.with_suffix(".raw.wav")
    subprocess.run(["espeak-ng", "-s", "160", "-w", str(raw), text], check=True)
    subprocess.run(["sox", str(raw), *FORMAT, str(out), *TRIM, "norm", "-3"], check=True)


def silence(seconds: float, out: Path) -> None:
    subprocess.run(["sox", "-n", *FORMAT, str(out), "trim", "0", str(seconds)], check=True)


def make_barge_in(work: Path) -> Path:
    parts: list[Path] = []
    for index, (text, pause_s) in enumerate(BARGE_IN):
        parts.append(work / f"pause{index}.wav")
        silence(pause_s, parts[-1])
        parts.append(work / f"utterance{index}.wav")
        speak(text, parts[-1])
    parts.append(work / "tail.wav")
    silence(BARGE_IN_TAIL_S, parts[-1])
    target = AUDIO_DIR / "barge_in.wav"
    subprocess.run(["sox", *map(str, parts), str(target)], check=True)
    return target


def main() -> None:
    AUDIO_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        print(make_barge_in(Path(tmp)))


if __name__ == "__main__":
    main()
