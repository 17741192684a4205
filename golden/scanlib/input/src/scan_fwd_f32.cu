// scanlib: float inputs (one file per input dtype, so the build compiles them in parallel).
#include "scan_fwd.cuh"

template void scan_fwd_cuda<float, float>(ScanParams &params, cudaStream_t stream);
