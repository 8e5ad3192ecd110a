"""Tiny, randomly initialised stand-ins for the GB10 models, built by the tests themselves.

They exercise the real loading and inference code (``ASRModel.restore_from`` of a ``.nemo``
archive, NeMo's TDT greedy decoding with word timestamps; ``Qwen3TTSModel.from_pretrained`` of a
model directory with its ``speech_tokenizer/``, voice-clone prompts and codec decoding) with no
weights and no GPU. What they say is noise; only shapes and plumbing are checked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TDT_DURATIONS = [0, 1, 2, 3, 4]


def tiny_parakeet(directory: Path) -> Path:
    """A one-layer FastConformer-TDT with a 32-token SentencePiece vocabulary, as ``.nemo``."""
    import sentencepiece as spm
    from nemo.collections.asr.models import EncDecRNNTBPEModel
    from omegaconf import OmegaConf

    tokenizer = directory / "tokenizer"
    tokenizer.mkdir(parents=True, exist_ok=True)
    text = directory / "text.txt"
    text.write_text("\n".join(["cancel appointment two hundred four", "call me back"] * 20))
    spm.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(tokenizer / "tokenizer"),
        vocab_size=32,
        model_type="bpe",
        character_coverage=1.0,
        bos_id=-1,
        eos_id=-1,
        minloglevel=2,
    )
    vocabulary = [
        line.split("\t")[0] for line in (tokenizer / "tokenizer.vocab").read_text().splitlines()
    ]
    (tokenizer / "vocab.txt").write_text("\n".join(vocabulary))
    model = EncDecRNNTBPEModel(cfg=OmegaConf.create(_tdt_config(str(tokenizer))))
    path = directory / "tiny_tdt.nemo"
    model.save_to(str(path))
    return path


def _tdt_config(tokenizer_dir: str) -> dict[str, Any]:
    hidden, durations = 16, TDT_DURATIONS
    return {
        "sample_rate": 16_000,
        "tokenizer": {"dir": tokenizer_dir, "type": "bpe"},
        "preprocessor": {
            "_target_": "nemo.collections.asr.modules.AudioToMelSpectrogramPreprocessor",
            "sample_rate": 16_000,
            "normalize": "per_feature",
            "window_size": 0.025,
            "window_stride": 0.01,
            "features": 16,
            "n_fft": 512,
            "dither": 0.0,
            "pad_to": 0,
        },
        "encoder": {
            "_target_": "nemo.collections.asr.modules.ConformerEncoder",
            "feat_in": 16,
            "n_layers": 1,
            "d_model": hidden,
            "subsampling": "dw_striding",
            "subsampling_factor": 8,
            "subsampling_conv_channels": 8,
            "n_heads": 2,
            "ff_expansion_factor": 2,
            "self_attention_model": "rel_pos",
            "conv_kernel_size": 9,
            "feat_out": -1,
        },
        "decoder": {
            "_target_": "nemo.collections.asr.modules.RNNTDecoder",
            "blank_as_pad": True,
            "prednet": {"pred_hidden": hidden, "pred_rnn_layers": 1, "dropout": 0.0},
        },
        "joint": {
            "_target_": "nemo.collections.asr.modules.RNNTJoint",
            "num_extra_outputs": len(durations),
            "jointnet": {
                "joint_hidden": hidden,
                "activation": "relu",
                "dropout": 0.0,
                "encoder_hidden": hidden,
                "pred_hidden": hidden,
            },
        },
        "decoding": {
            "strategy": "greedy_batch",
            "model_type": "tdt",
            "durations": durations,
            "greedy": {"max_symbols": 10},
        },
        "model_defaults": {
            "enc_hidden": hidden,
            "pred_hidden": hidden,
            "joint_hidden": hidden,
            "tdt_durations": durations,
            "num_tdt_durations": len(durations),
        },
        "loss": {
            "loss_name": "tdt",
            "tdt_kwargs": {"durations": durations, "sigma": 0.02, "omega": 0.1},
        },
        "train_ds": None,
        "validation_ds": None,
        "test_ds": None,
        "optim": None,
    }


# --------------------------------------------------------------------------------- Qwen3-TTS

CODEBOOK = 32
"""Codes per codebook (the real 12 Hz codec has 2048); a power of two, as Mimi requires."""
CODE_GROUPS = 4
"""Codebooks per 80 ms frame (the real one has 16)."""
QWEN_MAX_NEW_TOKENS = 6
"""Frames a tiny model may generate: random weights rarely say end-of-speech."""
_QWEN_SPECIAL = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tts_pad>",
    "<tts_bos>",
    "<tts_eos>",
]


TINY_SPEAKER = "Ryan"
"""The one preset speaker of the tiny CustomVoice model."""


def tiny_qwen3_tts(directory: Path, kind: str = "base") -> Path:
    """A Qwen3-TTS 12Hz *Base* model directory laid out like the released one (``kind``
    ``custom_voice``: the CustomVoice variant, whose one preset speaker is :data:`TINY_SPEAKER`).

    ``config.json`` and ``model.safetensors`` (a one-layer talker, a one-layer code predictor and a
    small ECAPA speaker encoder), a byte-level BPE text tokenizer that keeps the chat markers
    ``<|im_start|>``/``<|im_end|>`` and ``assistant`` whole (the model slices prompts by token
    position), ``generation_config.json`` with Qwen's sampling keys, and ``speech_tokenizer/``
    holding a tiny 12 Hz codec (Mimi encoder, residual-VQ decoder; 24 kHz in and out, 1920 samples
    per frame like the real one).
    """
    import torch
    from qwen_tts.core import Qwen3TTSTokenizerV2Config, Qwen3TTSTokenizerV2Model
    from qwen_tts.core.models import (
        Qwen3TTSConfig,
        Qwen3TTSForConditionalGeneration,
        Qwen3TTSProcessor,
    )
    from transformers import EncodecFeatureExtractor

    torch.manual_seed(0)
    model_dir = directory / ("Qwen3-TTS-12Hz-tiny-Base" if kind == "base" else
                             "Qwen3-TTS-12Hz-tiny-CustomVoice")
    model_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = _qwen_text_tokenizer()
    Qwen3TTSProcessor(tokenizer=tokenizer).save_pretrained(str(model_dir))
    ids = {token: int(tokenizer.convert_tokens_to_ids(token)) for token in _QWEN_SPECIAL}
    settings = _qwen_config(ids, text_vocab_size=len(tokenizer))
    if kind == "custom_voice":  # a preset speaker is a codec-vocabulary id, as released
        settings["tts_model_type"] = "custom_voice"
        settings["talker_config"]["spk_id"] = {TINY_SPEAKER.lower(): CODEBOOK + 20}
        settings["talker_config"]["spk_is_dialect"] = {TINY_SPEAKER.lower(): False}
    model = Qwen3TTSForConditionalGeneration(Qwen3TTSConfig(**settings)).eval()
    model.save_pretrained(str(model_dir))
    # ``save_pretrained`` writes every sub-config key (``model_type`` too), which
    # ``Qwen3TTSSpeakerEncoderConfig`` refuses on load; the released config.json lists only the
    # settings, so write it that way.
    config = {"architectures": ["Qwen3TTSForConditionalGeneration"], "model_type": "qwen3_tts"}
    (model_dir / "config.json").write_text(json.dumps(config | settings, indent=2))
    (model_dir / "generation_config.json").write_text(
        json.dumps(
            {
                "do_sample": True,
                "top_k": 50,
                "top_p": 1.0,
                "temperature": 0.9,
                "repetition_penalty": 1.05,
                "subtalker_dosample": True,
                "subtalker_top_k": 50,
                "subtalker_top_p": 1.0,
                "subtalker_temperature": 0.9,
                "max_new_tokens": QWEN_MAX_NEW_TOKENS,
            },
            indent=2,
        )
    )
    codec_dir = model_dir / "speech_tokenizer"
    codec = Qwen3TTSTokenizerV2Model(Qwen3TTSTokenizerV2Config(**_codec_config())).eval()
    codec.save_pretrained(str(codec_dir))
    EncodecFeatureExtractor(feature_size=1, sampling_rate=24_000).save_pretrained(str(codec_dir))
    return model_dir


def _qwen_text_tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import Qwen2TokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    corpus = ["assistant", "hello there, this is a short reference", "call me back"] * 20
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=_QWEN_SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(corpus, trainer=trainer)
    tokenizer = Qwen2TokenizerFast(
        tokenizer_object=bpe,
        unk_token=None,
        bos_token=None,
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=_QWEN_SPECIAL[1:],
    )
    # Qwen3-TTS cuts "<|im_start|>assistant\n{text}<|im_end|>\n..." at fixed token offsets.
    role = tokenizer.tokenize("<|im_start|>assistant\n")
    assert len(role) == 3, role
    return tokenizer


def _qwen_config(ids: dict[str, int], *, text_vocab_size: int) -> dict[str, Any]:
    hidden, heads, head_dim = 16, 2, 8
    # Multimodal RoPE as released (interleaved; sections sum to head_dim / 2).
    rope = {"rope_type": "default", "interleaved": True, "mrope_section": [2, 1, 1]}
    # Codec ids: 0..CODEBOOK-1 are codes; the model suppresses the last 1024 ids of its vocabulary
    # except end-of-speech, so the special ids live there (as in the real 3072-id vocabulary).
    special = CODEBOOK + 100
    talker = {
        "vocab_size": CODEBOOK + 1024,
        "hidden_size": hidden,
        "intermediate_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": heads,
        "num_key_value_heads": 1,
        "head_dim": head_dim,
        "max_position_embeddings": 512,
        "rope_scaling": rope,
        "num_code_groups": CODE_GROUPS,
        "text_hidden_size": hidden,
        "text_vocab_size": text_vocab_size,
        "codec_pad_id": special,
        "codec_bos_id": special + 1,
        "codec_eos_token_id": special + 2,
        "codec_think_id": special + 6,
        "codec_nothink_id": special + 7,
        "codec_think_bos_id": special + 8,
        "codec_think_eos_id": special + 9,
        "codec_language_id": {"english": CODEBOOK + 2, "german": CODEBOOK + 3},
        "spk_id": {},
        "spk_is_dialect": {},
        "code_predictor_config": {
            "vocab_size": CODEBOOK,
            "hidden_size": hidden,
            "intermediate_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": heads,
            "num_key_value_heads": 1,
            "head_dim": head_dim,
            "max_position_embeddings": 64,
            "num_code_groups": CODE_GROUPS,
        },
    }
    return {
        "talker_config": talker,
        "speaker_encoder_config": {
            "mel_dim": 128,  # fixed: the model computes 128-bin mels itself
            "enc_dim": hidden,  # the x-vector sits in the talker's input sequence
            "enc_channels": [8, 8, 8, 8, 24],  # the last one aggregates the middle three
            "enc_kernel_sizes": [5, 3, 3, 3, 1],
            "enc_dilations": [1, 2, 3, 4, 1],
            "enc_attention_channels": 8,
            "enc_res2net_scale": 4,
            "enc_se_channels": 8,
            "sample_rate": 24_000,
        },
        "tokenizer_type": "qwen3_tts_tokenizer_12hz",
        "tts_model_size": "tiny",
        "tts_model_type": "base",
        "im_start_token_id": ids["<|im_start|>"],
        "im_end_token_id": ids["<|im_end|>"],
        "tts_pad_token_id": ids["<tts_pad>"],
        "tts_bos_token_id": ids["<tts_bos>"],
        "tts_eos_token_id": ids["<tts_eos>"],
    }


def _codec_config() -> dict[str, Any]:
    hidden = 16
    return {
        "encoder_config": {
            "sampling_rate": 24_000,
            "frame_rate": 12.5,
            "hidden_size": hidden,
            "num_filters": 2,
            "upsampling_ratios": [8, 6, 5, 4],
            "codebook_size": CODEBOOK,
            "codebook_dim": hidden,
            "num_quantizers": CODE_GROUPS,
            "num_semantic_quantizers": 1,
            "vector_quantization_hidden_dimension": hidden,
            "upsample_groups": hidden,
            "num_hidden_layers": 1,
            "intermediate_size": 32,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "head_dim": 8,
            "sliding_window": 16,
        },
        "decoder_config": {
            "codebook_size": CODEBOOK,
            "codebook_dim": hidden,
            "hidden_size": hidden,
            "latent_dim": hidden,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "head_dim": 8,
            "intermediate_size": 32,
            "sliding_window": 16,
            "num_quantizers": CODE_GROUPS,
            "upsample_rates": [8, 5, 4, 3],
            "upsampling_ratios": [2, 2],
            "decoder_dim": 32,
        },
        "encoder_valid_num_quantizers": CODE_GROUPS,
        "input_sample_rate": 24_000,
        "output_sample_rate": 24_000,
        "encode_downsample_rate": 1920,
        "decode_upsample_rate": 1920,
    }
