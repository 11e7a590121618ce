"""tests/torch/emulate.py: run a PyTorch model with the per-op dtypes ampc
chose for it, in PyTorch, as a reference for `ampc -t tpu|gpu|cpu`.

There is no TPU or GPU here, and PyTorch 1.13's CPU autocast has neither
the TPU (XLA) nor the CUDA lists, so compare.py checks ampc against an
emulation instead: the graph tools/torch2amp records (its trace_graph:
mapped torch.nn modules as call_module nodes, the aten ops that ran
elsewhere as call_function nodes) run by an fx interpreter that, for every
op,

  - reads the dtype decision ampc made for it from `ampc --explain=json`
    (the dtypes of its tensor inputs after autocast's casts, and of its
    result);
  - rounds each floating input, parameters included, to that input's dtype;
  - computes in float32 (PyTorch 1.13's CPU has few f16 kernels, and
    float32 is what ampc's bf16/f16 kernels compute in);
  - rounds the result once to the op's output dtype
    (t.to(torch.float16).to(torch.float32)), as ampc's kernels do: one
    rounding per output element.

Values are carried as float32 tensors holding values exact in their dtype,
so converting to a wider dtype (a promotion cast) is exact on both sides.

Pairing graph nodes with explain entries: `torch2amp --op-map` lists every
node, in graph order, with the .amp lines of the statements it became;
explain's ops carry their line.  A node that became one numeric op (conv2d,
batch_norm, add, ...) possibly wrapped in views (flatten, reshape) is run as
PyTorch runs it, with the rounding above.  nn.TransformerEncoder, which
torch2amp expands into some twenty ops a layer, is computed here op by op,
written from PyTorch's definition of the layer (in-projection rows q, k, v,
heads, softmax(q k^T / sqrt(d)) v, out-projection, residual adds, layer
norms, feed-forward), taking explain's entries one by one in execution
order; every entry's op name must be the one this code computes, so a
different expansion is an error, not a silent mismatch.

`exact=True` runs the same interpreter in float64 with no rounding at all:
compare.py checks that this reproduces the module's own float64 forward to
1e-10, which proves the interpreter (the hand-written encoder included)
computes the module's function, so that what remains in the rounded run is
rounding alone.

Forced is the same emulation fed ampc's own value of every statement
(compare.py's probe makes them all outputs): each statement is then
emulated from exactly the inputs ampc's op had, which compares ampc with
the emulation op by op, before differences compound through the layers.
"""
import math

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

LOW = {"bf16": torch.bfloat16, "f16": torch.float16}
FLOAT = ("f64", "f32", "bf16", "f16")
# pure data movement: exact in every dtype, so they neither round nor count
VIEWS = {"reshape", "permute", "narrow", "flatten", "transpose", "squeeze", "unsqueeze", "expand", "slice",
         "cat", "stack"}
# a module's floating parameters and buffers in the order ampc's op takes them
# after the input (torch2amp's mapping): explain lists their dtypes in that order
PARAM_ORDER = [
    (nn.modules.conv._ConvNd, ["weight", "bias"]),
    (nn.Linear, ["weight", "bias"]),
    (nn.modules.batchnorm._BatchNorm, ["running_mean", "running_var", "weight", "bias"]),
    (nn.LayerNorm, ["weight", "bias"]),
    (nn.GroupNorm, ["weight", "bias"]),
    (nn.Embedding, ["weight"]),
]


class EmulationError(Exception):
    pass


