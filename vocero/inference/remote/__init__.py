"""Runners that call a serving engine over the OpenAI HTTP API, one per stage.

``--llm-url`` (chat completions, streaming, ``tools``), ``--stt-url``
(``/v1/audio/transcriptions``), ``--tts-url`` (``/v1/audio/speech``): docs/deployment.md.
A stage given an endpoint replaces that stage's in-process runner, which is then never warmed,
so its model is never loaded (docs/deployment.md, docs/adr/0021-remote-inference.md).
"""

from __future__ import annotations

import dataclasses

from vocero.contracts.errors import ConfigError
from vocero.inference.remote.endpoint import Endpoint, EndpointError
from vocero.inference.remote.llm import RemoteLlm
from vocero.inference.remote.routed import RemoteRoutedLlm
from vocero.inference.remote.stt import RemoteStt
from vocero.inference.remote.tts import RemoteTts
from vocero.inference.runner_set import RunnerSet
from vocero.inference.toolkit.llm import RoutedLlm

__all__ = [
    "Endpoint", "EndpointError", "RemoteLlm", "RemoteRoutedLlm", "RemoteStt", "RemoteTts",
    "with_endpoints",
]


def with_endpoints(
    runners: RunnerSet,
    *,
    llm: Endpoint | None = None,
    stt: Endpoint | None = None,
    tts: Endpoint | None = None,
    tts_voice: str = "",
    llm_mode: str = "agent",
) -> RunnerSet:
    """``runners`` with each stage that has an endpoint served by it instead. ``llm_mode``
    ``routed`` keeps the CPU runners' dialogue manager and serves only its model from ``llm``
    (:mod:`.routed`); ``agent`` gives the endpoint's model the whole job (:class:`RemoteLlm`)."""
    changes: dict[str, object] = {}
    if llm is not None and llm_mode == "routed":
        if not isinstance(runners.llm, RoutedLlm):
            raise ConfigError(
                "flags", "--llm-mode", f"routed needs --runners cpu (got {runners.kind})"
            )
        changes["llm"] = RemoteRoutedLlm(runners.llm, llm)
    elif llm is not None:
        changes["llm"] = RemoteLlm(llm)
    if stt is not None:
        changes["stt"] = RemoteStt(stt)
    if tts is not None:
        changes["tts"] = RemoteTts(tts, voice=tts_voice)
    if not changes:
        return runners
    return dataclasses.replace(runners, **changes)  # type: ignore[arg-type]
