"""Numba's type inference of the dd-IBP sampler's two big kernels settles in two passes.

A counter or flag first set from a literal (``n = 0``, ``stale = True``) is typed as that
literal and retyped ``int64``/``bool`` only when type inference meets the loop's back edge,
and a variable set on one branch only flows from the previous iteration: each costs
another pass over the whole kernel, which a cold first fit pays (the Gibbs link kernel
took 6 passes, about 0.6 CPU s more; issue 22). Structural, not a timing: the passes are
counted while only the frontend and type inference run.
"""

import numpy as np
import pytest
from numba import typeof, types
from numba.core import compiler, typeinfer
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.errors import CompilerError
from numba.core.registry import cpu_target
from numba.core.typed_passes import NopythonTypeInference

from sklearn_ibp.solvers.ddibp import _ddibp_kernels

F2 = types.float64[:, ::1]
F1 = types.float64[::1]
I2 = types.int64[:, ::1]
I1 = types.int64[::1]
RNG = typeof(np.random.default_rng(0))

SIGNATURES = {
    "_sweep_links_gibbs": (
        F2, types.int8[:, ::1], I2, I1, types.int64, F2, F2, F2, F2, F2, F2, types.float64,
        types.float64, RNG, F2, F2, F2, F2, I1, I2, F1,
    ),
    "sweep_ownership": (
        F2, types.int8[:, ::1], I2, I1, types.int64, F2, F1, F1, F2, F2, F2, types.float64,
        types.float64, types.float64, types.int64, types.int64, RNG, F2, F1, I2,
        types.int8[::1],
    ),
}


class _TypeInferenceOnly(CompilerBase):
    """The frontend and type inference, no lowering (so the pipeline ends unfinished)."""

    def define_pipelines(self):
        self.state.cr = None  # no compile result: the pipelines end "exhausted"
        pm = DefaultPassBuilder.define_untyped_pipeline(self.state)
        pm.add_pass(NopythonTypeInference, "nopython frontend")
        pm.finalize()
        return [pm]


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_type_inference_settles_in_two_passes(name, monkeypatch):
    py_func = getattr(_ddibp_kernels, name).py_func
    passes = []
    propagate = typeinfer.ConstraintNetwork.propagate

    def counting(self, inferer):
        if inferer.func_id.func is py_func:
            passes.append(1)
        return propagate(self, inferer)

    monkeypatch.setattr(typeinfer.ConstraintNetwork, "propagate", counting)
    typingctx = cpu_target.typing_context
    targetctx = cpu_target.target_context
    typingctx.refresh()
    targetctx.refresh()
    flags = compiler.Flags()
    flags.nrt = True
    with pytest.raises(CompilerError, match="pipelines exhausted"):
        compiler.compile_extra(typingctx, targetctx, py_func, SIGNATURES[name], None, flags,
                               {}, pipeline_class=_TypeInferenceOnly)
    # One pass types every variable; the second finds nothing to change.
    assert len(passes) == 2
