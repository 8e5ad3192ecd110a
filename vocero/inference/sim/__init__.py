"""Deterministic simulators (docs/eval.md "The sim script"): scripted STT, rule-based LLM,
synthetic TTS, energy VAD."""

from vocero.inference.sim.runners import SimLlm, SimStt, SimTts, build_sim_runners
from vocero.inference.sim.script import SimScript, load_script
from vocero.inference.sim.vad import EnergyVad

__all__ = [
    "EnergyVad",
    "SimLlm",
    "SimScript",
    "SimStt",
    "SimTts",
    "build_sim_runners",
    "load_script",
]
