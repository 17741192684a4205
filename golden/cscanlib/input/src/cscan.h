// cscanlib: the parameters of the backward pass of a decaying scan with real or complex weights,
// and the host launcher the bindings call (defined in cscan_bwd.cuh, instantiated per weight type).
#pragma once

#include <cuda_runtime.h>

struct CscanParams {
  int batch, dim, seqlen;
  bool variable_b;
  void *u_ptr, *a_ptr, *b_ptr, *dout_ptr;
  void *du_ptr, *da_ptr, *db_ptr, *dscale_ptr;
};

template <typename weight_t>
void cscan_bwd_cuda(CscanParams &params, cudaStream_t stream);
