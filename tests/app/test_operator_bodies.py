"""SPEC §3's rule for operator bodies: plain dates where a date-time is asked, and every 400
answers ``{"error": {"code", "field", "reason"}}`` naming the member at fault."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient

from tests.conftest import DEMO_SCRIPT
from tests.support.db import migrated_copy
from tests.support.voices import make_wav
from vocero.app.http.bodies import BodyError, instant
from vocero.app.server import create_app
from vocero.app.settings import Settings

ADMIN = {"authorization": "Bearer op-admin-token"}
VOICE = {
    "voice_id": "corp-en", "tenant": "acme", "owner": "Brand team", "purpose": "Agent voice",
    "languages": ["en"], "usage_until": "2099-01-01T00:00:00Z", "consent_ref": "consent-1",
}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One server for the module: every case below is refused, so none changes its state
    (the two that create voices use ids of their own)."""
    tmp = tmp_path_factory.mktemp("bodies")
    script = tmp / "script.yaml"
    script.write_text(yaml.safe_dump(DEMO_SCRIPT))
    db = migrated_copy(tmp / "vocero.db", driver="sqlite+aiosqlite")
    settings = Settings(runners="sim", db=db, sim_script=str(script),
                        operator_token="op-admin-token")
    with TestClient(create_app(settings)) as client:
        assert client.post("/v1/voices", json=VOICE, headers=ADMIN).status_code == 201
        yield client


@pytest.mark.process
def test_a_plain_date_is_the_end_of_that_day_in_utc(api: TestClient) -> None:
    body = {**VOICE, "voice_id": "dated-1", "usage_until": "2099-12-31"}
    created = api.post("/v1/voices", json=body, headers=ADMIN)
    assert created.status_code == 201, created.text
    assert created.json()["usage_until"] == "2099-12-31T23:59:59.999999Z"
    offset = {**VOICE, "voice_id": "dated-2", "usage_until": "2099-12-31T23:00:00-02:00"}
    assert api.post("/v1/voices", json=offset, headers=ADMIN).json()["usage_until"] == (
        "2100-01-01T01:00:00Z"
    )


@pytest.mark.process
def test_the_spec_example_date_is_accepted(api: TestClient) -> None:
    """``usage_until: 2027-12-31`` (the issue's example) was a bare 400 before."""
    body = {**VOICE, "voice_id": "dated-3", "usage_until": "2027-12-31"}
    created = api.post("/v1/voices", json=body, headers=ADMIN)
    assert created.status_code == 201, created.text
    assert created.json()["usage_until"].startswith("2027-12-31T23:59:59")


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("2027-12-31", datetime(2027, 12, 31, 23, 59, 59, 999999, UTC)),
        ("2027-12-31T10:00:00Z", datetime(2027, 12, 31, 10, tzinfo=UTC)),
        ("2027-12-31T10:00:00.5+02:00", datetime(2027, 12, 31, 8, 0, 0, 500000, UTC)),
        ("2027-12-31T10:00:00.123456789Z", datetime(2027, 12, 31, 10, 0, 0, 123456, UTC)),
    ],
)
def test_instants(value: str, parsed: datetime) -> None:
    assert instant(value, "f") == parsed


@pytest.mark.parametrize(
    "value", ["2027-12-31T10:00:00", "2027-02-30", "31/12/2027", "2027-12-31T25:00:00Z", ""]
)
def test_not_instants(value: str) -> None:
    with pytest.raises(BodyError) as refused:
        instant(value, "usage_until")
    assert (refused.value.code, refused.value.field) == ("invalid_body", "usage_until")


def _wav_body() -> dict[str, str]:
    return {"ref_audio": base64.b64encode(make_wav(1.5)).decode(), "ref_text": "Hello there."}


