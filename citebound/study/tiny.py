"""Tiny random-weight models built locally (tests, benchmarks, offline demos).

They go through ``save_pretrained`` and are loaded back through the same
``from_pretrained`` path users hit with real model ids. Their outputs are
meaningless; they exercise code paths, batching and numerics.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

BASE_WORDS = """the a of and to in is was for on with as by that this it are be from at or an not
attributable extrapolatory contradictory claim reference answer verify whether supports question passage
yes no supported unsupported cells protein gene cancer model data results study show increase decrease
mitochondria atp nanoparticles corona serum lipid""".split()


def _vocab(texts: Iterable[str], specials: list[str]) -> dict[str, int]:
    words = list(dict.fromkeys(BASE_WORDS + [w for t in texts for w in re.findall(r"\w+|[^\w\s]", t.lower())]))
    return {tok: i for i, tok in enumerate(specials + words)}


def _word_tokenizer(vocab: dict[str, int], unk: str) -> Tokenizer:
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=unk))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return tok


def _cls_sep_tokenizer(texts: Iterable[str], **kw) -> tuple[dict[str, int], object]:
    """(vocab, a fast tokenizer) of the BERT style: ``[CLS] A [SEP] B [SEP]``, the second segment type 1."""
    from transformers import PreTrainedTokenizerFast

    vocab = _vocab(texts, ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"])
    tok = _word_tokenizer(vocab, "[UNK]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 1), ("[SEP]", 2)])
    return vocab, PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", cls_token="[CLS]",
                                          sep_token="[SEP]", unk_token="[UNK]", mask_token="[MASK]", **kw)


def build_tiny_t5(out_dir: str | Path, texts: Iterable[str] = (), seed: int = 0) -> Path:
    """Random flan-T5-shaped seq2seq model + tokenizer that appends </s>."""
    import torch
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    out = Path(out_dir)
    vocab = _vocab(texts, ["<pad>", "</s>", "<unk>"])
    tok = _word_tokenizer(vocab, "<unk>")
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>",
                                                       special_tokens=[("</s>", 1)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")
    torch.manual_seed(seed)
    cfg = T5Config(vocab_size=len(vocab), d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
                   num_heads=4, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0,
                   feed_forward_proj="gated-gelu", tie_word_embeddings=False)
    T5ForConditionalGeneration(cfg).eval().save_pretrained(out)
    fast.save_pretrained(out)
    return out


def build_tiny_deberta_nli(out_dir: str | Path, texts: Iterable[str] = (), seed: int = 0,
                           initializer_range: float = 0.02) -> Path:
    """Random DeBERTa-v2 sequence-pair classifier with entailment/neutral/contradiction labels. At the default
    ``initializer_range`` its probabilities hardly depend on the input (about 1e-6 apart); at 0.3 they differ by
    0.05 or more, for tests that must tell two inputs apart (at 1.0 they saturate near 0 and 1)."""
    import torch
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    out = Path(out_dir)
    vocab, fast = _cls_sep_tokenizer(texts)
    torch.manual_seed(seed)
    cfg = DebertaV2Config(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=64, max_position_embeddings=512, type_vocab_size=2, pad_token_id=0,
                          initializer_range=initializer_range,
                          id2label={0: "entailment", 1: "neutral", 2: "contradiction"},
                          label2id={"entailment": 0, "neutral": 1, "contradiction": 2})
    DebertaV2ForSequenceClassification(cfg).eval().save_pretrained(out)
    fast.save_pretrained(out)
    return out


CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} <|end|> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)


def build_tiny_llama(out_dir: str | Path, texts: Iterable[str] = (), seed: int = 0) -> Path:
    """Random Llama causal LM with a chat template (for the generation backends)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = Path(out_dir)
    specials = ["<pad>", "<s>", "</s>", "<unk>", "<|user|>", "<|assistant|>", "<|system|>", "<|end|>"]
    vocab = _vocab(list(texts) + ["[ 1 ] [ 2 ] [ 3 ] [ 4 ] [ 5 ] 0 1 2 3 4 5 6 7 8 9 ."], specials)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    tok.add_special_tokens(specials)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>")
    fast.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    # head_dim 64: the smallest head size vLLM's CPU attention kernels accept
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                      pad_token_id=0, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)
    LlamaForCausalLM(cfg).eval().save_pretrained(out)
    fast.save_pretrained(out)
    return out


