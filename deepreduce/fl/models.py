"""The two federated models: the DeepReduce paper's next-word LSTM (FedML's Stack Overflow
RNN, 4,053,428 parameters) and a MobileNet-style CNN of depthwise-separable blocks."""
import torch
from torch import nn
import torch.nn.functional as F

# FedML's Stack Overflow next-word-prediction layout (the paper's Table 1 row "LSTM"):
# 10,000 words plus four special tokens (pad, out-of-vocabulary, begin, end), embedding 96,
# one LSTM layer of 670, a 96-wide projection, then the output over the 10,004 tokens.
WORDS = 10000
SPECIAL_TOKENS = 4
VOCAB = WORDS + SPECIAL_TOKENS
PAD, OOV, BOS, EOS = 0, 1, 2, 3
EMBED, HIDDEN = 96, 670
PAPER_LSTM_PARAMETERS = 4_053_428


class NextWordLSTM(nn.Module):
    """Token ids (batch, steps) -> logits (batch, steps, vocab) of the next token."""

    def __init__(self, vocab=VOCAB, embed=EMBED, hidden=HIDDEN, layers=1):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed, padding_idx=PAD)
        self.lstm = nn.LSTM(embed, hidden, num_layers=layers, batch_first=True)
        self.fc1 = nn.Linear(hidden, embed)
        self.fc2 = nn.Linear(embed, vocab)

    def forward(self, tokens):
        states, _ = self.lstm(self.embedding(tokens))
        return self.fc2(self.fc1(states))


class SeparableBlock(nn.Module):
    """MobileNet's unit: a 3x3 depthwise conv and a 1x1 pointwise conv, each with batch
    norm and ReLU."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.depthwise = nn.Conv2d(cin, cin, 3, stride=stride, padding=1, groups=cin, bias=False)
        self.bn1 = nn.BatchNorm2d(cin)
        self.pointwise = nn.Conv2d(cin, cout, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)

    def forward(self, x):
        return F.relu(self.bn2(self.pointwise(F.relu(self.bn1(self.depthwise(x))))))


class MobileNetSmall(nn.Module):
    """MobileNet v1's layout shrunk for small images: a 3x3 stem, depthwise-separable
    blocks that double the width when they halve the resolution, global pooling, one
    linear classifier. On the 8x8 digits: 16 -> 32 -> 64 -> 128 channels, ~20k weights."""

    def __init__(self, in_shape=(1, 8, 8), num_classes=10, width=16, stages=((32, 1), (64, 2), (64, 1), (128, 2))):
        super().__init__()
        self.stem = nn.Conv2d(in_shape[0], width, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(width)
        blocks, cin = [], width
        for cout, stride in stages:
            blocks.append(SeparableBlock(cin, cout, stride))
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.blocks(F.relu(self.bn(self.stem(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))