BAD_REQUESTS: list[tuple[str, str, Any, str, str]] = [
    ("POST", "/v1/voices", {**VOICE, "usage_until": "31/12/2027"}, "invalid_body", "usage_until"),
    ("POST", "/v1/voices", {**VOICE, "usage_until": "2099-01-01T00:00:00"}, "invalid_body",
     "usage_until"),
    ("POST", "/v1/voices", {**VOICE, "usage_until": "2001-01-01"}, "invalid_usage_until",
     "usage_until"),
    ("POST", "/v1/voices", {k: v for k, v in VOICE.items() if k != "consent_ref"},
     "invalid_body", "consent_ref"),
    ("POST", "/v1/voices", {**VOICE, "languages": [7]}, "invalid_body", "languages[0]"),
    ("POST", "/v1/voices", {**VOICE, "colour": "red"}, "invalid_body", "colour"),
    ("POST", "/v1/voices", b"{", "invalid_json", ""),
    ("POST", "/v1/voices", [], "invalid_body", ""),
    ("POST", "/v1/voices/corp-en/versions", {"ref_audio": "%%", "ref_text": "Hi."},
     "invalid_wav", "ref_audio"),
    ("POST", "/v1/voices/corp-en/versions", {**_wav_body(), "ref_text": ""}, "invalid_body",
     "ref_text"),
    ("POST", "/v1/voices/corp-en/revoke", {}, "invalid_body", "reason"),
    ("POST", "/v1/tools/orders/get_order_status/approvals", {}, "invalid_body",
     "definition_hash"),
    ("POST", "/v1/tools/orders/get_order_status/approvals", b"nope", "invalid_json", ""),
    ("POST", "/v1/followups/fu_x/approve", {"note": 5}, "invalid_body", "note"),
    ("POST", "/v1/followups/fu_x/approve", {"note": "x" * 501}, "invalid_body", "note"),
    ("POST", "/v1/followups/fu_x/approve", {"by": "me"}, "invalid_body", "by"),
    ("GET", "/v1/audit?limit=lots", None, "invalid_query", "limit"),
    ("GET", "/v1/units", None, "invalid_query", "session_id"),
    ("GET", "/v1/followups?status=someday", None, "invalid_query", "status"),
]


@pytest.mark.process
@pytest.mark.parametrize(("method", "path", "body", "code", "field"), BAD_REQUESTS)
def test_every_400_names_its_code_field_and_reason(
    api: TestClient, method: str, path: str, body: Any, code: str, field: str
) -> None:
    kwargs: dict[str, Any] = {"content": body} if isinstance(body, bytes) else {"json": body}
    answer = api.request(method, path, headers=ADMIN, **(kwargs if body is not None else {}))
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert set(error) == {"code", "field", "reason"}
    assert (error["code"], error["field"]) == (code, field)
    assert error["reason"]
    if isinstance(body, dict) and "usage_until" in body:
        assert body["usage_until"] not in error["reason"], "a reason never quotes the value"


INTEGER_QUERIES = [("/v1/sessions", "limit"), ("/v1/audit", "limit"), ("/v1/audit", "after_seq"),
                   ("/v1/followups", "limit"), ("/v1/findings", "limit"),
                   ("/v1/operations", "limit")]
"""Every integer query parameter of the operator API (``grep -n query_params vocero/app``)."""
NOT_INTEGERS = {"superscript": "\u00b2", "5000-digits": "9" * 5000, "full-width": "\uff11",
                "arabic-indic": "\u0663", "negative": "-1", "plus": "+1", "blank-before": " 1",
                "blank-after": "1 ", "exponent": "1e3", "hex": "0x10", "decimal": "1.0",
                "past-64-bits": "99999999999999999999", "word": "lots"}
"""Superscript two, 5,000 digits, full-width and Arabic-Indic digits (``str.isdigit`` accepts
them, ``int`` refuses or overflows), signs, blanks, other notations, past 64 bits."""


@pytest.mark.process
@pytest.mark.parametrize(("path", "name"), INTEGER_QUERIES)
@pytest.mark.parametrize("value", list(NOT_INTEGERS.values()), ids=list(NOT_INTEGERS))
def test_every_integer_query_parameter_answers_400_for_a_non_integer(
    api: TestClient, path: str, name: str, value: str
) -> None:
    answer = api.get(path, params={name: value}, headers=ADMIN)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["field"]) == ("invalid_query", name)
    assert error["reason"].startswith("must be an integer from")  # never the value itself


@pytest.mark.process
@pytest.mark.parametrize(("path", "name"), INTEGER_QUERIES)
def test_integer_query_parameters_have_bounds(api: TestClient, path: str, name: str) -> None:
    outside = ("0", "100001") if name == "limit" else (str(2**63),)
    for value in outside:
        answer = api.get(path, params={name: value}, headers=ADMIN)
        assert (answer.status_code, answer.json()["error"]["field"]) == (400, name), value
    assert api.get(path, params={name: "1"}, headers=ADMIN).status_code == 200


@pytest.mark.process
@pytest.mark.parametrize("path", ["/v1/followups", "/v1/findings", "/v1/operations"])
@pytest.mark.parametrize("cursor", ["nope", "x" * 5000, "\u00b2\u00b2\u00b2\u00b2", "eDp5"])
def test_a_cursor_no_page_gave_answers_400(api: TestClient, path: str, cursor: str) -> None:
    answer = api.get(path, params={"cursor": cursor}, headers=ADMIN)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "invalid_query"
    assert answer.json()["error"]["field"] == "cursor"


@pytest.mark.process
def test_a_refused_body_changes_nothing(api: TestClient) -> None:
    bad = {**VOICE, "voice_id": "never", "usage_until": "soon"}
    assert api.post("/v1/voices", json=bad, headers=ADMIN).status_code == 400
    assert api.get("/v1/voices/never", headers=ADMIN).status_code == 404
