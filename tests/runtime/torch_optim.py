#!/usr/bin/env python3
"""torch_optim.py - expected values for test_train.c from torch.optim.

Prints the C table `torch_cases` that test_train.c embeds between its
"BEGIN torch_optim.py" and "END torch_optim.py" markers, so the test needs no
torch at run time.  Regenerate with

    /usr/bin/python3 tests/runtime/torch_optim.py > /tmp/cases.inc

and paste the output over the old table.

Each case runs one optimizer over NCALLS calls on NP parameters, in float64
and in float32.  Inputs are small dyadic rationals, exact in both dtypes and
generated the same way in test_train.c (init_p, grad_of).  Call SKIP_CALL is
the one where GradScaler found an inf: PyTorch skips optimizer.step(), the
sync-free kernel is called with found_inf = 1 and the step count stays.
"""
import sys

try:
    import torch
except ImportError:
    sys.exit(77)

NP, NCALLS, SKIP_CALL = 7, 6, 3


def init_p(i):
    return ((i * 37) % 11 - 5) / 8.0


def grad_of(k, i):
    # step 0 large, so that amsgrad's max keeps the first v for a while
    return ((i * 13 + k * 7) % 17 - 8) / 16.0 * (1 + k % 3) * (4 if k == 0 else 1)


SGD = [
    ("sgd plain", dict(lr=0.1)),
    ("sgd momentum", dict(lr=0.1, momentum=0.9)),
    ("sgd nesterov", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("sgd dampening wd", dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("sgd maximize wd", dict(lr=0.1, momentum=0.5, weight_decay=0.1, maximize=True)),
    ("sgd nesterov wd maximize", dict(lr=0.02, momentum=0.8, nesterov=True, weight_decay=0.05, maximize=True)),
]
ADAM = [
    ("adam", False, dict(lr=0.01)),
    ("adam amsgrad", False, dict(lr=0.01, amsgrad=True)),
    ("adam wd", False, dict(lr=0.01, weight_decay=0.1)),
    ("adam all", False, dict(lr=0.005, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05, amsgrad=True, maximize=True)),
    ("adamw", True, dict(lr=0.01, weight_decay=0.01)),
    ("adamw all", True, dict(lr=0.01, betas=(0.85, 0.995), weight_decay=0.1, amsgrad=True, maximize=True)),
]


def run(make_opt, dtype, state_keys):
    p = torch.tensor([init_p(i) for i in range(NP)], dtype=dtype, requires_grad=True)
    opt = make_opt([p])
    rows = []
    for k in range(NCALLS):
        p.grad = torch.tensor([grad_of(k, i) for i in range(NP)], dtype=dtype)
        if k != SKIP_CALL:
            opt.step()
        rows.append(p.detach().clone())
    st = opt.state[p]
    states = [st[key] if st.get(key) is not None else torch.zeros(NP, dtype=dtype) for key in state_keys]
    return rows, states


def c_list(t):
    return "{ " + ", ".join(repr(float(x)) for x in t.tolist()) + " }"


def emit(name, sgd, a, make_opt, state_keys):
    print("    { %s, %s," % ('"' + name + '"', "1" if sgd is None else "0"))
    if sgd is not None:
        print("      { %r, %r, %r, %r, %d, %d }," % (
            sgd.get("lr"), sgd.get("momentum", 0.0), sgd.get("dampening", 0.0),
            sgd.get("weight_decay", 0.0), sgd.get("nesterov", False), sgd.get("maximize", False)))
        print("      { 0, 0, 0, 0, 0, 0, 0, 0 },")
    else:
        kw, decoupled = a
        b1, b2 = kw.get("betas", (0.9, 0.999))
        wd = kw.get("weight_decay", 0.01 if decoupled else 0.0)
        print("      { 0, 0, 0, 0, 0, 0 },")
        print("      { %r, %r, %r, %r, %r, %d, %d, %d }," % (
            kw["lr"], b1, b2, kw.get("eps", 1e-8), wd, kw.get("amsgrad", False),
            kw.get("maximize", False), decoupled))
    print("      {")
    for dtype in (torch.float64, torch.float32):
        rows, states = run(make_opt, dtype, state_keys)
        print("        { {")
        for r in rows:
            print("            %s," % c_list(r))
        print("          }, {")
        for s in states:
            print("            %s," % c_list(s))
        print("          } },")
    print("      } },")


def main():
    print("/* BEGIN torch_optim.py (torch %s) */" % torch.__version__)
    print("static const torch_case torch_cases[] = {")
    for name, kw in SGD:
        emit(name, kw, None, lambda ps, kw=kw: torch.optim.SGD(ps, foreach=False, **kw), ["momentum_buffer"])
    for name, decoupled, kw in ADAM:
        cls = torch.optim.AdamW if decoupled else torch.optim.Adam
        emit(name, None, (kw, decoupled), lambda ps, kw=kw, cls=cls: cls(ps, foreach=False, **kw),
             ["exp_avg", "exp_avg_sq", "max_exp_avg_sq"])
    print("};")
    print("/* END torch_optim.py */")


main()
