"""A profile as it was read: its file and claim catalog texts, and their content hash.

The store keeps these snapshots as profile revisions (vocero/store/profiles.py), so a profile
rolled back is loaded again from exactly the text it had, with the same checks as a file
(:func:`~vocero.identity.profiles.load_profile`), whatever the directory holds now.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vocero.contracts.domain import AgentProfile
from vocero.contracts.errors import ConfigError
from vocero.identity.config_files import ROOT, parse_yaml, read_text
from vocero.identity.profiles import load_profile


@dataclass(frozen=True, slots=True)
class Snapshot:
    profile: AgentProfile
    content_hash: str
    data: dict[str, Any]
    """``{"file": path, "documents": {path: text}}``: what the store keeps."""


def read_snapshot(file: Path) -> Snapshot:
    """Load one profile file and record every text it was built from."""
    documents: dict[str, str] = {}

    def reader(path: Path) -> Any:
        text = read_text(path)
        documents[str(path)] = text
        return parse_yaml(path, text)

    profile = load_profile(file, reader)
    data = {"file": str(file), "documents": documents}
    return Snapshot(profile, content_hash(documents), data)


def from_snapshot(data: dict[str, Any]) -> AgentProfile:
    """The profile a stored snapshot describes, checked as when it was first loaded."""
    documents: dict[str, str] = data["documents"]

    def reader(path: Path) -> Any:
        text = documents.get(str(path))
        if text is None:
            raise ConfigError(str(path), ROOT, "not part of the stored profile revision")
        return parse_yaml(path, text)

    return load_profile(Path(data["file"]), reader)


def content_hash(documents: dict[str, str]) -> str:
    """sha256 of the texts in the order they were read (paths left out: moving a directory
    is not an edit)."""
    encoded = json.dumps(list(documents.values()), ensure_ascii=False).encode()
    return hashlib.sha256(encoded).hexdigest()
