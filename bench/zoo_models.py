"""zoo_models.py: the models of `make bench-zoo` (bench/zoo_bench.py) and
their training objective.

ZOO lists, in the order of the seed's TorchDynamo table, each model's
factory in tests/torch/models.py (the full-size models `make test-zoo`
checks for correctness: torchvision's at 224 x 224 with random batch-norm
statistics, and BERT_pytorch's shape, hidden 768, 12 layers, 12 heads,
128 tokens, 20,000 words), its input per sample, the input's dtype and the number of classes.
torchvision's vit_b_16 stands in for the table's timm vision_transformer,
which Debian does not package.

sgd_momentum is the training step's loss and optimizer, for
`tools/torch2amp --train bench/zoo_models.py:sgd_momentum` and for
PyTorch's side alike: cross-entropy and SGD with momentum 0.9, lr 0.01,
as bench/resnet18_train.amp.
"""
import torch
import torch.nn as nn

# name: (factory in tests/torch/models.py, input shape per sample, input dtype, classes)
ZOO = {
    "resnet18": ("zoo_resnet18", (3, 224, 224), "f32", 1000),
    "resnet50": ("zoo_resnet50", (3, 224, 224), "f32", 1000),
    "resnext50_32x4d": ("zoo_resnext50_32x4d", (3, 224, 224), "f32", 1000),
    "alexnet": ("zoo_alexnet", (3, 224, 224), "f32", 1000),
    "mobilenet_v2": ("zoo_mobilenet_v2", (3, 224, 224), "f32", 1000),
    "mnasnet1_0": ("zoo_mnasnet1_0", (3, 224, 224), "f32", 1000),
    "vgg16": ("zoo_vgg16", (3, 224, 224), "f32", 1000),
    "bert": ("zoo_bert", (128,), "i64", 2),
    "squeezenet1_1": ("zoo_squeezenet1_1", (3, 224, 224), "f32", 1000),
    "vit_b_16": ("zoo_vit_b_16", (3, 224, 224), "f32", 1000),
}

LR, MOMENTUM = 0.01, 0.9


def sgd_momentum(model):
    return nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
