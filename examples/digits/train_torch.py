#!/usr/bin/python3
"""train_torch.py: the PyTorch reference for train.c.  Trains the same two
models (mlp.amp, cnn.amp) on the same data (digits.bin, same split), with
the same initialisation scheme (PyTorch's defaults), batch size, epochs and
optimizer, and prints the test accuracy after every epoch, so the C
program's numbers can be put beside these.

    /usr/bin/python3 examples/digits/train_torch.py [--model mlp|cnn|both]
        [--epochs N] [--autocast] [--lr LR] [--seed S]

The optimizer's hyperparameters are read from the model's train { } section
(`optimizer = sgd(lr=..., momentum=...)`), so the two cannot drift apart;
--lr overrides the file's value for experiments.  --autocast trains under
torch.autocast('cpu', dtype=torch.bfloat16), as ampc -t cpu does; without
it, in fp32.  The random streams (init, shuffling) are torch's, not
train.c's, so the two agree in behaviour, not bit for bit.
"""
import argparse
import os
import re
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH = 64


def load_digits_bin(path):
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 16 or blob[:8] != b"DIGITS01":
        sys.exit("%s: not a digits file (bad magic)" % path)
    count, n_train = struct.unpack("<II", blob[8:16])
    if len(blob) != 16 + 65 * count or n_train > count:
        sys.exit("%s: truncated or inconsistent" % path)
    rec = torch.frombuffer(bytearray(blob[16:]), dtype=torch.uint8).view(count, 65)
    x = rec[:, :64].float() / 16.0
    y = rec[:, 64].long()
    return x[:n_train], y[:n_train], x[n_train:], y[n_train:]


class Mlp(nn.Module):                       # examples/digits/mlp.amp
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class Cnn(nn.Module):                       # examples/digits/cnn.amp
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        x = x.view(-1, 1, 8, 8)
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)     # [B, 16, 4, 4]
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)     # [B, 32, 2, 2]
        return self.fc(torch.flatten(x, 1))


def sgd_settings(amp_file):
    """lr and momentum from `optimizer = sgd(lr=..., momentum=...)`."""
    with open(amp_file) as f:
        text = re.sub(r"#[^\n]*", "", f.read())
    m = re.search(r"optimizer\s*=\s*sgd\s*\(([^)]*)\)", text)
    if not m:
        sys.exit("%s: no `optimizer = sgd(...)` in a train section" % amp_file)
    args = dict(re.findall(r"(\w+)\s*=\s*([0-9.eE+-]+)", m.group(1)))
    return float(args["lr"]), float(args.get("momentum", 0))


def accuracy(model, x, y, use_autocast):
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_autocast):
        return (model(x).argmax(1) == y).float().mean().item()


def train(name, epochs, use_autocast, lr_override, seed, data):
    xtr, ytr, xte, yte = data
    lr, momentum = sgd_settings(os.path.join(HERE, name + ".amp"))
    if lr_override is not None:
        lr = lr_override
    torch.manual_seed(seed)
    model = {"mlp": Mlp, "cnn": Cnn}[name]()
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    print("%s: sgd(lr=%g, momentum=%g), batch %d, %s"
          % (name, lr, momentum, BATCH, "autocast cpu bf16" if use_autocast else "fp32"))
    n = xtr.shape[0]
    acc = 0.0
    for epoch in range(1, epochs + 1):
        perm = torch.randperm(n)
        total, correct = 0.0, 0
        for i in range(0, n, BATCH):        # the last batch is partial
            idx = perm[i:i + BATCH]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_autocast):
                logits = model(xtr[idx])
                loss = F.cross_entropy(logits, ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * idx.numel()
            correct += (logits.argmax(1) == ytr[idx]).sum().item()
        acc = accuracy(model, xte, yte, use_autocast)
        print("  epoch %2d  loss %.4f  train acc %.4f  test acc %.4f"
              % (epoch, total / n, correct / n, acc))
    return acc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=["mlp", "cnn", "both"], default="both")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--autocast", action="store_true")
    ap.add_argument("--lr", type=float)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default=os.path.join(HERE, "digits.bin"))
    a = ap.parse_args()
    data = load_digits_bin(a.data)
    for name in (["mlp", "cnn"] if a.model == "both" else [a.model]):
        train(name, a.epochs, a.autocast, a.lr, a.seed, data)


if __name__ == "__main__":
    main()
