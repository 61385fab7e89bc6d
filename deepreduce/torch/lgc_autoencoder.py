"""LGC's autoencoder (Abrahamyan et al., arXiv 2103.08870): 1-D convolutions that code a
vector of top-k gradient values into a latent about a quarter of its length, and the
decoders that rebuild the values from it.

- Encoder: ``depth`` convolutions of kernel 4, stride 2 (each halves the length), each
  followed by LeakyReLU, then a 1x1 convolution to ``latent_channels`` channels. An input
  of k values is zero-padded to a multiple of 2**depth, so the latent holds
  latent_channels * ceil(k / 2**depth) floats (k/4 with the defaults, 4 channels and
  depth 4).
- Decoder: a 1x1 convolution back to the widest channel count, ``depth`` transposed
  convolutions of kernel 4, stride 2 (each doubles the length), then one convolution of
  kernel 3 to a single channel. In the parameter-server variant ('ps') the decoder also
  takes the worker's innovation (its few largest values, zero elsewhere) and a 0/1 mask of
  where they are as two extra input channels of that last convolution: one decoder per
  worker, each rebuilding its own worker's values from any worker's latent.
- Ring-allreduce variant ('rar'): one encoder, one decoder, trained so that latents add
  up: the decoder of the sum of the workers' latents gives the sum of their values.

Inputs are the workers' values on the leader's index set, in the order that sorts the
leader's values descending and divided by the leader's largest magnitude (so one
autoencoder serves tensors of any scale): a smooth curve for the leader, a noisy copy of
it for the others, far easier to code than values in index order.

Loss (equal weights): reconstruction (MSE) + similarity of the workers' latent codes (MSE
between every pair). One worker is picked per training step (by a generator seeded once
and kept in the state) to play the leader: the sample is ordered and scaled by its values;
in 'ps' every decoder reconstructs its worker from the picked worker's latent, so every
decoder learns to decode from any worker's latent, as the rotating leader needs.

Training data: a bounded buffer of recent samples; a sample is the (workers, k) matrix of
the workers' values on one common index set, in index order. Each ``train`` call takes
``iterations`` Adam steps, each on the newest sample and ``replay`` samples drawn from the
buffer.
"""
import collections

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

VARIANTS = ("ps", "rar")


def check_sizes(channels, latent_channels):
    """Refuse autoencoder sizes that cannot build a network, naming the key."""
    if not isinstance(channels, (list, tuple)) or not channels or any(not isinstance(c, int) or isinstance(c, bool) or c < 1 for c in channels):
        raise ValueError(f"lgc_channels must be a non-empty list of positive integers, got {channels!r}")
    if not isinstance(latent_channels, int) or isinstance(latent_channels, bool) or latent_channels < 1:
        raise ValueError(f"lgc_latent_channels must be a positive integer, got {latent_channels!r}")


class Encoder(nn.Module):
    def __init__(self, channels, latent_channels):
        super().__init__()
        widths = (1,) + tuple(channels)
        self.convs = nn.ModuleList(nn.Conv1d(a, b, 4, stride=2, padding=1) for a, b in zip(widths, widths[1:]))
        self.to_latent = nn.Conv1d(widths[-1], latent_channels, 1)

    def forward(self, x):  # (batch, 1, L) -> (batch, latent_channels, L / 2**depth)
        for conv in self.convs:
            x = F.leaky_relu(conv(x), 0.2)
        return self.to_latent(x)


class Decoder(nn.Module):
    def __init__(self, channels, latent_channels, innovation):
        super().__init__()
        widths = tuple(reversed(channels)) + (channels[0],)
        self.from_latent = nn.Conv1d(latent_channels, widths[0], 1)
        self.deconvs = nn.ModuleList(nn.ConvTranspose1d(a, b, 4, stride=2, padding=1)
                                     for a, b in zip(widths, widths[1:]))
        self.innovation = innovation
        self.out = nn.Conv1d(widths[-1] + (2 if innovation else 0), 1, 3, padding=1)

    def forward(self, z, innovation=None):  # (batch, latent_channels, l) -> (batch, 1, l * 2**depth)
        x = F.leaky_relu(self.from_latent(z), 0.2)
        for deconv in self.deconvs:
            x = F.leaky_relu(deconv(x), 0.2)
        if self.innovation:
            x = torch.cat([x, innovation, (innovation != 0).to(x.dtype)], dim=1)
        return self.out(x)


