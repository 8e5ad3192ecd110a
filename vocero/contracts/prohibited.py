"""A profile's prohibited tools as a dialogue manager may learn from them (issue 42).

A ``prohibited`` tool is never offered to the model and never callable (the gateway and the
gate refuse it), but the profile says by listing it that callers ask for it and that the agent
must refuse. :func:`prohibited_tools` gives each as a :class:`ToolDefinition` that is material
only: the profile's name, its description (else the server tool's name in words:
``adjust_dose`` -> "Adjust dose."), its examples, no schema. The orchestrator sends them with
every model request (``LlmRequest.refused``) and ``vocero bench dialogue`` fits the intent model
on the same list, so the bench measures what the agent does.
"""

from __future__ import annotations

import re

from vocero.contracts.domain import AgentProfile, ToolDefinition

_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_SEPARATORS = re.compile(r"[\W_]+")


def prohibited_tools(profile: AgentProfile) -> list[ToolDefinition]:
    """The profile's ``prohibited`` tools, in profile order, as material (see the module)."""
    return [
        ToolDefinition(
            name=spec.name,
            description=spec.description or _said(spec.resolves_to),
            input_schema={},
            examples=list(spec.examples),
        )
        for spec in profile.tools
        if spec.action_class == "prohibited"
    ]


def _said(name: str) -> str:
    words = _SEPARATORS.sub(" ", _CAMEL.sub(" ", name)).strip().lower()
    return f"{words.capitalize()}." if words else ""
