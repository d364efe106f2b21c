"""Rebuild the shipped tokenizer files: `python -m cockpit.sim.engine.tokenizer.build`.

A byte-level BPE without merges: every UTF-8 byte is one token, plus three chat special tokens.
Deterministic, tiny and cheap, it round-trips any text exactly (decode → encode gives the same ids
for whole characters), so a client slicing a corpus by token ids and the engine re-tokenising the
text count the same tokens. Loadable by `tokenizers.Tokenizer.from_file` and by
`transformers.AutoTokenizer.from_pretrained(DIR)` (the chat template lives in tokenizer_config).
"""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from cockpit.sim.engine.text import SPECIAL_TOKENS

HERE = Path(__file__).parent
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def build() -> Tokenizer:
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {symbol: index for index, symbol in enumerate(alphabet)}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(list(SPECIAL_TOKENS))
    return tokenizer


def config() -> dict[str, object]:
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "model_max_length": 1_048_576,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
    }


def main() -> None:
    build().save(str(HERE / "tokenizer.json"))
    text = json.dumps(config(), indent=2) + "\n"
    (HERE / "tokenizer_config.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
