"""Reproducible input-pipeline tuning study: ResNet50 on MindSpore (see README.md)."""

import os

# oneDNN (MindSpore's CPU kernels) runs its AVX-512/AMX code paths ~100x slower than its
# AVX2 ones on this project's Intel VMs (a 3x3 conv: 0.5 vs 75 GFLOP/s). The cap has to be
# in the environment before MindSpore loads, so it is set here; export another value
# (e.g. ONEDNN_MAX_CPU_ISA=ALL) to override it.
os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX2")

__version__ = "0.1.0"
