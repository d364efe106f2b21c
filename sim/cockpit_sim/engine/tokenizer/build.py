"""Rebuild the shipped tokenizer: `python -m cockpit_sim.engine.tokenizer.build`.

A byte-level BPE of 4,096 tokens trained here, from a corpus this script generates (no download),
so its density is a real model's rather than one token per byte: common English words and the
pseudo-words of the bench's book are one or two tokens, about four characters per token, as a
real model's tokenizer reads English. The corpus: sentences of about 560 common English words
drawn by a Zipf law, the bench book's pseudo-words (`cockpit.bench.prompts.book_text`), the
engine's own pseudo-words (`text.SYLLABLES`) and numbers.

Pre-tokenisation splits at spaces, the space joining the next word (SentencePiece's way): every
piece is encoded on its own, which lets `text.encode` cache pieces and stay fast on 256K-token
prompts. Loadable by `tokenizers.Tokenizer.from_file` and by `transformers.AutoTokenizer`
(the chat template lives in tokenizer_config.json). The fleet copies the two files into every
simulated model snapshot it provisions (`provision.copy_snapshot`), where a client finds "the
lane's tokenizer" as on a real node.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from cockpit_sim.engine.text import SPECIAL_TOKENS, SYLLABLES

HERE = Path(__file__).parent
FILES = ("tokenizer.json", "tokenizer_config.json")
VOCAB_SIZE = 4096
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
ENGLISH = """\
the of and to a in is it you that he was for on are with as I his they be at one have
this from or had by not word but what some we can out other were all there when up use your how
said an each she which do their time if will way about many then them write would like so these
her long make thing see him two has look more day could go come did number sound no most people
my over know water than call first who may down side been now find any new work part take get
place made live where after back little only round man year came show every good me give our
under name very through just form sentence great think say help low line differ turn cause much
mean before move right boy old too same tell does set three want air well also play small end put
home read hand port large spell add even land here must big high such follow act why ask men
change went light kind off need house picture try us again animal point mother world near build
self earth father head stand own page should country found answer school grow study still learn
plant cover food sun four between state keep eye never last let thought city tree cross farm hard
start might story saw far sea draw left late run don't while press close night real life few
north open seem together next white children begin got walk example ease paper group always music
those both mark often letter until mile river car feet care second book carry took science eat
room friend began idea fish mountain stop once base hear horse cut sure watch color face wood main
enough plain girl usual young ready above ever red list though feel talk bird soon body dog family
direct pose leave song measure door product black short numeral class wind question happen
complete ship area half rock order fire south problem piece told knew pass since top whole king
space heard best hour better true during hundred five remember step early hold west ground
interest reach fast verb sing listen six table travel less morning ten simple several vowel
toward war lay against pattern slow center love person money serve appear road map rain rule
govern pull cold notice voice unit power town fine certain fly fall lead cry dark machine note
wait plan figure star box noun field rest correct able pound done beauty drive stood contain front
teach week final gave green oh quick develop ocean warm free minute strong special mind behind
clear tail produce fact street inch multiply nothing course stay wheel full force blue object
decide surface deep moon island foot system busy test record boat common gold possible plane
stead dry wonder laugh thousand ago ran check game shape equate hot miss brought heat snow tire
bring yes distant fill east paint language among model server token cache prefix request latency
throughput benchmark user assistant engine node cluster lane memory context decode prefill hello
please thank thanks okay brown fox lazy jump child want
"""
"""Common English words, most frequent first."""
_ENDINGS = ("s", "ed", "ing", "er", "ly")


def corpus(seed: int = 20261202) -> list[str]:
    """The training text: deterministic, a few hundred KB."""
    from cockpit.bench.prompts import book_text  # the bench's book: what the lanes are fed

    rng = random.Random(seed)
    english = ENGLISH.split()
    weights = [1 / (rank + 10) for rank in range(len(english))]
    lines = []
    for _ in range(6000):
        words = rng.choices(english, weights, k=rng.randint(6, 18))
        words = [w + rng.choice(_ENDINGS) if rng.random() < 0.15 else w for w in words]
        if rng.random() < 0.3:
            words[rng.randrange(len(words))] += ","
        sentence = " ".join(words)
        if rng.random() < 0.7:
            sentence = sentence[0].upper() + sentence[1:]
        lines.append(sentence + rng.choice(".?!."))
    book = book_text()
    lines += [book[i : i + 400] for i in range(0, 240_000, 400)]
    for _ in range(4000):
        words = ["".join(rng.choices(SYLLABLES, k=rng.randint(1, 3))) for _ in range(12)]
        lines.append(" ".join(words))
    lines += [" ".join(str(rng.randint(0, 99_999)) for _ in range(20)) for _ in range(300)]
    return lines


def build() -> Tokenizer:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(" ", behavior="merged_with_next"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus(), trainer=trainer)
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
    build().save(str(HERE / "tokenizer.json"), pretty=False)
    text = json.dumps(config(), indent=2) + "\n"
    (HERE / "tokenizer_config.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
