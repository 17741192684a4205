// cscanlib's stand-in for a framework header (ATen/cuda/Atomic.cuh): gpuAtomicAdd on float and on
// c10::complex<float> (one atomicAdd per part).
#pragma once

#include <c10/util/complex.h>

static inline __device__ float gpuAtomicAdd(float *address, float val) { return atomicAdd(address, val); }

template <typename T>
static inline __device__ void gpuAtomicAdd(c10::complex<T> *address, c10::complex<T> val) {
  gpuAtomicAdd(&address->real_, val.real_);
  gpuAtomicAdd(&address->imag_, val.imag_);
}
