// Microphone capture: downsamples the context rate (often 48 kHz) to 16 kHz by averaging the
// input samples that fall into each output period (a box filter, enough for speech), and posts
// 20 ms frames of PCM16 (320 samples) with their RMS level to the main thread.

const TARGET_RATE = 16000;
const FRAME_SAMPLES = 320;

class CaptureProcessor extends AudioWorkletProcessor {
  constructor() {
    super();
    this.step = sampleRate / TARGET_RATE; // input samples per output sample
    this.phase = 0;
    this.sum = 0;
    this.count = 0;
    this.frame = new Int16Array(FRAME_SAMPLES);
    this.filled = 0;
    this.energy = 0;
  }

  process(inputs) {
    const channel = inputs[0] && inputs[0][0];
    if (!channel) return true;
    for (const sample of channel) {
      this.sum += sample;
      this.count += 1;
      this.phase += 1;
      if (this.phase < this.step) continue;
      const mean = this.sum / this.count;
      while (this.phase >= this.step) {
        this.phase -= this.step;
        this.emit(mean);
      }
      this.sum = 0;
      this.count = 0;
    }
    return true;
  }

  emit(value) {
    const clamped = Math.max(-1, Math.min(1, value));
    this.frame[this.filled] = Math.round(clamped * 32767);
    this.energy += clamped * clamped;
    this.filled += 1;
    if (this.filled < FRAME_SAMPLES) return;
    const rms = Math.sqrt(this.energy / FRAME_SAMPLES);
    const pcm = this.frame.buffer;
    this.port.postMessage({ pcm, rms }, [pcm]);
    this.frame = new Int16Array(FRAME_SAMPLES);
    this.filled = 0;
    this.energy = 0;
  }
}

registerProcessor("vocero-capture", CaptureProcessor);
