"""Word error rate of the CPU Whisper runner on the same clips heard two ways: at 16 kHz as a
browser sends them, and through the phone leg's audio path (resampled to 8 kHz, G.711 μ-law in
20 ms frames, decoded and resampled back to 16 kHz, as ``vocero/relay/telephony/audio.py`` does
for a call). A measurement helper for issue 43 item 8, not a test and not a benchmark gate.

    python scripts/telephony_wer.py [--limit N] [--kind complete|paused] [--json FILE]

The clips are the turn corpus (``fixtures/turns``, the reference text is what was synthesised),
with its noise, lead-in and tail. Prints one line per clip and the totals; ``--json`` writes them.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np
from rapidfuzz.distance import Levenshtein

from vocero.bench.turn_corpus import load_corpus
from vocero.inference.cpu.settings import CpuSettings, stt_model_path
from vocero.inference.cpu.stt import WhisperEngine
from vocero.relay.telephony.audio import CarrierDecoder, CarrierEncoder

RATE = 16000


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def through_the_phone(pcm16: bytes) -> bytes:
    """16 kHz PCM16 -> 8 kHz μ-law frames -> 16 kHz PCM16, the phone leg's two directions."""
    encoder = CarrierEncoder(source_rate=RATE)
    frames = encoder.encode(pcm16) + encoder.flush()
    decoder = CarrierDecoder(session_rate=RATE)
    return b"".join(decoder.decode(frame) for frame in frames)


def as_float(pcm16: bytes) -> np.ndarray:
    return np.frombuffer(pcm16, dtype="<i2").astype(np.float32) / 32768.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--kind", default="complete", choices=["complete", "paused", ""])
    parser.add_argument("--json", default="")
    args = parser.parse_args(argv)
    settings = CpuSettings.from_env()
    engine = WhisperEngine(stt_model_path(settings), threads=settings.cpu_threads())
    engine.load()
    totals = {"wideband": 0, "phone": 0}
    reference_words = 0
    rows = []
    started = time.monotonic()
    for clip in load_corpus(kind=args.kind, limit=args.limit):
        reference = words(clip.label.text)
        pcm16 = clip.pcm16()
        heard = {
            "wideband": engine.recognise(as_float(pcm16), words=False).text,
            "phone": engine.recognise(as_float(through_the_phone(pcm16)), words=False).text,
        }
        errors = {way: Levenshtein.distance(reference, words(text)) for way, text in heard.items()}
        for way, count in errors.items():
            totals[way] += count
        reference_words += len(reference)
        rows.append({"id": clip.id, "text": clip.label.text, "heard": heard, "errors": errors})
        print(f"{clip.id}: 16k {errors['wideband']} / phone {errors['phone']} errors of "
              f"{len(reference)} words | phone heard: {heard['phone']!r}", flush=True)
    summary = {
        "clips": len(rows),
        "reference_words": reference_words,
        "wer_16k": round(totals["wideband"] / max(reference_words, 1), 4),
        "wer_phone_8k_ulaw": round(totals["phone"] / max(reference_words, 1), 4),
        "seconds": round(time.monotonic() - started, 1),
    }
    print(json.dumps(summary))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "clips": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
