"""codemod: move template-heavy CUDA kernels from build-time instantiation to NVRTC."""

__version__ = "0.1.0"
