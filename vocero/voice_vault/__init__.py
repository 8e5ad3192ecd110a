"""Voice vault: governed corporate voices, versions, four-eyes approval and revocation.

The plane's surface: :class:`VoiceVault`, :func:`load_key`, the records it returns and
:class:`VaultError` with its stable codes. It imports only contracts, the store and observability.
"""

from vocero.voice_vault.approval import APPROVER_ROLES, CONTROL_ROLES, OWNER_ROLE
from vocero.voice_vault.crypto import KEY_ENV, KEY_FILE_ENV, VaultCipher, VaultKey, load_key
from vocero.voice_vault.errors import VaultCode, VaultError, VaultKeyError
from vocero.voice_vault.records import ApprovalRecord, VersionRecord, VoiceRecord
from vocero.voice_vault.vault import VoiceVault

__all__ = [
    "APPROVER_ROLES",
    "CONTROL_ROLES",
    "KEY_ENV",
    "KEY_FILE_ENV",
    "OWNER_ROLE",
    "ApprovalRecord",
    "VaultCipher",
    "VaultCode",
    "VaultError",
    "VaultKey",
    "VaultKeyError",
    "VersionRecord",
    "VoiceRecord",
    "VoiceVault",
    "load_key",
]
