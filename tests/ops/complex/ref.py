"""ref.py: checks driver.c's dump of tests/ops/complex/cx.amp
against PyTorch (float64 / complex128).

Reads the dump on stdin, recomputes every output from the dumped inputs
with torch in float64, and compares: max |got - want| <= 1e-12 max |want|
(plus a floor of 1e-13 for all-zero results).  With --f32 the dump is of
the f32 / c64 model, whose kernels compute in double and round each output
once, so the bound is 1e-6 max |want| (a few float roundings, and the
inputs' own).  Eigenvectors are unique only up to
a unit factor per column, so each column is compared after matching that
factor; eigenvalues are compared in order (LAPACK's, which the kernel
follows).  Prints one line per output and exits 1 on any mismatch.
"""
import sys

import torch

B = 3


def read(stream):
    vals = {}
    for line in stream:
        parts = line.split()
        name, n = parts[0], int(parts[1])
        data = [float.fromhex(v) for v in parts[2:]]
        assert len(data) == n, name
        vals[name] = torch.tensor(data, dtype=torch.float64)
    return vals


def cplx(t, *shape):
    return torch.view_as_complex(t.reshape(*shape, 2).contiguous())


def main():
    f32 = "--f32" in sys.argv[1:]
    rtol, atol = (1e-6, 1e-7) if f32 else (1e-12, 1e-13)
    d = read(sys.stdin)
    x = d["in.x"].reshape(B, 14)
    y = d["in.y"].reshape(B, 7)
    z = cplx(d["in.z"], B, 9)
    m = d["in.m"].reshape(5, 5)
    w = d["in.w"]
    p = d["in.p"].reshape(B, 3, 2)
    F = torch.fft
    vals, vecs = torch.linalg.eig(m)
    want = {
        "f": F.fft(x),
        "fi": F.ifft(z, n=11, norm="ortho"),
        "f2": F.fft2(z, norm="forward"),
        "fn": F.fftn(x),
        "ifn": F.ifftn(z, dim=0),
        "r": F.rfft(y, n=22),
        "ir": F.irfft(z),
        "ir7": F.irfft(z, n=7, norm="forward"),
        "r2": F.rfft2(x),
        "ir2": F.irfft2(z),
        "rn": F.rfftn(y, norm="ortho"),
        "irn": F.irfftn(z, s=5),
        "f2s": F.fft2(p, s=(4, 3)),
        "fnd": F.fftn(p, dim=(0, 2)),
        "rns": F.rfftn(p, s=(2, 5), dim=(2, 1)),
        "h": F.hfft(z, n=9),
        "ih": F.ihfft(y),
        "s1": torch.stft(x, 6, hop_length=2, window=w, return_complex=True),
        "s2": torch.stft(x, 4, center=False, normalized=True, onesided=False, return_complex=True),
        "s3": torch.stft(x, 8, hop_length=3, win_length=6, window=w, pad_mode="constant", return_complex=True),
        "po": torch.polar(y, x[:, :7]),
        "vc": torch.view_as_complex(p),
        "vr": torch.view_as_real(z),
        "re": z.real,
        "im": z.imag,
        "ab": z.abs(),
        "an": z.angle(),
        "cj": z.conj().resolve_conj(),
        "ax": x.abs(),
        "ar": x.angle(),
        "vals": vals,
        "vecs": vecs,
        "ev": torch.linalg.eigvals(m),
    }
    bad = 0
    for name, ref in want.items():
        got = d["out." + name]
        if ref.is_complex():
            got = cplx(got, *ref.shape)
        else:
            got = got.reshape(ref.shape)
        if name == "vecs":
            # each column up to a unit factor: rotate got's onto ref's
            dots = (got.conj() * ref).sum(0)
            got = got * (dots / dots.abs())
        err = (got - ref).abs().max().item()
        scale = ref.abs().max().item()
        ok = err <= rtol * scale + atol
        print("%-4s %s  max error %.3g (max |want| %.3g)" % (name, "ok  " if ok else "FAIL", err, scale))
        bad += not ok
    print("complex ops: %d of %d outputs match PyTorch" % (len(want) - bad, len(want)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
