// cscanlib: complex weights.
#include "cscan_bwd.cuh"

template void cscan_bwd_cuda<complex_t>(CscanParams &params, cudaStream_t stream);
