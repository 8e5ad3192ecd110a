"""Grounded speech (docs/grounding.md): every sentence Vocero speaks is a spoken unit, planned
from approved wording or checked against its evidence, and admitted at every boundary.

The plane's public surface:

* :class:`UnitPlanner` (one per generation) and :class:`PlannerSettings`: claims, checked model
  wording, read-outs of tool results, application wording -> :class:`PlannedUnit`\\ s.
* :class:`Admission` (one per session): ready / stale / canceled / expired, sans-IO.
* :class:`ClaimCatalog`: a profile's claims by key; :class:`KnowledgeTools`: the
  ``knowledge.search`` built-in and the catalog's loading into the store.
* :func:`read_out` (:mod:`.readout`), spoken forms (:mod:`.forms`), critical values
  (:mod:`.values`), and :func:`unit_entry` / :func:`decided_entry` for the recorder.

``UnitChunker`` (:mod:`.units`) is the sentence chunker the speaker used before planning; it
stays until the speaker plans units.
"""

from vocero.speech.admission import Admission, Decision, Disposition
from vocero.speech.catalog import ClaimCatalog
from vocero.speech.forms import escape_ssml, speech_text, spell_identifier, spoken_date
from vocero.speech.knowledge import KNOWLEDGE, KnowledgeTools
from vocero.speech.model import EvidenceRef, GenerationRef, PlannedUnit, ToolEvidence, UnitKind
from vocero.speech.planner import FALLBACKS, PlannerSettings, UnitPlanner
from vocero.speech.readout import ReadoutContext, read_out
from vocero.speech.records import decided_entry, unit_entry

__all__ = [
    "FALLBACKS",
    "KNOWLEDGE",
    "Admission",
    "ClaimCatalog",
    "Decision",
    "Disposition",
    "EvidenceRef",
    "GenerationRef",
    "KnowledgeTools",
    "PlannedUnit",
    "PlannerSettings",
    "ReadoutContext",
    "ToolEvidence",
    "UnitKind",
    "UnitPlanner",
    "decided_entry",
    "escape_ssml",
    "read_out",
    "speech_text",
    "spell_identifier",
    "spoken_date",
    "unit_entry",
]
