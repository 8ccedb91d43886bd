"""Compilation settings shared by the numba kernels."""

#: Floating-point licences for the kernels: reassociation and contraction let reductions
#: vectorise; no-NaN/no-inf assumptions are left out because the kernels use -inf
#: (log of zero probability) deliberately. Results stay deterministic run to run.
FAST_MATH = {"reassoc", "contract", "arcp", "nsz"}
