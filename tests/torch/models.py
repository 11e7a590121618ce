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
import math

import torch
import torch.nn as nn
import torchvision
from torchvision.models import (convnext, densenet, efficientnet, mnasnet, mobilenetv3, regnet, resnet, shufflenetv2,
                                vision_transformer)
from torchvision.models.googlenet import BasicConv2d, GoogLeNet, Inception


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
            if isinstance(mod, vision_transformer.VisionTransformer):
                # the head and the class token start at zero, which would make every output 0
                for t in (mod.heads.head.weight, mod.heads.head.bias, mod.class_token):
                    t.copy_(0.1 * torch.randn(t.shape, generator=g))
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


def small_mobilenet_v3():
    """mobilenet_v3_small at width 0.5 with a reduced tail, its first five
    inverted residuals of eleven: the first (squeeze-excitation with
    Hardsigmoid, ReLU, no expansion conv, stride 2), one without SE, one
    with the residual add, and two Hardswish blocks with SE and 5x5
    depthwise convs (one residual); then the last conv and the
    Linear-Hardswish-Dropout-Linear classifier"""
    settings, last = mobilenetv3._mobilenet_v3_conf("mobilenet_v3_small", width_mult=0.5, reduced_tail=True)
    return _perturb(mobilenetv3.MobileNetV3(settings[:5], last, num_classes=10))


def small_mnasnet():
    """mnasnet0_5 (torchvision's MNASNet at alpha 0.5) with its six stacks of
    inverted residuals cut to their first block, but for the first stack's
    second, which keeps a residual add: every kernel size (3, 5), stride
    and expansion factor (3, 6) of the full model, and its mean over the
    spatial dims before the classifier"""
    m = mnasnet.MNASNet(0.5, num_classes=10)
    for i in range(8, 14):
        m.layers[i] = m.layers[i][:2 if i == 8 else 1]
    return _perturb(m)


def small_googlenet():
    """torchvision's GoogLeNet forward at reduced width and depth: the stem
    (7x7 conv, ceil-mode max pools, 1x1 and 3x3 convs; BasicConv2d is conv,
    BatchNorm eps 0.001, ReLU), three of its nine Inception blocks (four
    branches: 1x1; 1x1-3x3; 1x1-3x3, torchvision's 3x3 for the paper's 5x5;
    a ceil-mode 3x3 max pool then 1x1; concatenated), the others
    nn.Identity, every max pool between them, the average pool, dropout and
    the classifier; with transform_input (the input's channels rescaled and
    concatenated), which the pretrained model uses; no auxiliary heads (the
    zoo's googlenet has them, but eval mode never runs them)"""
    B, I = BasicConv2d, Inception
    m = GoogLeNet(num_classes=10, aux_logits=False, transform_input=True, init_weights=False)
    m.conv1, m.conv2, m.conv3 = B(3, 8, kernel_size=7, stride=2, padding=3), B(8, 8, kernel_size=1), \
        B(8, 16, kernel_size=3, padding=1)
    m.inception3a = I(16, 8, 8, 8, 4, 4, 4)      # -> 24 channels
    m.inception4a = I(24, 8, 8, 12, 4, 4, 4)     # -> 28
    m.inception5b = I(28, 8, 8, 8, 4, 4, 4)      # -> 24
    for n in ("inception3b", "inception4b", "inception4c", "inception4d", "inception4e", "inception5a"):
        setattr(m, n, nn.Identity())
    m.fc = nn.Linear(24, 10)
    return _perturb(m)


def small_resnext():
    """resnext50_32x4d's Bottleneck (32 groups of 4 channels in the 3x3 conv
    at the first stage) with one block per stage instead of 3, 4, 6, 3:
    every stage's strided grouped conv and downsample, at full width"""
    return _perturb(resnet.ResNet(resnet.Bottleneck, [1, 1, 1, 1], groups=32, width_per_group=4, num_classes=10))


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


# ---- transformers: ViT (torchvision) and BERT (torchbench's BERT_pytorch) ----

def small_vit():
    """torchvision's VisionTransformer (the class of vit_b_16, standing in for
    timm's vision_transformer, which Debian does not package) at 32 x 32
    images in 8 x 8 patches (16 patches and the class token), 2 layers,
    4 heads, hidden 32"""
    return _perturb(vision_transformer.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                                         hidden_dim=32, mlp_dim=64, num_classes=10))


