// scanlib: the parameters of a chunked linear scan and the host launchers the bindings call.
// The launchers are defined in scan_fwd.cuh and instantiated explicitly, one file per dtype.
#pragma once

#include <cuda_runtime.h>

struct ScanParams {
  int batch, dim, seqlen;
  bool has_z, variable_b;
  void *u_ptr, *b_ptr, *z_ptr, *out_ptr;
};

template <typename input_t, typename weight_t>
void scan_fwd_cuda(ScanParams &params, cudaStream_t stream);

void scan_fill(float *out, int n, cudaStream_t stream);
