"""Stage 1, plan: the rule and the analysis -> which kernels move, their variants, sites and headers."""
