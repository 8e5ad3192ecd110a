// The Vocero demo client: wires the page, the realtime session and the audio worklets together.
//
// Test hook, window.vocero: events [{type, payload, t}] received (audio bytes left out, t in ms
// since page load); sent [{type, payload, t}] (audio input frames are only counted, in
// sentAudioFrames); playedMs {generationId: ms actually played}. Types lack the "vocero." prefix.

import { Microphone, Player, fromBase64, openAudioContext, toBase64 } from "./audio.js";
import { Session } from "./session.js";
import * as view from "./view.js";

const HOOK_LIMIT = 5000;
const HINT_RMS = 0.02;
const HINT_FRAMES = 3; // 60 ms of 20 ms frames
const CLOSE_GRACE_MS = 2000;

const hook = { events: [], sent: [], sentAudioFrames: 0, playedMs: {} };
window.vocero = hook;

function record(list, type, payload) {
  const { audio, ...rest } = payload;
  list.push({ type, payload: rest, t: Math.round(performance.now()) });
  if (list.length > HOOK_LIMIT) list.shift();
}

const $ = (id) => document.getElementById(id);

class Call {
  constructor(token, turnMode) {
    this.token = token;
    this.turnMode = turnMode;
    this.outputRate = 16000;
    this.configurations = 0;
    this.state = "CONNECTING";
    this.stopped = new Set(); // generations flushed by the server: their late audio is dropped
    this.talking = false; // push-to-talk button held
    this.hintRun = 0;
    this.hinted = false;
    this.closed = false;
  }

  async start() {
    this.context = await openAudioContext();
    this.player = new Player(this.context, (progress) => this.onPlayout(progress));
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    this.session = new Session(`${scheme}://${location.host}/v1/realtime`, {
      onFrame: (name, payload) => this.onFrame(name, payload),
      onClose: (event) => this.onClose(event),
    });
    await this.session.opened;
    this.send("session.connect.v1", { token: this.token });
    try {
      this.mic = await Microphone.open(this.context, (pcm, rms) => this.onMicFrame(pcm, rms));
    } catch (error) {
      if (!this.closed) view.showNote(`No microphone (${error.name}); typing still works.`);
    }
    if (this.closed) this.mic?.close(); // the server hung up while the microphone was opening
  }

  send(name, payload = {}) {
    if (!this.session?.send(name, payload)) return;
    if (name === "audio.input.delta.v1") hook.sentAudioFrames += 1;
    else record(hook.sent, name, payload);
  }

  get ready() {
    return this.configurations >= 2; // our update_requested has been applied
  }

  onFrame(name, payload) {
    record(hook.events, name, payload);
    const handler = HANDLERS[name];
    if (handler) handler.call(this, payload);
  }

  onPlayout({ generationId, playedMs, bufferedMs }) {
    hook.playedMs[generationId] = playedMs;
    if (this.stopped.has(generationId)) return;
    this.send("output.playout_progress.v1", {
      generation_id: generationId,
      played_ms: playedMs,
      buffered_ms: bufferedMs,
    });
  }

  onMicFrame(pcm, rms) {
    if (!this.ready) return;
    this.maybeHintSpeech(rms);
    if (this.turnMode === "push_to_talk" && !this.talking) return;
    this.send("audio.input.delta.v1", { audio: toBase64(pcm), sample_rate: 16000 });
  }

  // Optional client-side barge-in hint: loud input for HINT_FRAMES while the agent speaks.
  maybeHintSpeech(rms) {
    if (!$("speech-hint").checked || this.state !== "SPEAKING" || this.hinted) return;
    this.hintRun = rms >= HINT_RMS ? this.hintRun + 1 : 0;
    if (this.hintRun < HINT_FRAMES) return;
    this.hinted = true;
    this.send("input.speech_started.v1");
  }

  pressTalk(down) {
    if (down === this.talking) return;
    this.talking = down;
    if (!down && this.ready) this.send("audio.input.commit.v1");
  }

