"""The slice sampler of the infinite elimination-by-aspects choice model (Görür 2007,
sec. 4.5.2)."""

from .eba_slice import EBASliceSampler, EBAState

__all__ = ["EBASliceSampler", "EBAState"]
