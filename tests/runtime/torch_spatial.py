"""PyTorch's f64 results for the fixed cases of tests/runtime/test_conv.c,
test_pool.c and test_index.c, which pin the kernels to PyTorch's semantics.

Usage: torch_spatial.py OP INT... ; prints the result values (and, for
max_pool, then the indices), one per line. Inputs are made by inputs(),
the same formula as the C tests' tensor_pattern(), so both sides see the
same tensors. Exit status 77: torch is not installed.

torch_spatial.py --serve: reads one case per line (OP INT...) on stdin and
answers each with its values, one per line, then a line "end" (or "error
MESSAGE" then "end"), so a test binary imports torch once for all its
cases (kernel_test_util.h's torch_values).
"""
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit(77)


def inputs(shape, salt):
    n = 1
    for s in shape:
        n *= s
    v = [(((i * 7919 + salt * 131) % 23) - 11) / 8.0 for i in range(n)]
    return torch.tensor(v, dtype=torch.float64).reshape(shape)


def values(argv):
    """The result values of one case, argv = [OP, INT...]."""
    op = argv[0]
    a = argv[1:]
    extra = []
    if op in ("conv", "conv_transpose"):
        # nspatial N Cin Cout groups then per dim: in k stride pad dil outpad
        ns, n, ci, co, g = (int(v) for v in a[:5])
        dims = [[int(v) for v in a[5 + 6 * i:11 + 6 * i]] for i in range(ns)]
        ins = [d[0] for d in dims]
        k = [d[1] for d in dims]
        x = inputs([n, ci] + ins, 1)
        b = inputs([co], 3)
        kw = dict(stride=[d[2] for d in dims], padding=[d[3] for d in dims], dilation=[d[4] for d in dims], groups=g)
        if op == "conv":
            w = inputs([co, ci // g] + k, 2)
            y = [F.conv1d, F.conv2d, F.conv3d][ns - 1](x, w, b, **kw)
        else:
            w = inputs([ci, co // g] + k, 2)
            y = [F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d][ns - 1](
                x, w, b, output_padding=[d[5] for d in dims], **kw)
    elif op == "conv_tbc":
        t, b_, i, k, o, pad = (int(v) for v in a)
        y = torch.conv_tbc(inputs([t, b_, i], 1), inputs([k, i, o], 2), inputs([o], 3), pad)
    elif op in ("max_pool", "avg_pool"):
        # nspatial planes ceil count_include_pad divisor_override, per dim: in k stride pad dil
        ns, planes, ceil, cip, dov = (int(v) for v in a[:5])
        dims = [[int(v) for v in a[5 + 5 * i:10 + 5 * i]] for i in range(ns)]
        x = inputs([1, planes] + [d[0] for d in dims], 1)
        k, s, p = [d[1] for d in dims], [d[2] for d in dims], [d[3] for d in dims]
        if op == "max_pool":
            y, idx = [F.max_pool1d, F.max_pool2d, F.max_pool3d][ns - 1](
                x, k, s, p, [d[4] for d in dims], ceil_mode=bool(ceil), return_indices=True)
            extra = idx.flatten().tolist()
        elif ns == 1:
            y = F.avg_pool1d(x, k, s, p, ceil_mode=bool(ceil), count_include_pad=bool(cip))
        else:
            y = [None, F.avg_pool2d, F.avg_pool3d][ns - 1](
                x, k, s, p, ceil_mode=bool(ceil), count_include_pad=bool(cip), divisor_override=dov or None)
    elif op == "adaptive_avg_pool":
        ns, planes = int(a[0]), int(a[1])
        ins, outs = [int(v) for v in a[2:2 + ns]], [int(v) for v in a[2 + ns:2 + 2 * ns]]
        y = [F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d][ns - 1](
            inputs([1, planes] + ins, 1), outs)
    elif op == "upsample":
        # nspatial planes mode align_corners, per dim: in out scale (0: by size)
        ns, planes, mode, align = (int(v) for v in a[:4])
        dims = [a[4 + 3 * i:7 + 3 * i] for i in range(ns)]
        x = inputs([1, planes] + [int(d[0]) for d in dims], 1)
        name = ["nearest", ["linear", "bilinear", "trilinear"][ns - 1], "bicubic"][mode]
        kw = {} if mode == 0 else {"align_corners": bool(align)}
        scales = [float(d[2]) for d in dims]
        if all(s > 0 for s in scales):
            y = F.interpolate(x, scale_factor=scales, mode=name, recompute_scale_factor=False, **kw)
        else:
            y = F.interpolate(x, size=[int(d[1]) for d in dims], mode=name, **kw)
        assert list(y.shape[2:]) == [int(d[1]) for d in dims], y.shape
    elif op == "gather":
        # dim, x shape (2 dims), index shape (2 dims), then the indices
        dim, x0, x1, i0, i1 = (int(v) for v in a[:5])
        index = torch.tensor([int(v) for v in a[5:]]).reshape(i0, i1)
        y = torch.gather(inputs([x0, x1], 1), dim, index)
    elif op == "scatter_add":
        dim, y0, y1, i0, i1 = (int(v) for v in a[:5])
        index = torch.tensor([int(v) for v in a[5:]]).reshape(i0, i1)
        y = inputs([y0, y1], 2).scatter_add(dim, index, inputs([i0, i1], 1))
    else:
        raise ValueError("unknown op " + op)
    return [repr(float(v)) for v in y.flatten().tolist() + extra]


def serve():
    for line in sys.stdin:
        try:
            out = values(line.split())
        except Exception as e:  # a bad case fails that case, not the server
            out = ["error " + " ".join(str(e).split())]
        sys.stdout.write("\n".join(out + ["end"]) + "\n")
        sys.stdout.flush()


if sys.argv[1:2] == ["--serve"]:
    serve()
else:
    print("\n".join(values(sys.argv[1:])))