class LGCAutoencoder:
    """The encoder, the decoder(s), their optimizer and the training buffer of one LGC
    compressor. ``workers`` decoders in 'ps', one in 'rar'. All arrays in and out are
    float32 NumPy; values are already divided by the leader's scale."""

    def __init__(self, variant, workers, channels=(16, 32, 32, 16), latent_channels=4, lr=3e-3,
                 buffer_size=64, replay=1, iterations=1, seed=0):
        if variant not in VARIANTS:
            raise ValueError(f"lgc_variant must be one of {VARIANTS}, got {variant!r}")
        check_sizes(channels, latent_channels)
        self.variant = variant
        self.workers = int(workers)
        self.depth = len(channels)
        self.latent_channels = latent_channels
        self.replay = int(replay)
        self.iterations = int(iterations)
        # A private generator: no global torch RNG is read or reseeded.
        self.generator = torch.Generator().manual_seed(int(seed))
        init = torch.random.fork_rng(devices=[])
        with init:
            torch.manual_seed(int(seed))
            self.encoder = Encoder(channels, latent_channels)
            self.decoders = nn.ModuleList(Decoder(channels, latent_channels, variant == "ps")
                                          for _ in range(self.workers if variant == "ps" else 1))
        self.modules = nn.ModuleList([self.encoder, self.decoders])
        self.optimizer = torch.optim.Adam(self.modules.parameters(), lr=lr)
        self.buffer = collections.deque(maxlen=int(buffer_size))
        self.trained_steps = 0

    # -- sizes ---------------------------------------------------------------------------
    @property
    def block(self):
        """Lengths are padded to a multiple of this (the encoder halves them depth times)."""
        return 1 << self.depth

    def padded(self, k):
        return -(-k // self.block) * self.block

    def latent_size(self, k):
        """Floats in the latent of k values."""
        return self.latent_channels * self.padded(k) // self.block

    def _pad(self, rows):
        """(batch, k) float32 array -> (batch, 1, padded(k)) tensor."""
        rows = torch.from_numpy(np.ascontiguousarray(rows, dtype=np.float32))
        return F.pad(rows, (0, self.padded(rows.shape[-1]) - rows.shape[-1])).unsqueeze(1)

    # -- coding ------------------------------------------------------------------------
    @torch.no_grad()
    def encode(self, values):
        """Latent (flat float32, latent_size(k) entries) of k values."""
        return self.encoder(self._pad(values[None])).reshape(-1).numpy()

    @torch.no_grad()
    def decode(self, latent, k, worker=0, innovation=None):
        """k values rebuilt from a flat latent by decoder ``worker`` ('ps': with that
        worker's innovation, k floats, zero where it sent nothing)."""
        z = torch.from_numpy(np.ascontiguousarray(latent, dtype=np.float32)).reshape(
            1, self.latent_channels, -1)
        inn = None if innovation is None else self._pad(innovation[None])
        return self.decoders[worker](z, inn).reshape(-1)[:k].numpy().copy()

    # -- training ------------------------------------------------------------------------
    def add_sample(self, rows, innovation_count):
        """Keep one (workers, k) sample (and how many innovation entries each worker sends
        for this tensor) in the bounded buffer."""
        self.buffer.append((np.array(rows, dtype=np.float32), int(innovation_count)))

    def train(self):
        """``iterations`` Adam steps, each on the newest sample and up to ``replay`` older
        ones. Returns the last step's loss."""
        loss = 0.0
        for _ in range(self.iterations if self.buffer else 0):
            loss = self._train_step()
        return loss

    def _train_step(self):
        picks = [len(self.buffer) - 1]
        if len(self.buffer) > 1:
            older = torch.randint(0, len(self.buffer) - 1, (self.replay,), generator=self.generator)
            picks += older.tolist()
        self.optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for i in picks:
            rows, innovation_count = self.buffer[i]
            loss = self._loss(rows, innovation_count) / len(picks)
            loss.backward()
            total += float(loss.detach())
        self.optimizer.step()
        self.trained_steps += 1
        return total

    def _as_led_by(self, rows, leader):
        """``rows`` ordered by the ``leader`` row's values, descending, and divided by its
        largest magnitude: what stage 3 codes when that worker leads."""
        from ..compressors.lgc import scale_of, value_order
        return rows[:, value_order(rows[leader])] / scale_of(rows[leader])

    def _loss(self, rows, innovation_count):
        k = rows.shape[1]
        leader = int(torch.randint(0, len(rows), (1,), generator=self.generator))
        x = self._pad(self._as_led_by(rows, leader))  # (workers, 1, L)
        z = self.encoder(x)                      # (workers, C, l)
        similarity = x.new_zeros(())
        if len(rows) > 1:
            diffs = z.unsqueeze(0) - z.unsqueeze(1)
            similarity = diffs.pow(2).mean(dim=(2, 3)).sum() / (len(rows) * (len(rows) - 1))
        if self.variant == "ps":
            innovation = x * innovation_mask(x, innovation_count)
            recon = sum(F.mse_loss(self.decoders[j](z[leader:leader + 1], innovation[j:j + 1])[..., :k],
                                   x[j:j + 1, :, :k]) for j in range(len(rows))) / len(rows)
        else:
            decoder = self.decoders[0]
            recon = (F.mse_loss(decoder(z)[..., :k], x[..., :k])
                     + F.mse_loss(decoder(z.sum(0, keepdim=True))[..., :k], x.sum(0, keepdim=True)[..., :k]))
        return recon + similarity

    # -- state -----------------------------------------------------------------------------
    def flat_weights(self):
        return torch.nn.utils.parameters_to_vector(self.modules.parameters()).detach().numpy().copy()

    def set_flat_weights(self, flat):
        torch.nn.utils.vector_to_parameters(torch.from_numpy(np.asarray(flat, dtype=np.float32)).clone(),
                                            self.modules.parameters())

    def state_dict(self):
        return {"modules": self.modules.state_dict(), "optimizer": self.optimizer.state_dict(),
                "buffer": list(self.buffer), "generator": self.generator.get_state(),
                "trained_steps": self.trained_steps}

    def load_state_dict(self, state):
        self.modules.load_state_dict(state["modules"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.buffer.clear()
        self.buffer.extend((np.array(rows, dtype=np.float32), int(n)) for rows, n in state["buffer"])
        self.generator.set_state(state["generator"])
        self.trained_steps = int(state["trained_steps"])


def innovation_mask(x, count):
    """1 at the ``count`` largest |x| of each row of (rows, 1, L), 0 elsewhere (the
    training-side twin of the C top-k that picks the innovation on the wire)."""
    top = x.abs().topk(count, dim=-1).indices
    return torch.zeros_like(x).scatter_(-1, top, 1.0)
