"""Vocero: a local speech-to-speech voice agent that acts only through governed tools."""

__version__ = "0.1.0"
