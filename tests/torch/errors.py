#!/usr/bin/python3
"""tests/torch/errors.py: what tools/torch2amp says about models it cannot
convert, and the spellings it gives keys the .amp language cannot write yet.

    /usr/bin/python3 tests/torch/errors.py

Each case runs torch2amp's main() in this process on a module defined
below and checks the exit status and the one-line message: an unmapped op
names the aten op and the module path where it ran; a size that depends on
the batch outside a reshape names the op; two keys that would be spelled
alike are refused; a top-level nn.Sequential's keys convert, spelled
`_0.weight`; an LSTM with proj_size is refused, and an nn.RNN becomes one
rnn_relu call; and --train refuses an optimizer it cannot map or one that
leaves parameters out, and writes a train section for one it can.  Prints
ok/FAIL per case and "torch-errors: P passed, F
failed"; exits 1 on a failure.  A few seconds.
"""
import contextlib
import io
import os
import sys
import tempfile

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import emulate  # noqa: E402

T2A = emulate.torch2amp()


class Flip(nn.Module):
    def forward(self, x):
        return torch.flip(x, [1])


class Unmapped(nn.Module):
    """an op ampc has no mapping for, two modules deep"""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.body = nn.Sequential(nn.ReLU(), Flip())

    def forward(self, x):
        return self.body(self.fc(x))


class BatchOnes(nn.Module):
    """a tensor made from Python data in forward"""

    def forward(self, x):
        return x + torch.ones(x.shape[0], 4)


class Keyworded(nn.Module):
    """a submodule named `block`, an .amp keyword, whose parameters the forward
    reads itself (so no statement is named after it)"""

    def __init__(self):
        super().__init__()
        self.block = nn.Linear(4, 4)

    def forward(self, x):
        return torch.tanh(nn.functional.linear(x, self.block.weight, self.block.bias))


class Renamed(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.tanh(self.fc(x))


class Clash(nn.Module):
    """keys `a-b.weight` and `a_b.weight`: both spelled a_b.weight"""

    def __init__(self):
        super().__init__()
        self.add_module("a-b", nn.Linear(4, 4))
        self.a_b = nn.Linear(4, 4)

    def forward(self, x):
        return self.a_b(getattr(self, "a-b")(x))


class Projected(nn.Module):
    """nn.LSTM with proj_size, which ampc's lstm has no form for"""

    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 8, proj_size=3, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0]


