"""Models for the main job: ResNet-20 and VGG-16/19 (CIFAR-10/100), NeuMF (MovieLens), an LSTM
classifier (IMDB reviews), a small CNN and an MLP (digits). ``build_model(name, meta)`` builds
one from a data set's ``meta``."""
import torch
from torch import nn
import torch.nn.functional as F


class SmallCNN(nn.Module):
    """Two 3x3 conv layers and two linear layers (~38k parameters on 1x8x8 digits): big enough
    that top-k has real tensors to sparsify, small enough for a 2-core run in seconds."""

    def __init__(self, in_shape=(1, 8, 8), num_classes=10, width=16, hidden=64):
        super().__init__()
        c, h, w = in_shape
        self.conv1 = nn.Conv2d(c, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.fc1 = nn.Linear(2 * width * (h // 2) * (w // 2), hidden)
        self.fc2 = nn.Linear(hidden, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class MLP(nn.Module):
    def __init__(self, in_shape=(1, 8, 8), num_classes=10, hidden=(128, 64)):
        super().__init__()
        sizes = [int(torch.tensor(in_shape).prod())] + list(hidden)
        layers = [nn.Flatten()]
        for a, b in zip(sizes, sizes[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        self.net = nn.Sequential(*layers, nn.Linear(sizes[-1], num_classes))

    def forward(self, x):
        return self.net(x)


class BasicBlock(nn.Module):
    """He et al. (2016) CIFAR block; the shortcut is option A (stride-2 subsampling and zero
    channel padding, parameter-free), which gives the paper's 0.27M parameters for ResNet-20."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.stride, self.pad = stride, cout - cin

    def shortcut(self, x):
        if self.stride == 1 and self.pad == 0:
            return x
        x = x[:, :, ::self.stride, ::self.stride]
        return F.pad(x, (0, 0, 0, 0, self.pad // 2, self.pad - self.pad // 2))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNetCifar(nn.Module):
    """ResNet-(6n+2) for 32x32 inputs: 3 stages of n basic blocks at 16/32/64 channels."""

    def __init__(self, blocks_per_stage=3, in_shape=(3, 32, 32), num_classes=10):
        super().__init__()
        self.conv = nn.Conv2d(in_shape[0], 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        layers, cin = [], 16
        for stage, cout in enumerate((16, 32, 64)):
            for b in range(blocks_per_stage):
                layers.append(BasicBlock(cin, cout, 2 if stage > 0 and b == 0 else 1))
                cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(64, num_classes)
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(m.weight)

    def forward(self, x):
        x = self.layers(F.relu(self.bn(self.conv(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


# Simonyan & Zisserman's configurations D (VGG-16) and E (VGG-19): channels per 3x3 conv,
# "M" a 2x2 max-pool.
VGG_LAYERS = {
    16: (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"),
    19: (64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
         512, 512, 512, 512, "M"),
}


class VGGCifar(nn.Module):
    """VGG for 32x32 images as SparDL trains it: conv-BN-ReLU stacks, five pools down to
    1x1x512, one linear classifier."""

    def __init__(self, depth=16, in_shape=(3, 32, 32), num_classes=10):
        super().__init__()
        layers, cin = [], in_shape[0]
        for v in VGG_LAYERS[depth]:
            if v == "M":
                layers.append(nn.MaxPool2d(2))
            else:
                layers += [nn.Conv2d(cin, v, 3, padding=1), nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
                cin = v
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(cin, num_classes)

    def forward(self, x):
        return self.classifier(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))


class LSTMClassifier(nn.Module):
    """Token ids -> embedding -> LSTM -> linear on the last step's state (sequences are
    padded at the front with id 0, so the last step is always a real token or the end)."""

    def __init__(self, vocab_size, num_classes=2, embed=64, hidden=128, layers=1):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed, padding_idx=0)
        self.lstm = nn.LSTM(embed, hidden, num_layers=layers, batch_first=True)
        self.out = nn.Linear(hidden, num_classes)

    def forward(self, tokens):
        states, _ = self.lstm(self.embed(tokens))
        return self.out(states[:, -1])


class NeuMF(nn.Module):
    """NCF's NeuMF (He et al. 2017): a GMF branch (element-wise product of embeddings) and an
    MLP branch over concatenated embeddings, fused by one linear layer into a logit."""

    def __init__(self, num_users, num_items, factors=8, mlp_layers=(32, 16, 8)):
        super().__init__()
        self.user_gmf = nn.Embedding(num_users, factors)
        self.item_gmf = nn.Embedding(num_items, factors)
        self.user_mlp = nn.Embedding(num_users, mlp_layers[0] // 2)
        self.item_mlp = nn.Embedding(num_items, mlp_layers[0] // 2)
        mlp = []
        for a, b in zip(mlp_layers, mlp_layers[1:]):
            mlp += [nn.Linear(a, b), nn.ReLU()]
        self.mlp = nn.Sequential(*mlp)
        self.out = nn.Linear(factors + mlp_layers[-1], 1)
        for emb in (self.user_gmf, self.item_gmf, self.user_mlp, self.item_mlp):
            nn.init.normal_(emb.weight, std=0.01)

    def forward(self, users, items):
        gmf = self.user_gmf(users) * self.item_gmf(items)
        mlp = self.mlp(torch.cat([self.user_mlp(users), self.item_mlp(items)], dim=-1))
        return self.out(torch.cat([gmf, mlp], dim=-1)).squeeze(-1)


def _image_model(cls):
    def build(meta, **options):
        if "in_shape" not in meta:
            raise ValueError(f"model {cls.__name__} needs an image data set (digits, cifar10)")
        return cls(in_shape=tuple(meta["in_shape"]), num_classes=meta["num_classes"], **options)
    return build


def _vgg(depth):
    def build(meta):
        if "in_shape" not in meta or len(meta["in_shape"]) != 3 or meta["in_shape"][1] < 32:
            raise ValueError(f"model vgg{depth} needs 32x32 colour images (cifar10, cifar100)")
        return VGGCifar(depth, tuple(meta["in_shape"]), meta["num_classes"])
    return build


def _lstm(meta):
    if "vocab_size" not in meta:
        raise ValueError("model lstm needs a text data set (imdb)")
    return LSTMClassifier(meta["vocab_size"], meta["num_classes"])


def _ncf(meta):
    if "num_users" not in meta:
        raise ValueError("model ncf needs a user-item data set (movielens)")
    return NeuMF(meta["num_users"], meta["num_items"])


MODELS = {
    "cnn": _image_model(SmallCNN),
    "mlp": _image_model(MLP),
    "resnet20": _image_model(ResNetCifar),
    "ncf": _ncf,
    "vgg16": _vgg(16),
    "vgg19": _vgg(19),
    "lstm": _lstm,
}


def build_model(name, meta, hidden=None):
    """``hidden`` (layer widths) is for the mlp only; None keeps its default."""
    try:
        build = MODELS[name]
    except KeyError:
        raise ValueError(f"model={name!r} is unknown; valid names: {', '.join(MODELS)}") from None
    if hidden is None:
        return build(meta)
    if name != "mlp":
        raise ValueError(f"hidden layer widths set the mlp's; model {name!r} has none to set")
    return build(meta, hidden=tuple(hidden))


def count_parameters(model):
    return sum(p.numel() for p in model.parameters())
