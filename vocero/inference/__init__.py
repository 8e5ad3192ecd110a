"""Inference plane: VAD, STT, LLM and TTS runners behind the ports of ``vocero.contracts.ports``."""
