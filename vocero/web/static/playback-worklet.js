// Playback: a queue of PCM16 chunks tagged with their generation, at the server's output rate,
// resampled to the context rate by linear interpolation. Reports, per generation, how much audio
// was actually played and how much is still queued: every REPORT_MS of output while it plays,
// and once more when its queue runs dry.

const REPORT_MS = 40;

class PlaybackProcessor extends AudioWorkletProcessor {
  constructor() {
    super();
    this.queue = []; // {generationId, samples: Float32Array, rate}
    this.position = 0; // fractional read index into queue[0].samples
    this.played = new Map(); // generationId -> {rate, samples of its finished chunks}
    this.reportEvery = Math.round((sampleRate * REPORT_MS) / 1000);
    this.sinceReport = 0;
    this.port.onmessage = ({ data }) => this[data.kind](data);
  }

  push({ generationId, pcm, rate }) {
    const samples = Float32Array.from(new Int16Array(pcm), (v) => v / 32768);
    this.queue.push({ generationId, samples, rate });
    if (!this.played.has(generationId)) this.played.set(generationId, { rate, samples: 0 });
  }

  // Drops every queued chunk of one generation (or of all when generationId is null).
  flush({ generationId }) {
    const head = this.queue[0];
    this.queue = this.queue.filter((c) => generationId !== null && c.generationId !== generationId);
    if (this.queue[0] !== head) this.position = 0;
  }

  process(_inputs, outputs) {
    const channels = outputs[0];
    for (let i = 0; i < channels[0].length; i++) {
      const value = this.nextSample();
      for (const channel of channels) channel[i] = value;
    }
    this.sinceReport += channels[0].length;
    if (this.sinceReport >= this.reportEvery && this.queue.length) {
      this.sinceReport = 0;
      this.report(this.queue[0].generationId);
    }
    return true;
  }

  nextSample() {
    const chunk = this.queue[0];
    if (!chunk) return 0;
    const index = Math.floor(this.position);
    const a = chunk.samples[index];
    const b = index + 1 < chunk.samples.length ? chunk.samples[index + 1] : a;
    const value = a + (b - a) * (this.position - index);
    this.position += chunk.rate / sampleRate;
    if (this.position >= chunk.samples.length) this.finishChunk(chunk);
    return value;
  }

  finishChunk(chunk) {
    const id = chunk.generationId;
    this.position -= chunk.samples.length;
    this.queue.shift();
    this.played.get(id).samples += chunk.samples.length;
    if (!this.queue.some((c) => c.generationId === id)) this.report(id);
  }

  report(generationId) {
    const { rate, samples } = this.played.get(generationId);
    const current = this.queue[0]?.generationId === generationId ? Math.floor(this.position) : 0;
    const queued = this.queue
      .filter((c) => c.generationId === generationId)
      .reduce((total, c) => total + c.samples.length, -current);
    this.port.postMessage({
      generationId,
      playedMs: Math.floor(((samples + current) / rate) * 1000),
      bufferedMs: Math.max(0, Math.round((queued / rate) * 1000)),
    });
  }
}

registerProcessor("vocero-playback", PlaybackProcessor);