def _torch2amp():
    """tools/torch2amp as a module (it is a script without .py)"""
    import importlib.machinery
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "torch2amp")
    loader = importlib.machinery.SourceFileLoader("torch2amp", path)
    spec = importlib.util.spec_from_loader("torch2amp", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


_T2A = []


def torch2amp():
    if not _T2A:
        _T2A.append(_torch2amp())
    return _T2A[0]


# (id(module), module dtype, input shape, input dtype) -> (module, graph): compare.py
# emulates one module on every target, and the graph does not change
_TRACED = {}


def trace(module, x):
    """the fx graph tools/torch2amp records (its trace_graph: the eager run at
    batches 2 and 3, mapped torch.nn modules as calls, aten ops otherwise), so
    that node names match its --op-map; x gives the input's shape and dtype.
    Traced once per module, parameter dtype and input."""
    p = next(iter(module.parameters()), None)
    key = (id(module), p.dtype if p is not None else None, tuple(x.shape[1:]), x.dtype)
    hit = _TRACED.get(key)
    if hit is not None and hit[0] is module:
        return hit[1]
    inputs = []
    for b in (2, 3):
        torch.manual_seed(1234)
        shp = [b] + list(x.shape[1:])
        inputs.append(torch.randn(shp, dtype=x.dtype) if x.is_floating_point() else torch.zeros(shp, dtype=x.dtype))
    gm, _, _ = torch2amp().trace_graph(module, inputs)
    _TRACED[key] = (module, gm)
    return gm


class Ops:
    """the explain entries of one fx node, taken in execution order"""

    def __init__(self, node, ops):
        self.node, self.ops, self.i = node, ops, 0

    def take(self, name):
        if self.i >= len(self.ops):
            raise EmulationError("node %s: the emulation computes %s, but ampc's explain has no more ops for it"
                                 % (self.node, name))
        op = self.ops[self.i]
        if op["op"] != name:
            raise EmulationError("node %s: the emulation computes %s where ampc's explain has %s (%s:%d:%d)"
                                 % (self.node, name, op["op"], op["file"], op["line"], op["col"]))
        self.i += 1
        return op

    def done(self):
        if self.i != len(self.ops):
            rest = ", ".join(o["op"] for o in self.ops[self.i:])
            raise EmulationError("node %s: ampc's explain has ops the emulation did not compute: %s"
                                 % (self.node, rest))


class Emulator(torch.fx.Interpreter):
    """gm: trace(module); op_map: torch2amp's --op-map; explain: ampc's
    --explain=json for the same .amp.  exact: float64, no rounding."""

    def __init__(self, gm, op_map, explain, exact=False):
        super().__init__(gm)
        self.exact = exact
        self.cdt = torch.float64 if exact else torch.float32
        names = [n.name for n in gm.graph.nodes]
        mapped = [e["node"] for e in op_map["nodes"]]
        if names != mapped:
            raise EmulationError("the fx graph traced here differs from the one torch2amp exported "
                                 "(nodes %s... vs %s...)" % (names[:5], mapped[:5]))
        self.node_ops = {}
        claimed = 0
        for e in op_map["nodes"]:
            lines = set(e["lines"])
            # explain's order is execution order; keep it
            ops = [op for op in explain["ops"] if op["line"] in lines]
            self.node_ops[e["node"]] = ops
            claimed += len(ops)
        if claimed != len(explain["ops"]):
            raise EmulationError("%d of ampc's %d ops belong to no fx node" % (len(explain["ops"]) - claimed,
                                                                              len(explain["ops"])))
        self.rounded = 0       # ops emulated

    # -- rounding -----------------------------------------------------------
    def rnd(self, t, dt):
        """t rounded to ampc's dtype dt, carried in the compute dtype"""
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            return t
        if dt not in FLOAT:
            raise EmulationError("a floating value where ampc has %s" % dt)
        if self.exact or dt in ("f32", "f64"):
            # values are copied: an in-place module (ReLU(inplace=True)) must
            # not write into a value the checker still holds
            return t.to(self.cdt, copy=not isinstance(t, nn.Parameter))
        return t.to(LOW[dt]).to(self.cdt)

    def apply(self, op, fn, tensors, node):
        """fn(*tensors) as ampc's op `op` computes it: inputs rounded to the
        op's input dtypes, computed in float32, the result rounded once"""
        if len(tensors) != len(op["inputs"]):
            raise EmulationError("node %s: %d tensor inputs here, ampc's %s has %d (%s)"
                                 % (node, len(tensors), op["op"], len(op["inputs"]), ", ".join(op["inputs"])))
        xs = [self.rnd(t, d) for t, d in zip(tensors, op["inputs"])]
        y = fn(*xs)
        self.rounded += 1
        if isinstance(y, (tuple, list)):        # native_layer_norm & co: the result, then statistics
            return (self.rnd(y[0], op["output"]),) + tuple(y[1:])
        return self.rnd(y, op["output"])

    # -- nodes --------------------------------------------------------------
    def run_node(self, n):
        ops = self.node_ops.get(n.name, [])
        if n.op in ("placeholder", "output", "get_attr") or not ops:
            r = super().run_node(n)
            if n.op == "placeholder" and isinstance(r, torch.Tensor) and r.is_floating_point():
                r = r.to(self.cdt)
            return r
        if n.op == "call_module" and isinstance(self.module.get_submodule(n.target), nn.TransformerEncoder):
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            q = Ops(n.name, ops)
            y = self.encoder(self.module.get_submodule(n.target), args[0], q)
            q.done()
            return y
        if n.op == "call_module" and isinstance(self.module.get_submodule(n.target), nn.MultiheadAttention):
            # vit's EncoderBlock calls its self_attention module itself: (output, None)
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            q = Ops(n.name, ops)
            x = kwargs.get("query", args[0] if args else None)
            y = self.attention(self.module.get_submodule(n.target), x, q)
            q.done()
            return (y, None)
        numeric = [op for op in ops if op["op"] not in VIEWS]
        if not numeric:
            return super().run_node(n)             # views only: exact in any dtype
        if len(numeric) != 1:
            raise EmulationError("node %s (%s %s) became several ops in ampc (%s); the emulation has no rule for it"
                                 % (n.name, n.op, n.target, ", ".join(o["op"] for o in ops)))
        op = numeric[0]
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        if n.op == "call_module":
            m = self.module.get_submodule(n.target)
            names = []
            for cls, order in PARAM_ORDER:
                if isinstance(m, cls):
                    names = [p for p in order if getattr(m, p, None) is not None]
                    break
            floating = [k for k, v in list(m.named_parameters(recurse=False)) + list(m.named_buffers(recurse=False))
                        if v.is_floating_point()]
            if sorted(floating) != sorted(names):
                raise EmulationError("node %s: nn.%s has floating state %s; the emulation knows %s"
                                     % (n.name, type(m).__name__, floating, names))
            tensors = [args[0]] + [getattr(m, p) for p in names]

            def fn(x, *ps):
                state = dict(zip(names, ps))
                return torch.nn.utils.stateless.functional_call(m, state, (x,) + tuple(args[1:]), kwargs)
            return self.apply(op, fn, tensors, n.name)

        # call_function / call_method: the tensor arguments, in order (lists flattened)
        flat, spec = _flatten((args, kwargs))
        where = [i for i, v in enumerate(flat) if isinstance(v, torch.Tensor)]

        def fn(*ts):
            vals = list(flat)
            for i, t in zip(where, ts):
                vals[i] = t
            a, k = _unflatten(vals, spec)
            if n.op == "call_method":
                return getattr(a[0], n.target)(*a[1:], **k)
            return n.target(*a, **k)
        return self.apply(op, fn, [flat[i] for i in where], n.name)

    def statement_value(self, op, y, node):
        """the value computed for op, inside a node emulated op by op (Forced
        replaces it with ampc's when op ends a statement)"""
        return y

    # -- nn.TransformerEncoder, op by op ---------------------------------------
    def encoder(self, enc, x, q):
        if enc.norm is not None:
            raise EmulationError("TransformerEncoder with a final norm: not emulated")
        for layer in enc.layers:
            x = self.encoder_layer(layer, x, q)
        return x

    def step(self, q):
        """ap(name, fn, *tensors): q's next op, which must be `name`, as fn computes it"""
        def ap(name, fn, *ts):
            op = q.take(name)
            return self.statement_value(op, self.apply(op, fn, list(ts), q.node), q.node)
        return ap

    def attention(self, sa, v, q):
        """nn.MultiheadAttention's self-attention as torch2amp's mha_expr writes it"""
        if not sa.batch_first or not sa._qkv_same_embed_dim or sa.in_proj_bias is None:
            raise EmulationError("MultiheadAttention other than batch_first with packed biased in-projection: "
                                 "not emulated")
        ap = self.step(q)
        E, H = sa.embed_dim, sa.num_heads
        S, hd = v.shape[1], E // H
        heads = []
        for i in range(3):                       # q, k, v: rows i*E..(i+1)*E of in_proj
            w = ap("narrow", lambda t: t.narrow(0, i * E, E), sa.in_proj_weight)
            b = ap("narrow", lambda t: t.narrow(0, i * E, E), sa.in_proj_bias)
            t = ap("linear", F.linear, v, w, b)
            t = ap("reshape", lambda t: t.reshape(-1, S, H, hd), t)
            heads.append(ap("permute", lambda t: t.permute(0, 2, 1, 3), t))

        def sdpa(qh, kh, vh):
            s = torch.matmul(qh, kh.transpose(-2, -1)) / math.sqrt(qh.shape[-1])
            return torch.matmul(torch.softmax(s, dim=-1), vh)
        a = ap("scaled_dot_product_attention", sdpa, *heads)
        a = ap("permute", lambda t: t.permute(0, 2, 1, 3), a)
        a = ap("reshape", lambda t: t.reshape(-1, S, E), a)
        return ap("linear", F.linear, a, sa.out_proj.weight, sa.out_proj.bias)

    def encoder_layer(self, layer, x, q):
        sa = layer.self_attn
        act = layer.activation
        if act is F.gelu or isinstance(act, nn.GELU):
            act_name, act_fn = "gelu", F.gelu
        elif act is F.relu or isinstance(act, nn.ReLU):
            act_name, act_fn = "relu", F.relu
        else:
            raise EmulationError("TransformerEncoderLayer activation %r: not emulated" % (act,))

        ap = self.step(q)

        def norm(v, ln):
            return ap("layer_norm", lambda t, w, b: F.layer_norm(t, ln.normalized_shape, w, b, ln.eps),
                      v, ln.weight, ln.bias)

        def attention(v):
            return self.attention(sa, v, q)

        def feed_forward(v):
            h = ap("linear", F.linear, v, layer.linear1.weight, layer.linear1.bias)
            h = ap(act_name, act_fn, h)
            return ap("linear", F.linear, h, layer.linear2.weight, layer.linear2.bias)

        if layer.norm_first:
            x = ap("add", torch.add, x, attention(norm(x, layer.norm1)))
            x = ap("add", torch.add, x, feed_forward(norm(x, layer.norm2)))
        else:
            x = norm(ap("add", torch.add, x, attention(x)), layer.norm1)
            x = norm(ap("add", torch.add, x, feed_forward(x)), layer.norm2)
        return x


class Forced(Emulator):
    """the emulation fed ampc's own values.  forced: {.amp line: ampc's value
    of the statement there}.  Each statement ampc reported passes ampc's
    value on, so every statement is emulated from exactly the inputs ampc
    had: a node's last statement (most nodes have one) when the node is
    done, and each statement inside nn.TransformerEncoder, which is
    emulated op by op, as soon as its last op is.  `local` keeps what the
    emulation computed: {"node:line": (value, ampc's dtype for it)}"""

    def __init__(self, gm, op_map, explain, forced):
        super().__init__(gm, op_map, explain)
        self.forced = forced
        self.local = {}
        self.last_of_line = {}
        for op in explain["ops"]:
            self.last_of_line[op["line"]] = id(op)
        self.lines = {e["node"]: e["lines"] for e in op_map["nodes"]}
        self.done_lines = set()

    def force(self, node, line, y, dt):
        self.local["%s:%d" % (node, line)] = (y, dt)
        self.done_lines.add(line)
        return self.forced[line].reshape(y.shape).to(self.cdt)

    def statement_value(self, op, y, node):
        if self.last_of_line.get(op["line"]) == id(op) and op["line"] in self.forced:
            return self.force(node, op["line"], y, op["output"] if op["op"] not in VIEWS else None)
        return y

    def run_node(self, n):
        r = super().run_node(n)
        lines = self.lines.get(n.name) or []
        if lines and lines[-1] in self.forced and lines[-1] not in self.done_lines:
            numeric = [op for op in self.node_ops.get(n.name, []) if op["op"] not in VIEWS]
            dt = numeric[-1]["output"] if numeric else None
            if isinstance(r, (tuple, list)):
                return (self.force(n.name, lines[-1], r[0], dt),) + tuple(r[1:])
            return self.force(n.name, lines[-1], r, dt)
        return r


def _flatten(v):
    """nested tuples/lists/dicts -> (leaves, spec)"""
    leaves = []

    def go(x):
        if isinstance(x, (list, tuple)):
            return (type(x), [go(e) for e in x])
        if isinstance(x, dict):
            return (dict, [(k, go(e)) for k, e in x.items()])
        leaves.append(x)
        return None
    return leaves, go(v)


def _unflatten(leaves, spec):
    it = iter(leaves)

    def go(s):
        if s is None:
            return next(it)
        kind, items = s
        if kind is dict:
            return {k: go(e) for k, e in items}
        return kind(go(e) for e in items)
    return go(spec)


def emulate(module, op_map, explain, x, exact=False):
    """the module's output on x with ampc's per-op dtypes (float32 values),
    or (exact) in float64 without rounding; and the number of ops emulated"""
    m = module.double() if exact else module.float()
    xx = x.double() if exact and x.is_floating_point() else x
    em = Emulator(trace(m.eval(), xx), op_map, explain, exact)
    with torch.no_grad():
        y = em.run(xx)
    return y, em.rounded