class Relu(nn.Module):
    """nn.RNN with relu, two layers, no biases: one rnn_relu call"""

    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(4, 5, num_layers=2, nonlinearity="relu", bias=False, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[1]


def export(module, shape, train=None):
    """(exit status, stderr, the .amp text) of torch2amp on module; train:
    fn(model) -> (loss, optimizer), passed as --train"""
    d = tempfile.mkdtemp(prefix="torch2amp-errors.")
    T2A_MODULES["m"] = module
    T2A_MODULES["train"] = train
    err = io.StringIO()
    status = 0
    with contextlib.redirect_stderr(err):
        try:
            T2A.main(["%s:T2A_MODULES.m" % __name__, "-o", os.path.join(d, "m.amp"),
                      "--weights", os.path.join(d, "m.safetensors"), "--input-shape", shape]
                     + (["--train", "%s:T2A_MODULES.train" % __name__] if train else []))
        except SystemExit as e:
            status = e.code
    amp = os.path.join(d, "m.amp")
    text = open(amp).read() if os.path.exists(amp) else ""
    return status, err.getvalue().strip(), text


class _Modules(dict):
    def __getattr__(self, k):
        return self[k]


T2A_MODULES = _Modules()     # torch2amp's MODULE_SPEC is __main__:T2A_MODULES.m


def main():
    passed = failed = 0

    def check(what, cond, detail):
        nonlocal passed, failed
        if cond:
            passed += 1
            print("ok   %s" % what)
        else:
            failed += 1
            print("FAIL %s: %s" % (what, detail))

    st, err, _ = export(Unmapped(), "1,4")
    check("an unmapped op: exit 1, the aten op and its module path", st == 1 and err ==
          "torch2amp: error: aten.flip.default (module path 'body.1'): this op has no ampc mapping "
          "(see docs/pytorch.md)", "%s %r" % (st, err))
    st, err, _ = export(BatchOnes(), "1,4")
    check("a batch-sized tensor made in forward: exit 1, naming aten.ones", st == 1 and
          err.startswith("torch2amp: error: aten.ones.default (module path ''): an argument depends on the batch size")
          and err.count("\n") == 0, "%s %r" % (st, err))
    st, err, _ = export(Clash(), "1,4")
    check("two keys spelled alike: exit 1, naming both", st == 1 and "'a-b.weight'" in err and "'a_b.weight'" in err
          and "a_b.weight in the .amp language" in err, "%s %r" % (st, err))
    st, err, text = export(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)), "1,4")
    check("a top-level nn.Sequential converts, named Sequential, 0.weight spelled _0.weight, output y",
          st == 0 and "model Sequential(B)" in text and "param _0.weight: f32[8, 4]" in text
          and "y = linear(" in text and "output y" in text, "%s %r" % (st, err or text[:400]))
    st, err, _ = export(Projected(), "1,3,4")
    check("an LSTM with proj_size: exit 1, saying so", st == 1 and err.endswith("nn.LSTM with proj_size is not supported")
          and err.count("\n") == 0, "%s %r" % (st, err))
    st, err, text = export(Relu(), "1,3,4")
    check("an nn.RNN converts to one rnn_relu call with its state_dict keys, from zeros",
          st == 0 and "rnn_h0 = zeros(2, B, 5)" in text and "= rnn_relu(x, rnn_h0, [rnn.weight_ih_l0, "
          "rnn.weight_hh_l0, rnn.weight_ih_l1, rnn.weight_hh_l1], num_layers=2, has_biases=false, batch_first=true)"
          in text, "%s %r" % (st, err or text[:600]))
    st, err, _ = export(nn.Sequential(nn.Linear(4, 2)), "1,4",
                        lambda m: (nn.CrossEntropyLoss(), torch.optim.RMSprop(m.parameters(), lr=0.1)))
    check("--train with an unmapped optimizer: exit 1, naming it", st == 1 and err ==
          "torch2amp: error: the optimizer torch.optim.RMSprop has no ampc mapping (mapped: torch.optim.SGD, "
          "Adam, AdamW)", "%s %r" % (st, err))
    lin = nn.Linear(4, 2)
    st, err, _ = export(nn.Sequential(lin, nn.ReLU(), nn.Linear(2, 2)), "1,4",
                        lambda m: (nn.CrossEntropyLoss(), torch.optim.SGD(lin.parameters(), lr=0.1)))
    check("--train with an optimizer over some parameters: exit 1, naming one left out", st == 1 and err ==
          "torch2amp: error: the optimizer torch.optim.SGD must hold exactly the model's parameters "
          "(2.weight is not in it)", "%s %r" % (st, err))
    st, err, text = export(nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.Dropout(0.25)), "1,4",
                           lambda m: (nn.MSELoss(reduction="sum"),
                                      torch.optim.Adam(m.parameters(), lr=0.01, betas=(0.8, 0.999))))
    check("--train: batch_norm on batch statistics, dropout kept, mse_loss, adam with its non-default settings",
          st == 0 and "input target: f32[B, 3]" in text and "training=true" in text and "dropout(" in text
          and 'mse_loss(y, target, reduction="sum")' in text and "optimizer = adam(lr=0.01, beta1=0.8)" in text
          and "minimize loss" in text, "%s %r" % (st, err or text))
    st, err, text = export(nn.Sequential(Keyworded(), nn.ReLU(), Keyworded()), "1,4")
    check("modules alike whose keys start with a keyword inside them stay inline (block.weight is no name there)",
          st == 0 and "block Keyworded" not in text and "_0.block.weight" in text,
          "%s %r" % (st, err or text))
    st, err, text = export(nn.Sequential(Renamed(), nn.ReLU(), Renamed()), "1,4")
    check("modules alike become one block: declared in it, instantiated under their paths",
          st == 0 and "block Renamed(x) {" in text and "  param fc.weight: f32[4, 4]" in text
          and "module _0 = Renamed()" in text and "module _2 = Renamed()" in text, "%s %r" % (st, err or text))
    print("torch-errors: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