  close() {
    this.send("session.close.v1");
    setTimeout(() => this.session?.close(), CLOSE_GRACE_MS);
  }

  onClose(event) {
    this.closed = true;
    this.mic?.close();
    this.player?.close();
    this.context?.close();
    view.setConnected(false, this.turnMode);
    view.showState("DISCONNECTED");
    view.showNote(`Disconnected (${event.code}${event.reason ? `: ${event.reason}` : ""}).`);
    if (call === this) call = null;
  }
}

// Received frame name -> what the page does; called with the Call as `this`.
const HANDLERS = {
  "session.configuration_applied.v1"(p) {
    this.session.sessionId = p.session_id;
    this.outputRate = p.effective.output_sample_rate;
    this.configurations += 1;
    if (this.configurations === 1) {
      this.send("session.update_requested.v1", {
        client_capabilities: { audio_codecs: ["pcm16"], supports_playout_ack: true },
        preferences: { turn_mode: this.turnMode },
      });
    } else {
      this.turnMode = p.effective.turn_mode;
      const mode = this.turnMode === "push_to_talk" ? "push to talk" : "hands-free";
      view.showNote(`Connected to the ${p.effective.profile_id} agent, ${mode}.`);
    }
  },
  "session.state.v1"(p) {
    this.state = p.state;
    if (p.state !== "SPEAKING") [this.hinted, this.hintRun] = [false, 0];
    view.showState(p.state);
  },
  "transcript.partial.v1"(p) {
    view.showTranscript(p.turn_id, p.text, false);
  },
  "transcript.final.v1"(p) {
    view.showTranscript(p.turn_id, p.text, true);
  },
  "response.text_delta.v1"(p) {
    if (!this.stopped.has(p.generation_id)) view.appendAssistantText(p.generation_id, p.text);
  },
  "response.audio_delta.v1"(p) {
    if (this.stopped.has(p.generation_id)) return;
    this.player.push(p.generation_id, fromBase64(p.audio), p.sample_rate || this.outputRate);
  },
  "output.stop_and_flush.v1"(p) {
    this.stopped.add(p.generation_id);
    this.player.flush(p.generation_id);
  },
  "response.completed.v1"(p) {
    view.showCompleted(p.generation_id, p.status, p.heard_text);
  },
  "tool.confirmation_required.v1"(p) {
    const { proposal_id, revision } = p;
    view.showConfirmation(p, (decision) =>
      this.send("tool.confirmation_submitted.v1", { proposal_id, revision, decision }),
    );
  },
  "tool.input_required.v1"(p) {
    view.showQuestion(p);
  },
  "tool.status.v1"(p) {
    view.showToolStatus(p);
  },
  "error.v1"(p) {
    view.showError(view.errorSentence(p));
  },
};

let call = null;

$("connect").onclick = async () => {
  const starting = new Call($("token").value.trim(), $("turn-mode").value);
  call = starting;
  view.showError("");
  view.setConnected(true, starting.turnMode);
  view.showState("CONNECTING");
  try {
    await starting.start();
  } catch (error) {
    const unreachable = error instanceof Event; // the WebSocket's error event
    const reason = unreachable ? "Cannot reach the server." : `Could not start: ${error.message}`;
    view.showError(reason);
    view.setConnected(false, starting.turnMode);
    view.showState("DISCONNECTED");
  }
};

$("close").onclick = () => call?.close();

$("text-form").onsubmit = (event) => {
  event.preventDefault();
  const text = $("text").value.trim();
  if (!call || !text) return;
  call.send("input.text.v1", { text });
  $("text").value = "";
};

const talk = $("talk");
talk.addEventListener("pointerdown", () => call?.pressTalk(true));
for (const type of ["pointerup", "pointerleave", "pointercancel"]) {
  talk.addEventListener(type, () => call?.pressTalk(false));
}

view.showState("DISCONNECTED");
