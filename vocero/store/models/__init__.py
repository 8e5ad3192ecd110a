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
from vocero.store.models.followups import FollowupRow
from vocero.store.models.knowledge import ApprovedClaimRow, EvidenceSourceRow
from vocero.store.models.tools import ToolPinRow, ToolPinStatus
from vocero.store.models.voices import (
    VoiceApprovalRow,
    VoiceProfileRow,
    VoiceVersionRow,
    VoiceVersionStatus,
)

metadata = Base.metadata

__all__ = [
    "DEFAULT_CHAIN",
    "NAMING_CONVENTION",
    "ApprovedClaimRow",
    "AuditChainHeadRow",
    "AuditEventRow",
    "Base",
    "ConfirmationRow",
    "ConfirmationStatus",
    "EvidenceSourceRow",
    "EvidenceStatus",
    "EvidenceStepRow",
    "FollowupRow",
    "GenerationRow",
    "GenerationStatus",
    "OperationRow",
    "OperationStatus",
    "OutboxRow",
    "ProposalRevisionRow",
    "ProposalRow",
    "SessionRow",
    "ToolPinRow",
    "ToolPinStatus",
    "TurnRow",
    "TurnSource",
    "UtcDateTime",
    "VoiceApprovalRow",
    "VoiceProfileRow",
    "VoiceVersionRow",
    "VoiceVersionStatus",
    "metadata",
]
