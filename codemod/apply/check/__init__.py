"""Stage 3, check: the emitted files compiled (NVRTC, kernels.h as a unit's first include) before any write."""
