"""A generated next-word-prediction corpus in the Stack Overflow layout (10,000 words plus
pad/oov/begin/end, sentences of at most 20 tokens), partitioned by writer as the real set is.

No Stack Overflow text can be downloaded here, so sentences come from a seeded generative
language: T topics, each a sparse bigram table over a Zipf-distributed vocabulary (every
word has a few likely successors per topic, and a Zipf draw stands in for everything else).
Each client is a writer with its own Dirichlet(alpha) mixture of topics, so the split is
non-IID the way per-user data is. It reproduces the paper's *volumes* (they depend on the
model layout and on the sparsity of the updates, not on the words), not its accuracy: a
model learns this language to a different top-1 than Stack Overflow's 18.56%.
"""
import numpy as np
import torch

from .models import BOS, EOS, SPECIAL_TOKENS, WORDS

SEQUENCE = 20        # tokens per training example (FedML truncates sentences to 20)
TOPICS = 10
SUCCESSORS = 2       # likely next words per word and topic
FOLLOW = 0.9         # probability that the next word is one of the likely successors
ZIPF_EXPONENT = 1.3


class Language:
    """The generative language: Zipf word frequencies and one successor table per topic."""

    def __init__(self, seed=0, words=WORDS, topics=TOPICS):
        rng = np.random.default_rng(seed)
        ranks = np.arange(1, words + 1, dtype=np.float64)
        self.zipf = ranks ** -ZIPF_EXPONENT / np.sum(ranks ** -ZIPF_EXPONENT)
        self.words = words
        # successors[topic, word] = SUCCESSORS word ids (frequent words are likelier successors).
        self.successors = rng.choice(words, size=(topics, words, SUCCESSORS), p=self.zipf)
        self.weights = rng.dirichlet(np.ones(SUCCESSORS), size=(topics, words))

    def sentences(self, count, topic_mix, rng):
        """``count`` sentences (count, SEQUENCE + 1) of token ids: BOS, words, EOS, pad."""
        out = np.zeros((count, SEQUENCE + 1), dtype=np.int64)
        out[:, 0] = BOS
        lengths = rng.integers(8, SEQUENCE + 1, size=count)
        topics = rng.choice(len(topic_mix), size=count, p=topic_mix)
        word = rng.choice(self.words, size=count, p=self.zipf)
        for step in range(1, SEQUENCE + 1):
            follow = rng.random(count) < FOLLOW
            pick = (rng.random(count)[:, None] > np.cumsum(self.weights[topics, word], axis=1)).sum(1)
            pick = np.minimum(pick, SUCCESSORS - 1)
            successor = self.successors[topics, word, pick]
            fresh = rng.choice(self.words, size=count, p=self.zipf)
            word = np.where(follow, successor, fresh)
            alive = step < lengths
            out[:, step] = np.where(alive, word + SPECIAL_TOKENS, np.where(step == lengths, EOS, 0))
        return out


def client_corpora(clients, sentences_per_client, alpha, seed=0, test_sentences=512):
    """(per-client training tensors, shared test tensors): each a (inputs, targets) pair of
    (n, SEQUENCE) token ids, targets the inputs shifted by one. A client's sentences
    follow its own Dirichlet(alpha) topic mix (alpha=None: every client the uniform mix,
    i.e. IID); the test set follows the uniform mix."""
    language = Language(seed)
    rng = np.random.default_rng(seed + 1)
    uniform = np.full(TOPICS, 1.0 / TOPICS)
    shards = []
    for _ in range(clients):
        mix = uniform if alpha is None else rng.dirichlet(np.full(TOPICS, float(alpha)))
        shards.append(_pairs(language.sentences(sentences_per_client, mix, rng)))
    return shards, _pairs(language.sentences(test_sentences, uniform, rng))


def _pairs(tokens):
    tokens = torch.from_numpy(tokens)
    return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
