// Audio in and out through AudioWorklets on one AudioContext. PCM16 buffers are read and written
// with typed arrays, which are little-endian on every platform browsers run on.

export async function openAudioContext() {
  const context = new AudioContext({ latencyHint: "interactive" });
  await context.audioWorklet.addModule("/static/capture-worklet.js");
  await context.audioWorklet.addModule("/static/playback-worklet.js");
  await context.resume();
  return context;
}

// Streams the microphone as 20 ms frames of 16 kHz PCM16: onFrame(ArrayBuffer, rms).
export class Microphone {
  static async open(context, onFrame) {
    const stream = await navigator.mediaDevices.getUserMedia({
      audio: {
        channelCount: 1,
        echoCancellation: true,
        noiseSuppression: true,
        autoGainControl: true,
      },
    });
    return new Microphone(context, stream, onFrame);
  }

  constructor(context, stream, onFrame) {
    this.stream = stream;
    this.source = context.createMediaStreamSource(stream);
    this.node = new AudioWorkletNode(context, "vocero-capture", { numberOfOutputs: 0 });
    this.node.port.onmessage = ({ data }) => onFrame(data.pcm, data.rms);
    this.source.connect(this.node);
  }

  close() {
    this.source.disconnect();
    this.node.port.onmessage = null;
    for (const track of this.stream.getTracks()) track.stop();
  }
}

// Plays PCM16 chunks per generation; onProgress({generationId, playedMs, bufferedMs}).
export class Player {
  constructor(context, onProgress) {
    this.node = new AudioWorkletNode(context, "vocero-playback", {
      numberOfInputs: 0,
      outputChannelCount: [1],
    });
    this.node.port.onmessage = ({ data }) => onProgress(data);
    this.node.connect(context.destination);
  }

  push(generationId, pcm, rate) {
    this.node.port.postMessage({ kind: "push", generationId, pcm, rate }, [pcm]);
  }

  // Drops queued audio of one generation, or of all of them.
  flush(generationId = null) {
    this.node.port.postMessage({ kind: "flush", generationId });
  }

  close() {
    this.flush();
    this.node.disconnect();
    this.node.port.onmessage = null;
  }
}

export function toBase64(buffer) {
  return btoa(String.fromCharCode(...new Uint8Array(buffer)));
}

export function fromBase64(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes.buffer;
}
