"""tests/torch/models.py: the models tests/torch/run.sh exports with
tools/torch2amp (`tests/torch/models.py:resnet18`, ...).

The torchvision models are built with random weights (torch2amp seeds
torch.manual_seed before calling the factory) in eval mode.  A freshly
initialised BatchNorm is the identity (running mean 0, variance 1, weight 1,
bias 0), which would leave batch_norm's arguments untested, so every
BatchNorm gets random statistics and affine parameters, and the
classifier's last layer random biases, from a fixed generator.
"""
import torch
import torch.nn as nn
import torchvision


def _perturb(m, seed=7):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, nn.BatchNorm2d):
                c = mod.num_features
                mod.running_mean.copy_(0.1 * torch.randn(c, generator=g))
                mod.running_var.copy_(0.5 + torch.rand(c, generator=g))
                mod.weight.copy_(0.5 + torch.rand(c, generator=g))
                mod.bias.copy_(0.1 * torch.randn(c, generator=g))
                mod.num_batches_tracked.fill_(100)
    return m.eval()


def resnet18():
    return _perturb(torchvision.models.resnet18())


def mobilenet_v2():
    return _perturb(torchvision.models.mobilenet_v2())


def squeezenet1_1():
    return _perturb(torchvision.models.squeezenet1_1())


def alexnet():
    return _perturb(torchvision.models.alexnet())


class TinyEncoder(nn.Module):
    """token ids [B, 16] -> logits [B, 10]: an embedding, a two-layer
    nn.TransformerEncoder (batch_first, post-norm, GELU), mean pooling over
    the sequence, a linear head."""

    def __init__(self, vocab=100, d_model=32, nhead=4, ff=64, layers=2, classes=10):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=ff, dropout=0.1,
                                           activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens):
        h = self.encoder(self.embed(tokens))
        return self.head(h.mean(1))


def tiny_encoder():
    return TinyEncoder().eval()
