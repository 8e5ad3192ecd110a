"""The envelope rules as a sans-IO object: frames in, verdicts out, no socket and no clock.

The same rules are exercised end to end over a real connection in ``test_envelope_rules.py``;
here each one is asserted directly on :class:`EnvelopeRules`, fast, with the time passed in.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from tests.support.wsclient import envelope
from vocero.contracts import events as ev
from vocero.contracts.errors import CloseCode, ErrorCode
from vocero.relay.envelope import Accepted, EnvelopeRules, Rejected, utf8_size_over
from vocero.relay.limits import Limits

SID = "ses_test"


def connected(limits: Limits | None = None) -> EnvelopeRules:
    """Rules past a valid connect, with the session id assigned."""
    rules = EnvelopeRules(limits or Limits())
    assert rules.first(envelope("session.connect.v1", {"token": "t"}, sequence=1)) is not None
    rules.session_id = SID
    return rules


def text(rules: EnvelopeRules, words: str = "hi", *, session_id: str = SID) -> str:
    """A text input carrying the next sequence the rules expect."""
    seq = rules.in_sequence + 1
    return envelope("input.text.v1", {"text": words}, sequence=seq, session_id=session_id)


def audio(rules: EnvelopeRules, pcm: bytes, sample_rate: int = 16000) -> str:
    payload = {"audio": base64.b64encode(pcm).decode(), "sample_rate": sample_rate}
    seq = rules.in_sequence + 1
    return envelope("audio.input.delta.v1", payload, sequence=seq, session_id=SID)


def code_of(verdict: Accepted | Rejected) -> ErrorCode:
    assert isinstance(verdict, Rejected), verdict
    return verdict.code


# ---------------------------------------------------------------------------- the first frame


def test_a_connect_with_sequence_1_opens_the_connection() -> None:
    rules = EnvelopeRules(Limits())
    connect = rules.first(
        envelope("session.connect.v1", {"token": "tok", "resume_token": "r"}, sequence=1)
    )
    assert connect is not None and connect.token == "tok" and connect.resume_token == "r"
    assert rules.in_sequence == 1


def test_anything_else_first_is_no_connect() -> None:
    for first in [
        None,  # a binary frame, or nothing within the connect timeout
        "{not json",
        envelope("input.text.v1", {"text": "hi"}, sequence=1),
        envelope("session.connect.v1", {"token": "t"}, sequence=2),
    ]:
        rules = EnvelopeRules(Limits())
        assert rules.first(first) is None
        assert rules.in_sequence == 0


# -------------------------------------------------------------------------- later frames


def test_a_valid_frame_is_accepted_with_its_event() -> None:
    rules = connected()
    verdict = rules.judge(text(rules, "hello"), now=0.0)
    assert isinstance(verdict, Accepted)
    assert isinstance(verdict.event, ev.InputTextV1)
    assert verdict.event.data.payload.text == "hello"
    assert rules.in_sequence == 2


def test_each_broken_rule_has_its_stable_code() -> None:
    def at(name: str, payload: dict[str, object], *, skip: int = 0, session_id: str = SID
           ) -> Callable[[int], str]:
        return lambda seq: envelope(name, payload, sequence=seq + skip, session_id=session_id)

    cases: list[tuple[Callable[[int], str | None], ErrorCode]] = [
        (lambda _: None, ErrorCode.MALFORMED_EVENT),
        (lambda _: "garbage", ErrorCode.MALFORMED_EVENT),
        (lambda _: "[1, 2]", ErrorCode.MALFORMED_EVENT),
        (at("made.up.v1", {}), ErrorCode.UNKNOWN_EVENT),
        (at("error.v1", {"code": "x"}), ErrorCode.UNKNOWN_EVENT),
        (at("input.text.v1", {"txt": "x"}), ErrorCode.INVALID_PAYLOAD),
        (at("input.text.v1", {"text": "x"}, skip=5), ErrorCode.SEQUENCE_VIOLATION),
        (at("input.text.v1", {"text": "x"}, session_id="ses_other"), ErrorCode.SESSION_MISMATCH),
        (at("session.connect.v1", {"token": "t"}), ErrorCode.INVALID_STATE),
    ]  # fmt: skip
    rules = connected()
    for frame, code in cases:
        sent = frame(rules.in_sequence + 1)
        assert code_of(rules.judge(sent, now=0.0)) == code, sent


def test_the_expected_sequence_counts_rejected_frames_too() -> None:
    rules = connected()
    assert isinstance(rules.judge("garbage", now=0.0), Rejected)  # frame 2
    verdict = rules.judge(envelope("input.text.v1", {"text": "x"}, sequence=3, session_id=SID), 0)
    assert isinstance(verdict, Accepted)


def test_audio_must_be_16khz_even_and_at_most_200ms() -> None:
    rules = connected()
    assert isinstance(rules.judge(audio(rules, b"\x00\x00" * 3200), now=0.0), Accepted)
    assert code_of(rules.judge(audio(rules, b"\x00\x00", 8000), 0.0)) == ErrorCode.INVALID_PAYLOAD
    assert code_of(rules.judge(audio(rules, b"\x00" * 3), 0.0)) == ErrorCode.INVALID_PAYLOAD
    too_long = b"\x00\x00" * 3201  # 200.06 ms
    assert code_of(rules.judge(audio(rules, too_long), 0.0)) == ErrorCode.FRAME_TOO_LARGE


def test_a_frame_over_the_byte_limit_is_too_large_before_it_is_decoded() -> None:
    rules = connected(Limits(max_frame_bytes=100))
    assert code_of(rules.judge("x" * 101, now=0.0)) == ErrorCode.FRAME_TOO_LARGE
    # the limit is on UTF-8 bytes: 40 characters of 3 bytes each are 120 bytes
    assert code_of(rules.judge("€" * 40, now=0.0)) == ErrorCode.FRAME_TOO_LARGE


def test_the_rate_window_slides_over_one_second() -> None:
    rules = connected(Limits(max_frames_per_s=3))
    assert all(isinstance(rules.judge(text(rules), now=0.1 * i), Accepted) for i in range(3))
    assert code_of(rules.judge(text(rules), now=0.5)) == ErrorCode.RATE_LIMITED
    assert isinstance(rules.judge(text(rules), now=1.0), Accepted)  # the first one left


def test_consecutive_rejections_close_1008_and_an_accepted_frame_forgives() -> None:
    rules = connected(Limits(strikes_to_close=3))
    assert rules.judge("garbage", now=0.0) == Rejected(ErrorCode.MALFORMED_EVENT, None)
    assert rules.judge("garbage", now=0.0) == Rejected(ErrorCode.MALFORMED_EVENT, None)
    assert isinstance(rules.judge(text(rules), now=0.0), Accepted)
    assert rules.judge("garbage", now=0.0) == Rejected(ErrorCode.MALFORMED_EVENT, None)
    assert rules.judge("garbage", now=0.0) == Rejected(ErrorCode.MALFORMED_EVENT, None)
    assert rules.judge("garbage", now=0.0) == Rejected(
        ErrorCode.MALFORMED_EVENT, CloseCode.POLICY_VIOLATION
    )


def test_the_last_rejection_too_large_closes_1009() -> None:
    rules = connected(Limits(strikes_to_close=2, max_frame_bytes=100))
    rules.judge("garbage", now=0.0)
    verdict = rules.judge("x" * 101, now=0.0)
    assert verdict == Rejected(ErrorCode.FRAME_TOO_LARGE, CloseCode.MESSAGE_TOO_BIG)


@given(st.lists(st.one_of(st.none(), st.text(max_size=40), st.binary(max_size=40).map(
    lambda b: b.decode("latin-1"))), max_size=30))  # fmt: skip
def test_any_frames_get_a_verdict_and_advance_the_sequence(frames: list[str | None]) -> None:
    """No input makes the rules raise; every frame counts; the close comes at the tenth strike
    in a row and never before."""
    rules = connected()
    in_a_row = 0
    for i, frame in enumerate(frames, start=1):
        verdict = rules.judge(frame, now=float(i))
        assert rules.in_sequence == 1 + i
        in_a_row = in_a_row + 1 if isinstance(verdict, Rejected) else 0
        if isinstance(verdict, Rejected):
            assert (verdict.close is not None) == (in_a_row >= 10)


@given(st.text(max_size=60), st.integers(min_value=0, max_value=200))
def test_the_size_check_agrees_with_encoding(frame: str, limit: int) -> None:
    assert utf8_size_over(frame, limit) == (len(frame.encode()) > limit)
