"""torch_env.py: what the benchmark tables say about the machine and the
PyTorch they compare with, for bench/torch_bench.py and
bench/torch_models.py.

  cpu_name()       /proc/cpuinfo's first "model name"
  blas_library()   the BLAS shared object this process has loaded (after a
                   float32 matmul), resolved through Debian's alternatives
  require_openblas()  exits with a message unless that is OpenBLAS: Debian's
                   torch calls whatever libblas.so.3 is installed, and
                   the reference BLAS there (about 3 GFLOP/s) is no anchor
  torch_isa()      the ISA limits the environment put on PyTorch
                   (ATEN_CPU_CAPABILITY, DNNL_MAX_CPU_ISA, OPENBLAS_CORETYPE),
                   or "its own choice"
"""
import os
import sys

import torch


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def blas_library():
    a = torch.ones(64, 64)
    torch.matmul(a, a)
    found = []
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            name = os.path.basename(path)
            if ("blas" in name or "mkl_rt" in name) and path not in found:
                found.append(path)
    return ", ".join(os.path.realpath(p) for p in found) or "none loaded"


def require_openblas():
    lib = blas_library()
    if "openblas" not in lib.lower():
        sys.exit(f"bench: PyTorch's BLAS is {lib}, not OpenBLAS: install Debian's libopenblas0-pthread "
                 "(`make bench` does when run as root) so that f32 PyTorch is a fair anchor")
    return lib


def torch_isa():
    parts = [f"{v}={os.environ[v]}" for v in ("ATEN_CPU_CAPABILITY", "DNNL_MAX_CPU_ISA", "OPENBLAS_CORETYPE")
             if os.environ.get(v)]
    return " ".join(parts) if parts else "its own choice"


def describe():
    """One line: CPU, torch version and BLAS, PyTorch's ISA limits."""
    return (f"CPU: {cpu_name()}; torch {torch.__version__}, BLAS {require_openblas()}; "
            f"PyTorch ISA: {torch_isa()}")
