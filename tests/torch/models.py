"""tests/torch/models.py: the models tests/torch/run.sh exports with
tools/torch2amp (`tests/torch/models.py:resnet18`, ...).

The small_* models are torchvision's architectures at reduced width and
depth, for CI: each keeps the code paths of the full model that torch2amp
has to trace (shufflenet's channel split and shuffle, densenet's
concatenation of more than 8 tensors, convnext's LayerNorm2d and layer
scale with stochastic depth, regnet's `block1-0` keys, efficientnet's
squeeze-excitation and stochastic depth).  gated_mlp is a top-level
nn.Sequential (keys `0.weight`) around a module that unpacks a chunk;
lstm an nn.LSTM whose nested (output, (h, c)) result is unpacked;
lstm_classifier and gru_classifier the recurrent layers torch2amp maps to
ampc's lstm, gru and rnn_relu ops (bidirectional, two layers, batch_first
both ways, an initial state passed).
The full-size torchvision models are zoo_* (make test-zoo).

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
from torchvision.models import convnext, densenet, efficientnet, regnet, shufflenetv2


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
            if isinstance(mod, convnext.CNBlock):
                # initialised to 1e-6, which would hide the block's branch
                mod.layer_scale.copy_(0.5 + torch.rand(mod.layer_scale.shape, generator=g))
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


# ---- reduced torchvision architectures (CI) ----------------------------------

def small_shufflenet():
    return _perturb(shufflenetv2.ShuffleNetV2([2, 1, 1], [8, 16, 24, 32, 64], num_classes=10))


def small_densenet():
    return _perturb(densenet.DenseNet(growth_rate=4, block_config=(9, 2), num_init_features=8, bn_size=2,
                                      num_classes=10))


def small_convnext():
    S = convnext.CNBlockConfig
    return _perturb(convnext.ConvNeXt([S(16, 32, 1), S(32, None, 1)], stochastic_depth_prob=0.1, num_classes=10))


def small_regnet():
    p = regnet.BlockParams.from_init_params(depth=3, w_0=8, w_a=8.0, w_m=2.0, group_width=8)
    return _perturb(regnet.RegNet(p, num_classes=10))


def small_efficientnet():
    conf = [efficientnet.MBConvConfig(1, 3, 1, 16, 8, 1), efficientnet.MBConvConfig(6, 3, 2, 8, 16, 2)]
    return _perturb(efficientnet.EfficientNet(conf, 0.2, stochastic_depth_prob=0.2, num_classes=10))


class Gate(nn.Module):
    """[B, 2n] -> [B, n]: a, b = x.chunk(2); a * sigmoid(b)"""

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        return a * torch.sigmoid(b)


def gated_mlp():
    return nn.Sequential(nn.Linear(12, 32), Gate(), nn.LayerNorm(16), nn.Linear(16, 5)).eval()


class Recurrent(nn.Module):
    """[B, 6, 8] -> [B, 4]: a two-layer batch_first nn.LSTM from a zero state,
    its last layer's final hidden state (unpacked from the nested tuple) into a linear head"""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return self.head(h[-1] + y.mean(1))


def lstm():
    return Recurrent().eval()


class LstmClassifier(nn.Module):
    """[B, 6, 8] -> [B, 5]: a two-layer bidirectional batch_first nn.LSTM
    and a linear head on the last step's output (both directions)"""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 12, num_layers=2, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(24, 5)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y[:, -1])


def lstm_classifier():
    return LstmClassifier().eval()


class GruClassifier(nn.Module):
    """[B, 7, 8] -> [B, 3]: a two-layer bidirectional sequence-first nn.GRU,
    then an nn.RNN (relu, no biases) started from the GRU's last forward
    state, its final state into a linear head"""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 10, num_layers=2, bidirectional=True)
        self.rnn = nn.RNN(20, 10, nonlinearity="relu", bias=False)
        self.fc = nn.Linear(10, 3)

    def forward(self, x):
        y, h = self.gru(x.transpose(0, 1))
        z, hr = self.rnn(y, h[2:3])
        return self.fc(hr[0] + z.mean(0))


def gru_classifier():
    return GruClassifier().eval()


# ---- full-size torchvision models (make test-zoo) -----------------------------

def _zoo(name):
    def f():
        return _perturb(getattr(torchvision.models, name)())
    f.__name__ = "zoo_" + name
    return f


ZOO = ["resnet18", "resnet50", "resnext50_32x4d", "alexnet", "vgg16", "mobilenet_v2", "mobilenet_v3_small",
       "mnasnet1_0", "squeezenet1_1", "densenet121", "efficientnet_b0", "convnext_tiny", "shufflenet_v2_x0_5",
       "shufflenet_v2_x1_0", "regnet_x_400mf", "googlenet", "vit_b_16"]
for _n in ZOO:
    globals()["zoo_" + _n] = _zoo(_n)