def build_tiny_checker(out_dir: str | Path, arch: str, texts: Iterable[str] = (), seed: int = 0,
                       initializer_range: float = 0.02) -> Path:
    """Random 2-label sequence classifier shaped like MiniCheck-RoBERTa-Large (``arch='roberta'``) or
    MiniCheck-DeBERTa-v3-Large (``arch='deberta'``), with a tokenizer whose EOS joins document and claim.
    ``initializer_range`` as in :func:`build_tiny_deberta_nli` (0.3 for scores that depend on the input)."""
    import torch
    from transformers import (
        DebertaV2Config,
        DebertaV2ForSequenceClassification,
        PreTrainedTokenizerFast,
        RobertaConfig,
        RobertaForSequenceClassification,
    )

    out = Path(out_dir)
    vocab = _vocab(texts, ["<pad>", "<s>", "</s>", "<unk>", "<mask>"])
    tok = _word_tokenizer(vocab, "<unk>")
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 1), ("</s>", 2)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                   cls_token="<s>", sep_token="</s>", unk_token="<unk>", mask_token="<mask>")
    torch.manual_seed(seed)
    shape = dict(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=64, pad_token_id=0, num_labels=2, initializer_range=initializer_range)
    if arch == "roberta":
        model = RobertaForSequenceClassification(RobertaConfig(max_position_embeddings=520, type_vocab_size=1, **shape))
    elif arch == "deberta":
        model = DebertaV2ForSequenceClassification(DebertaV2Config(max_position_embeddings=512, type_vocab_size=0, **shape))
    else:
        raise ValueError(f"unknown checker architecture {arch!r} (roberta, deberta)")
    model.eval().save_pretrained(out)
    fast.save_pretrained(out)
    return out


HHEM_TEST_PROMPT = "<pad> premise : {text1} hypothesis : {text2}"


def build_tiny_hhem(out_dir: str | Path, texts: Iterable[str] = (), seed: int = 0) -> Path:
    """A random HHEM-2.1-open-shaped checkpoint: a T5 token classifier (2 labels) saved under ``t5.``,
    a config.json without the prompt, and a configuration_hhem_v2.py whose ``HHEMv2Config`` names the
    foundation model (a tiny T5 built next to it) and a test prompt -- the layout of the real one."""
    import json

    import torch
    from safetensors.torch import save_file
    from transformers import T5Config, T5ForTokenClassification

    out = Path(out_dir)
    foundation = build_tiny_t5(out.parent / f"{out.name}-foundation", texts, seed)
    torch.manual_seed(seed)
    cfg = T5Config.from_pretrained(foundation, num_labels=2)
    model = T5ForTokenClassification(cfg).eval()
    out.mkdir(parents=True, exist_ok=True)
    state = {f"t5.{k}": v.contiguous() for k, v in model.state_dict().items() if k != "transformer.encoder.embed_tokens.weight"}
    save_file(state, str(out / "model.safetensors"))  # the tied embedding once, as save_pretrained stores it
    (out / "config.json").write_text(json.dumps({"model_type": "HHEMv2", "architectures": ["HHEMv2ForSequenceClassification"]}))
    (out / "configuration_hhem_v2.py").write_text(
        "from transformers import PretrainedConfig\n\n\nclass HHEMv2Config(PretrainedConfig):\n"
        f"    model_type = 'HHEMv2'\n    foundation = {str(foundation)!r}\n    prompt = {HHEM_TEST_PROMPT!r}\n")
    return out


def build_tiny_bert_classifier(out_dir: str | Path, texts: Iterable[str] = (), num_labels: int = 3,
                               seed: int = 0) -> Path:
    """A random ``BertForSequenceClassification`` (the architecture vLLM serves with ``--runner pooling``; a head
    size of 64, which vLLM's CPU attention supports):
    3 labels entailment/neutral/contradiction (an NLI head, for ``POST /classify``) or 1 label (a
    cross-encoder, for ``POST /score``), with a word-level tokenizer that knows ``[SEP]`` as a special token."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    out = Path(out_dir)
    vocab, fast = _cls_sep_tokenizer(texts, model_max_length=512)
    labels = {0: "entailment", 1: "neutral", 2: "contradiction"} if num_labels == 3 else {0: "LABEL_0"}
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=256, max_position_embeddings=512, type_vocab_size=2, pad_token_id=0,
                     num_labels=num_labels, id2label=labels, label2id={v: k for k, v in labels.items()})
    model = BertForSequenceClassification(cfg).eval()
    with torch.no_grad():  # random weights this small give near-uniform classes: spread them so scores differ
        model.classifier.weight.mul_(8.0)
    model.save_pretrained(out)
    fast.save_pretrained(out)
    return out
