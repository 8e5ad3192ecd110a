"""Tiny, randomly initialised stand-ins for the GB10 models, built by the tests themselves.

They exercise the real loading and inference code (``ASRModel.restore_from`` of a ``.nemo``
archive, NeMo's TDT greedy decoding with word timestamps) with no weights and no GPU. What they
say is noise; only shapes and plumbing are checked.
"""

from __future__ import annotations

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
