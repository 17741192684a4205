# scanlib as a PyTorch extension (torch.utils.cpp_extension), built the way mamba's selective scan is.
import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

ext_modules = []
if os.environ.get("SCANLIB_SKIP_CUDA_BUILD", "0") != "1":
    ext_modules.append(
        CUDAExtension(
            name="scanlib_cuda",
            sources=[
                "src/scan_api.cpp",
                "src/scan_fwd_f32.cu",
                "src/scan_fwd_f16.cu",
                "src/scan_fill.cu",
            ],
            extra_compile_args={"cxx": ["-O3", "-std=c++17"], "nvcc": ["-O3", "-std=c++17"]},
            include_dirs=["src"],
        )
    )

setup(name="scanlib", ext_modules=ext_modules, cmdclass={"build_ext": BuildExtension})
