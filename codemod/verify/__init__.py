"""Verify stage: compile generated kernel strings with NVRTC and generated host code with nvcc."""
