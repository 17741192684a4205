# cscanlib as a PyTorch extension (torch.utils.cpp_extension), built the way mamba's selective scan is.
import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

ext_modules = []
if os.environ.get("CSCANLIB_SKIP_CUDA_BUILD", "0") != "1":
    ext_modules.append(
        CUDAExtension(
            name="cscanlib_cuda",
            sources=[
                "src/cscan_api.cpp",
                "src/cscan_bwd_real.cu",
                "src/cscan_bwd_complex.cu",
            ],
            extra_compile_args={"cxx": ["-O3", "-std=c++17"],
                                "nvcc": ["-O3", "-std=c++17", "--expt-relaxed-constexpr", "--use_fast_math"]},
            include_dirs=["src"],
        )
    )

setup(name="cscanlib", ext_modules=ext_modules, cmdclass={"build_ext": BuildExtension})
