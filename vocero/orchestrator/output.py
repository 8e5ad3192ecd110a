"""The session's output link to the relay: a control lane, a data lane, and audio pacing.

* Control lane (state, finals, created/completed, stop_and_flush, confirmations, tool status,
  errors): FIFO, never dropped and never behind data. Bounded: if a client stops reading long
  enough to fill it, the channel sets :attr:`OutputChannel.overflowed` (never raising into the
  producer, which is the session) and the relay closes the connection (1008); the consumer then
  gets :class:`ControlLaneFull`. Nothing is silently lost on a connection that stays open.
* Data lane (text and audio deltas): bounded; producers wait when it is full (backpressure reaches
  the TTS and the model) until it has drained to half, so a paced stream wakes its producer once
  per half lane rather than once per frame. Frames of a stopped generation are removed at once
  and refused after.
* Partial transcripts: one slot; a newer partial replaces an unsent one (stale partials coalesce).
* Pacing: an audio frame leaves only while at most ``max_lead_ms`` of that generation's audio would
  be unplayed, measured against the client's last ``played_ms`` (or, for clients that cannot
  report playout, against a real-time estimate since the first frame): that accounting is
  :class:`~.playout.Playouts`, the lanes are here.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import anyio

from vocero.contracts.clock import SystemClock
from vocero.contracts.events import ServerEnvelope, ServerPayload
from vocero.contracts.ports import Timers
from vocero.orchestrator.playout import Playout, Playouts


class ControlLaneFull(Exception):
    pass


@dataclass(slots=True)
class OutFrame:
    payload: ServerPayload
    envelope: type[ServerEnvelope] | None = None
    generation_id: str = ""
    audio_ms: float = 0.0
    turn_id: str = ""


class OutputChannel:
    """The lanes of one session's output to the relay, and the waits that pace it."""

    def __init__(
        self,
        *,
        max_lead_ms: int = 400,
        data_capacity: int = 64,
        control_capacity: int = 512,
        playout_acks: bool = False,
        monotonic: Callable[[], float] | None = None,
        clock: Timers | None = None,
        on_after_stop: Callable[[], None] | None = None,
    ) -> None:
        """``on_after_stop``: told of a data frame of a stopped generation that reached the
        sending end (never expected: stopping removes them; the alert on it is in
        deploy/prometheus/vocero-rules.yaml); the frame is dropped, not sent."""
        self._on_after_stop = on_after_stop
        self._data_capacity = data_capacity
        self._low_water = data_capacity // 2
        self._control_capacity = control_capacity
        self._clock: Timers = clock or (SystemClock(monotonic) if monotonic else SystemClock())
        self._monotonic = self._clock.monotonic
        self._playouts = Playouts(self._monotonic, max_lead_ms=max_lead_ms, acks=playout_acks)
        self._control: deque[OutFrame] = deque()
        self._data: deque[OutFrame] = deque()
        self._partial: OutFrame | None = None
        self._stopped: set[str] = set()
        self._changed = anyio.Event()
        self._space = anyio.Event()
        self.dropped = 0
        self.coalesced = 0
        self.overflowed = anyio.Event()
        """Set once the control lane overflowed: the connection must be closed."""

    # ------------------------------------------------------------------------ producers

    def control(self, frame: OutFrame) -> None:
        if len(self._control) >= self._control_capacity:
            self.overflowed.set()  # the relay closes the connection; the producer carries on
            self._wake()
            return
        self._control.append(frame)
        self._wake()

    def partial(self, frame: OutFrame) -> None:
        if self._partial is not None:
            self.coalesced += 1
        self._partial = frame
        self._wake()

    async def data(self, frame: OutFrame) -> bool:
        """Queue a data frame, waiting while the lane is full. False: its generation stopped."""
        while len(self._data) >= self._data_capacity and frame.generation_id not in self._stopped:
            self._space = anyio.Event() if self._space.is_set() else self._space
            await self._space.wait()
        if frame.generation_id in self._stopped:
            self.dropped += 1
            return False
        if frame.audio_ms:
            self.playout_of(frame.generation_id).queued_ms += frame.audio_ms
        self._data.append(frame)
        if len(self._data) == 1:  # behind other frames it changes nothing the consumer waits on
            self._wake()
        return True

    async def room(self, generation_id: str, audio_ms: float, *, grace_s: float) -> bool:
        """Wait until ``audio_ms`` more of the generation (counting what is already queued)
        stays within ``max_lead_ms`` of its playout: audio is handed over only as it may be
        sent, so a decision taken just before handing it over still holds when it leaves.
        False: the generation stopped, or its playout has not moved for ``grace_s`` (the client
        may be gone; the answer must not hang on it)."""
        track = self.playout_of(generation_id)
        track.last_progress = self._monotonic()
        while generation_id not in self._stopped:
            if track.sent_ms + track.queued_ms == 0:
                return True
            excess = track.sent_ms + track.queued_ms + audio_ms - self._playouts.played(track)
            excess -= self._playouts.max_lead_ms
            if excess <= 0:
                return True
            if self._monotonic() - track.last_progress > grace_s:
                return False
            if track.progress.is_set():
                track.progress = anyio.Event()
            wait_s = grace_s if self.playout_acks else min(grace_s, excess / 1000.0)
            with self._clock.move_on_after(wait_s + 0.001):
                await track.progress.wait()
        return False

    def stop_generation(self, generation_id: str) -> int:
        """Refuse and remove every unsent frame of a generation; returns how many were removed."""
        self._stopped.add(generation_id)
        track = self._playouts.get(generation_id)
        if track is not None:
            track.queued_ms = 0.0
            track.progress.set()
        before = len(self._data)
        self._data = deque(f for f in self._data if f.generation_id != generation_id)
        removed = before - len(self._data)
        self.dropped += removed
        self._space.set()
        self._wake()
        return removed

    def is_stopped(self, generation_id: str) -> bool:
        return generation_id in self._stopped

    def forget(self, generation_id: str) -> None:
        """Drop what is kept of a finished generation (its playout, its stop): the session
        forgets generations past its bound, and so does the channel."""
        if not self.has_pending_data(generation_id):
            self._playouts.forget(generation_id)
            self._stopped.discard(generation_id)

    # ------------------------------------------------------------------------ playout

    @property
    def playout_acks(self) -> bool:
        """The client reports playout (said at the handshake, or seen in a report)."""
        return self._playouts.acks

    @playout_acks.setter
    def playout_acks(self, acks: bool) -> None:
        self._playouts.acks = acks

    def playout_of(self, generation_id: str) -> Playout:
        return self._playouts.of(generation_id)

    def report_playout(self, generation_id: str, played_ms: float) -> None:
        if self._playouts.report(generation_id, played_ms):
            self._wake()

    def acknowledged_ms(self, generation_id: str) -> float:
        """Audio of the generation the caller has certainly heard, clamped to what was sent."""
        return self._playouts.acknowledged_ms(generation_id)

    def has_control(self) -> bool:
        return bool(self._control)

    def has_pending_data(self, generation_id: str) -> bool:
        return any(f.generation_id == generation_id for f in self._data)

    # ------------------------------------------------------------------------ consumer

    async def receive(self, until: Callable[[], bool] | None = None) -> OutFrame | None:
        """The next frame to send: control first, then a partial, then paced data.
        Returns None when ``until()`` holds and nothing is ready. Raises
        :class:`ControlLaneFull` once the control lane overflowed."""
        while True:
            if self.overflowed.is_set():
                raise ControlLaneFull
            frame, wait_s = self._pick()
            if frame is not None:
                return frame
            if until is not None and until():
                return None
            if self._changed.is_set():  # a wake-up already acted on by the pick above
                self._changed = anyio.Event()
            if wait_s is None:  # no cancel scope when there is no deadline (the usual case)
                await self._changed.wait()
                continue
            with self._clock.move_on_after(wait_s):
                await self._changed.wait()

    def has_ready(self) -> bool:
        """Whether :meth:`receive` would return a frame now, without waiting; nothing is
        taken."""
        if self._control or self._partial is not None:
            return True
        head = next((f for f in self._data if f.generation_id not in self._stopped), None)
        if head is None:
            return False
        if not head.audio_ms:
            return True
        return self._playouts.pacing_wait(head.generation_id, head.audio_ms) <= 0

    def _pick(self) -> tuple[OutFrame | None, float | None]:
        if self._control:
            return self._control.popleft(), None
        if self._partial is not None:
            frame, self._partial = self._partial, None
            return frame, None
        if not self._data:
            return None, None
        head = self._data[0]
        if head.generation_id in self._stopped:
            self._data.popleft()
            if self._on_after_stop is not None:
                self._on_after_stop()
            return self._pick()
        playouts = self._playouts
        wait_s = playouts.pacing_wait(head.generation_id, head.audio_ms) if head.audio_ms else 0.0
        if wait_s > 0:
            return None, wait_s if not playouts.acks else None
        self._data.popleft()
        if len(self._data) <= self._low_water:
            self._space.set()
        if head.audio_ms:
            playouts.sent(head.generation_id, head.audio_ms)
        elif head.generation_id:
            playouts.of(head.generation_id).moved(self._monotonic())
        return head, None

    async def wait_played(self, generation_id: str, *, grace_s: float) -> bool:
        """Return once everything queued for the generation was sent and played (True).

        Played means reported by the client, or (for a client that cannot report) the audio's
        own duration elapsed since its first frame. Gives up when nothing moves for ``grace_s``
        (False; also when the generation was stopped): the client may be gone, and the session
        must not hang on it.
        """
        track = self.playout_of(generation_id)
        track.last_progress = self._monotonic()
        while generation_id not in self._stopped:
            pending = self.has_pending_data(generation_id)
            if not pending and self._playouts.caught_up(track):
                return True
            track.progress = anyio.Event()
            wait_s = grace_s
            if not self.playout_acks and not pending:
                estimate = self._playouts.estimate(track)
                wait_s = max(0.0, (track.sent_ms - estimate) / 1000.0) + 0.001
            with self._clock.move_on_after(wait_s):
                await track.progress.wait()
            if self._monotonic() - track.last_progress > grace_s:
                return False
        return False

    def wake(self) -> None:
        """Let a waiting consumer re-check its conditions."""
        self._changed.set()

    _wake = wake
