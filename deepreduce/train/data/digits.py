"""The default data set: scikit-learn's bundled handwritten digits (1797 8x8 grey images,
10 classes), shipped inside scikit-learn, so the default run needs no download."""
import torch

# A fixed split (independent of --seed) so every run is scored on the same 360 test images.
TEST_FRACTION = 0.2
SPLIT_SEED = 0


def load_digits_dataset():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    from .base import Dataset

    bunch = load_digits()
    # Pixels are 0..16; scale to [0, 1] and give them a channel axis for the CNN.
    x = torch.tensor(bunch.data, dtype=torch.float32).div_(16.0).view(-1, 1, 8, 8)
    y = torch.tensor(bunch.target, dtype=torch.long)
    train_idx, test_idx = train_test_split(torch.arange(len(y)).numpy(), test_size=TEST_FRACTION,
                                           random_state=SPLIT_SEED, stratify=bunch.target)
    train_idx, test_idx = torch.as_tensor(train_idx), torch.as_tensor(test_idx)
    return Dataset(name="digits", task="classify",
                   train=(x[train_idx], y[train_idx]), test=(x[test_idx], y[test_idx]),
                   meta={"in_shape": (1, 8, 8), "num_classes": 10})
