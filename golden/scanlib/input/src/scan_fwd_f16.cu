// scanlib: half inputs, with float or half weights.
#include "scan_fwd.cuh"

template void scan_fwd_cuda<__half, float>(ScanParams &params, cudaStream_t stream);
template void scan_fwd_cuda<__half, __half>(ScanParams &, cudaStream_t);
