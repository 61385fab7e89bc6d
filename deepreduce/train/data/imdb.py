"""The IMDB movie reviews of Maas et al. (2011) in their release layout: ``aclImdb/train`` and
``aclImdb/test``, each with ``pos/`` and ``neg/`` folders of one-review ``.txt`` files (other
folders such as ``unsup/`` are ignored). Reviews are tokenised by ``tokenize``, the vocabulary
is the most frequent training words, and every review becomes a fixed-length row of token ids,
padded at the front with 0 (1 is the unknown word)."""
import re
from collections import Counter
from pathlib import Path

import torch

from .base import DataNotFoundError, Dataset

URL = "https://ai.stanford.edu/~amaas/data/sentiment/"
ARCHIVE_DIR = "aclImdb"
LABELS = (("neg", 0), ("pos", 1))
PAD, UNKNOWN = 0, 1
VOCAB_SIZE = 10000   # ids 2.. for the VOCAB_SIZE - 2 most frequent training words
SEQ_LEN = 200        # the last SEQ_LEN tokens of a review are kept

_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
# Letters of any script and digits, then an apostrophe and letters ("don't", "1980's"):
# ASCII letters alone cut "Amélie" into "am" and "lie".
_WORD = re.compile(r"[^\W_]+(?:'[^\W\d_]+)?")


def tokenize(text):
    """Lower-case words (letters and digits, with an inner apostrophe: "don't", the
    typographic one read as the plain one); the HTML line breaks of the reviews are spaces."""
    return _WORD.findall(_BREAK.sub(" ", text.lower().replace("\u2019", "'")))


def locate(data_dir):
    """The folder of the data set's files under data_dir; DataNotFoundError (what is expected,
    where to get it) where they are not there."""
    root = Path(data_dir)
    for d in (root, root / ARCHIVE_DIR):
        if all((d / split / label).is_dir() for split in ("train", "test") for label, _ in LABELS):
            return d
    raise DataNotFoundError(
        f"IMDB not found: expected the folders train/pos, train/neg, test/pos, test/neg of "
        f".txt reviews in {root} (or in {root / ARCHIVE_DIR}). Download the 'Large Movie Review "
        f"Dataset' (aclImdb_v1.tar.gz) from {URL}, extract it, and pass --data-dir "
        f"<folder>/{ARCHIVE_DIR}. Nothing is downloaded automatically.")


def _read_split(d):
    texts, labels = [], []
    for label, y in LABELS:
        paths = sorted((d / label).glob("*.txt"))
        if not paths:  # a one-class split trains a model that answers one class, unsaid
            raise ValueError(f"{d / label}: no .txt reviews; both pos/ and neg/ of {d} must hold some")
        for path in paths:
            texts.append(tokenize(path.read_text(encoding="utf-8", errors="replace")))
            labels.append(y)
    return texts, torch.tensor(labels, dtype=torch.long)


def build_vocabulary(token_lists, size=VOCAB_SIZE):
    """word -> id for the size - 2 most frequent words (ties by the word), from id 2."""
    counts = Counter(word for tokens in token_lists for word in tokens)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:size - 2]
    return {word: i + 2 for i, (word, _) in enumerate(ranked)}


def encode(token_lists, vocabulary, seq_len=SEQ_LEN):
    rows = torch.full((len(token_lists), seq_len), PAD, dtype=torch.long)
    for r, tokens in enumerate(token_lists):
        ids = [vocabulary.get(word, UNKNOWN) for word in tokens[-seq_len:]]
        if ids:
            rows[r, seq_len - len(ids):] = torch.tensor(ids, dtype=torch.long)
    return rows


def load_imdb(data_dir):
    d = locate(data_dir)
    train_tokens, y_train = _read_split(d / "train")
    test_tokens, y_test = _read_split(d / "test")
    vocabulary = build_vocabulary(train_tokens)
    return Dataset(name="imdb", task="classify",
                   train=(encode(train_tokens, vocabulary), y_train),
                   test=(encode(test_tokens, vocabulary), y_test),
                   meta={"vocab_size": len(vocabulary) + 2, "num_classes": 2, "seq_len": SEQ_LEN})
