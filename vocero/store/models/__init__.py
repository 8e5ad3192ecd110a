"""Every table of the durable store. ``metadata`` is what Alembic migrations must match."""

from vocero.store.models.actions import (
    ConfirmationRow,
    ConfirmationStatus,
    EvidenceStatus,
    EvidenceStepRow,
    OperationRow,
    OperationStatus,
    OutboxRow,
    ProposalRevisionRow,
    ProposalRow,
)
from vocero.store.models.audit import DEFAULT_CHAIN, AuditChainHeadRow, AuditEventRow
from vocero.store.models.base import NAMING_CONVENTION, Base, UtcDateTime
from vocero.store.models.conversation import (
    GenerationRow,
    GenerationStatus,
    SessionRow,
    TurnRow,
    TurnSource,
)
from vocero.store.models.followups import FindingRow, FollowupAttemptRow, FollowupRow
from vocero.store.models.knowledge import (
    CLAIMS_FTS,
    ApprovedClaimRow,
    ClaimEvidenceRow,
    ClaimStatus,
    EvidenceSourceRow,
    is_search_index,
    schema_compared,
)
from vocero.store.models.leases import NODE_ENDINGS, LeaseRow, NodeRow
from vocero.store.models.profiles import ProfileHeadRow, ProfileRevisionRow
from vocero.store.models.tools import (
    McpOAuthConsentRow,
    McpOAuthTokenRow,
    ToolPinRow,
    ToolPinStatus,
)
from vocero.store.models.units import (
    UNIT_DISPOSITIONS,
    UNIT_KINDS,
    SpokenUnitRow,
    UnitAudioRow,
    UnitDisposition,
)
from vocero.store.models.voices import (
    VoiceApprovalRow,
    VoiceProfileRow,
    VoiceVersionRow,
    VoiceVersionStatus,
)

metadata = Base.metadata

__all__ = [
    "CLAIMS_FTS",
    "DEFAULT_CHAIN",
    "NAMING_CONVENTION",
    "NODE_ENDINGS",
    "UNIT_DISPOSITIONS",
    "UNIT_KINDS",
    "ApprovedClaimRow",
    "AuditChainHeadRow",
    "AuditEventRow",
    "Base",
    "ClaimEvidenceRow",
    "ClaimStatus",
    "ConfirmationRow",
    "ConfirmationStatus",
    "EvidenceSourceRow",
    "EvidenceStatus",
    "EvidenceStepRow",
    "FindingRow",
    "FollowupAttemptRow",
    "FollowupRow",
    "GenerationRow",
    "GenerationStatus",
    "LeaseRow",
    "McpOAuthConsentRow",
    "McpOAuthTokenRow",
    "NodeRow",
    "OperationRow",
    "OperationStatus",
    "OutboxRow",
    "ProfileHeadRow",
    "ProfileRevisionRow",
    "ProposalRevisionRow",
    "ProposalRow",
    "SessionRow",
    "SpokenUnitRow",
    "ToolPinRow",
    "ToolPinStatus",
    "TurnRow",
    "TurnSource",
    "UnitAudioRow",
    "UnitDisposition",
    "UtcDateTime",
    "VoiceApprovalRow",
    "VoiceProfileRow",
    "VoiceVersionRow",
    "VoiceVersionStatus",
    "is_search_index",
    "metadata",
    "schema_compared",
]
