// cscanlib: real weights (one file per weight type, so the build compiles them in parallel).
#include "cscan_bwd.cuh"

template void cscan_bwd_cuda<float>(CscanParams &params, cudaStream_t stream);
