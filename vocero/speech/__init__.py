"""Spoken units: turning model text into units the caller can follow and the TTS can stream."""
