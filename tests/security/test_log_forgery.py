"""Issue 26, finding 5: a newline in the OAuth callback's ``iss`` printed a forged record of its
own in the console log (``… [info] operator.login name=admin FORGED``), through the SDK's error
message quoting it. The callback now refuses such a value (tests/mcp/test_operator_consent.py);
here, whatever reaches a log line, in a field, a nested value, an exception's message or a
standard-library record, stays on its record's line in both formats."""

from __future__ import annotations

import json
import logging
import re

import pytest
import structlog
from mcp.client.auth.exceptions import OAuthFlowError

from tests.security.support import captured_logs

FORGED = "1999-01-01T00:00:00Z [info     ] operator.login name=admin FORGED"
TRICKS = ["\n", "\r\n", "\r", "\x1b[2K\r", "\u2028", "\x85", "\u202e"]
"""Line breaks, a terminal's erase-line, Unicode's line separator, NEL, a bidi override."""
RECORD = re.compile(r"^\d{4}-\d\d-\d\dT")


def _emit_every_way(trick: str) -> int:
    """Log the forged text after ``trick`` in every way a value reaches a record; how many
    records that makes."""
    text = f"https://login.example.com{trick}{FORGED}"
    log = structlog.get_logger("test")
    log.info("mcp.oauth_callback", iss=text, nested={"iss": [text]}, **{f"k{trick}": "v"})
    try:
        raise OAuthFlowError(f"Authorization response iss mismatch: {text} != https://x")
    except OAuthFlowError:
        log.exception("mcp.oauth_consent_failed")
    sdk = logging.getLogger("mcp.client.streamable_http")
    sdk.warning("GET stream not opened: %s", text)
    try:
        raise ValueError(text)
    except ValueError:
        sdk.exception("Error in post_writer")
    return 4


@pytest.mark.parametrize("trick", TRICKS, ids=[repr(t) for t in TRICKS])
def test_no_value_starts_a_line_of_its_own_in_the_console_log(trick: str) -> None:
    with captured_logs("console") as out:
        records = _emit_every_way(trick)
    text = out.getvalue()
    lines = text.split("\n")
    assert len([line for line in lines if RECORD.match(line)]) == records
    assert not [line for line in lines if line.startswith(FORGED[:20])]
    assert text.count(FORGED) == 5  # each value, escaped, on its record's line or message
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u202e]", text)
    assert "Traceback (most recent call last):" in text, "tracebacks still render"


@pytest.mark.parametrize("trick", TRICKS, ids=[repr(t) for t in TRICKS])
def test_no_decoded_json_value_holds_a_control_character(trick: str) -> None:
    with captured_logs("json") as out:
        records = _emit_every_way(trick)
    parsed = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(parsed) == records
    for record in parsed:
        for key, value in _strings(record):
            shown = value if key not in ("exception", "stack") else value.replace("\n", "")
            assert trick not in shown and not re.search("[\x00-\x1f\x7f-\x9f\u2028]", shown)
    escaped = trick.encode("unicode_escape").decode()  # what a reader of the field sees
    assert parsed[0]["iss"] == f"https://login.example.com{escaped}{FORGED}"


def _strings(value: object, key: str = "") -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(key, value)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [(k, k), *_strings(v, k)]]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v, key)]
    return []