class BertAttention(nn.Module):
    """torchbench BERT_pytorch's MultiHeadedAttention without a mask: q, k, v
    projections, softmax(q k^T / sqrt(d)) v per head, an output projection"""

    def __init__(self, hidden, heads, dropout):
        super().__init__()
        self.h, self.d_k = heads, hidden // heads
        self.linear_layers = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(3)])
        self.output_linear = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        b = x.size(0)
        q, k, v = [lin(x).view(b, -1, self.h, self.d_k).transpose(1, 2) for lin in self.linear_layers]
        p = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k), dim=-1)
        y = torch.matmul(self.dropout(p), v)
        return self.output_linear(y.transpose(1, 2).contiguous().view(b, -1, self.h * self.d_k))


class BertLayer(nn.Module):
    """BERT_pytorch's TransformerBlock: pre-norm sublayers (x + dropout(f(norm(x))))
    around the attention and the GELU feed-forward, then dropout"""

    def __init__(self, hidden, heads, ff, dropout):
        super().__init__()
        self.attention = BertAttention(hidden, heads, dropout)
        self.input_norm = nn.LayerNorm(hidden)
        self.output_norm = nn.LayerNorm(hidden)
        self.feed_forward = nn.Sequential(nn.Linear(hidden, ff), nn.GELU(), nn.Dropout(dropout), nn.Linear(ff, hidden))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        x = x + self.dropout(self.attention(self.input_norm(x)))
        x = x + self.dropout(self.feed_forward(self.output_norm(x)))
        return self.dropout(x)


class Bert(nn.Module):
    """token ids [B, S] -> next-sentence logits [B, 2]: torchbench's BERT_pytorch
    (token embedding, sinusoidal position buffer, pre-norm transformer blocks)
    with its NextSentencePrediction head on the first token.  One input, so no
    segment embedding and no padding mask (every token attends to all)."""

    def __init__(self, vocab=1000, hidden=768, layers=12, heads=12, seq=128, dropout=0.1):
        super().__init__()
        self.token = nn.Embedding(vocab, hidden, padding_idx=0)
        pos = torch.arange(seq, dtype=torch.float32).unsqueeze(1)
        div = torch.exp(torch.arange(0, hidden, 2, dtype=torch.float32) * -(math.log(10000.0) / hidden))
        pe = torch.zeros(1, seq, hidden)
        pe[0, :, 0::2] = torch.sin(pos * div)
        pe[0, :, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)
        self.dropout = nn.Dropout(dropout)
        self.transformer_blocks = nn.ModuleList([BertLayer(hidden, heads, hidden * 4, dropout) for _ in range(layers)])
        self.next_sentence = nn.Linear(hidden, 2)

    def forward(self, tokens):
        x = self.dropout(self.token(tokens) + self.pe[:, :tokens.size(1)])
        for block in self.transformer_blocks:
            x = block(x)
        return self.next_sentence(x[:, 0])


def small_bert():
    """BERT_pytorch's architecture for CI: 2 layers, hidden 64, 4 heads, 16 tokens"""
    return Bert(vocab=100, hidden=64, layers=2, heads=4, seq=16).eval()


def zoo_bert():
    """BERT_pytorch's shape: hidden 768, 12 layers, 12 heads, sequence 128 (make test-zoo)"""
    return Bert(vocab=20000, hidden=768, layers=12, heads=12, seq=128).eval()


# ---- training (train_agree.py): the models with a loss and a torch.optim optimizer ----

def train_resnet18():
    """torchvision's resnet18 with 10 classes (trained on 32 x 32 images)"""
    return _perturb(torchvision.models.resnet18(num_classes=10)).train()


def train_bert():
    """BERT_pytorch at CI size without dropout (PyTorch's masks cannot be ampc's)"""
    return Bert(vocab=100, hidden=64, layers=2, heads=4, seq=16, dropout=0.0)


def sgd_momentum(model):
    return nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9, weight_decay=1e-4)


def adamw(model):
    return nn.CrossEntropyLoss(), torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
