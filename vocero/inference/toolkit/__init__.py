"""The runner toolkit every backend builds on: runner shells (admission, health, warm-up), the
LLM runner that puts the dialogue manager behind the LLM port (:mod:`.llm`), the engines more
than one backend loads (llama.cpp, Silero VAD, Smart Turn, the words model), audio conversion and
queue settings. It knows no backend (ADR-0039)."""
