#!/usr/bin/env python3
"""The expected values of tests/train/bn_torch.c, computed once with PyTorch
(CPU, float32): three SGD steps of tests/train/bn_torch.amp, whose
batch_norm trains (batch statistics; running statistics updated with
momentum 0.1 and the unbiased variance).  Prints the C initialisers the
test holds.  Run: /usr/bin/python3 tests/train/bn_torch.py (python3-torch)"""
import torch
import torch.nn.functional as F

B, STEPS = 4, 3


def x_of(k):  # the inputs, exact in f32: (k*7 + i*3 + j*5) % 11 - 5, over 4
    return torch.tensor([[((k * 7 + i * 3 + j * 5) % 11 - 5) / 4.0 for j in range(3)] for i in range(B)])


w = torch.tensor([[((i * 3 + j) % 5 - 2) / 4.0 for j in range(3)] for i in range(3)], requires_grad=True)
b = torch.tensor([0.125, -0.25, 0.375], requires_grad=True)
g = torch.tensor([1.0, 0.5, 1.5], requires_grad=True)
beta = torch.tensor([0.0, 0.25, -0.5], requires_grad=True)
rm = torch.tensor([0.5, -0.5, 0.0])
rv = torch.tensor([1.0, 2.0, 0.5])
losses = []
for k in range(STEPS):
    x = x_of(k)
    h = F.batch_norm(F.linear(x, w, b), rm, rv, g, beta, training=True, momentum=0.1, eps=1e-5)
    loss = (h * h * x).mean()
    losses.append(loss.item())
    for p in (w, b, g, beta):
        p.grad = None
    loss.backward()
    with torch.no_grad():
        for p in (w, b, g, beta):
            p -= 0.1 * p.grad


def c(name, t):
    vals = ", ".join(repr(float(v)) for v in t.detach().flatten())
    print("static const double %s[] = {%s};" % (name, vals))


c("want_loss", torch.tensor(losses))
c("want_fc_weight", w)
c("want_fc_bias", b)
c("want_bn_weight", g)
c("want_bn_bias", beta)
c("want_running_mean", rm)
c("want_running_var", rv)
