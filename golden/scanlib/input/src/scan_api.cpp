// scanlib: the bindings. They only declare the launchers (scan.h): the instantiations they call
// are compiled by the scan_fwd_*.cu files, not here.
#include <cuda_fp16.h>

#include "scan.h"

enum class ScanDtype { kFloat32, kFloat16 };

#define SCAN_DTYPE_SWITCH(DTYPE, NAME, ...)    \
  if (DTYPE == ScanDtype::kFloat32) {          \
    using NAME = float;                        \
    __VA_ARGS__();                             \
  } else {                                     \
    using NAME = __half;                       \
    __VA_ARGS__();                             \
  }

void scan_fwd(ScanParams &params, ScanDtype dtype, cudaStream_t stream) {
  SCAN_DTYPE_SWITCH(dtype, input_t, [&] { scan_fwd_cuda<input_t, float>(params, stream); });
}
