"""The CPU models are pinned by SHA-256 and checked when the runner set is built.

``pins.json`` (committed beside this file) names, for each role (``stt``, ``vad``, ``llm``,
``tts``, ``tts_config``, ``turn``), the package the default model comes from and the SHA-256 of
every file of it (the Whisper model is a directory: each of its files). A model path set through
``VOCERO_*_MODEL`` is checked the same way, against ``VOCERO_MODEL_PINS`` (a JSON file of the same
shape, whose roles replace the committed ones) or else the committed pins: a model nobody pinned
is refused, like a changed one. :func:`check_pins` raises :class:`ModelPinError` naming the file;
``vocero serve`` then refuses to start (a configuration error, exit 2).

A check hashes about 250 MB (well under a second); a file already checked in this process with
the same size and modification time is not hashed again.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vocero.contracts.errors import ConfigError

PINS_FILE = Path(__file__).with_name("pins.json")
_CHUNK = 1 << 20
_verified: dict[tuple[str, int, int], str] = {}


class ModelPinError(ConfigError):
    """A model file is not the one pinned (or not pinned at all)."""


def load_pins(environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    pins: dict[str, Any] = json.loads(PINS_FILE.read_text())
    extra = environ.get("VOCERO_MODEL_PINS", "")
    if extra:
        try:
            pins.update(json.loads(Path(extra).read_text()))
        except (OSError, ValueError) as exc:
            raise ConfigError(extra, "VOCERO_MODEL_PINS", f"unreadable pins: {exc}") from None
    return pins


def check_pins(paths: Mapping[str, str], environ: Mapping[str, str] = os.environ) -> None:
    """Every file of every role's model hashes to its pin; raises :class:`ModelPinError`."""
    pins = load_pins(environ)
    for role, path in paths.items():
        pinned: dict[str, str] = pins.get(role, {}).get("files", {})
        source = pins.get(role, {}).get("source", "")
        root = Path(path)
        files = ({str(f.relative_to(root)): f for f in sorted(root.rglob("*")) if f.is_file()}
                 if root.is_dir() else {root.name: root})
        for name, file in files.items():
            expected = pinned.get(name)
            if expected is None:
                raise ModelPinError(str(file), role, "not pinned (add it to VOCERO_MODEL_PINS)")
            actual = sha256_of(file)
            if actual != expected:
                raise ModelPinError(
                    str(file), role,
                    f"sha256 {actual} does not match the pin {expected}"
                    + (f" ({source})" if source else ""),
                )
        missing = sorted(set(pinned) - set(files)) if root.is_dir() else []
        if missing:
            raise ModelPinError(str(root / missing[0]), role, "a pinned file is missing")


def sha256_of(file: Path) -> str:
    stat = file.stat()
    key = (str(file.resolve()), stat.st_size, stat.st_mtime_ns)
    known = _verified.get(key)
    if known is not None:
        return known
    digest = hashlib.sha256()
    with file.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    _verified[key] = digest.hexdigest()
    return _verified[key]
