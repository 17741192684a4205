// cscanlib: the complex type from the framework's header, device functions on it at namespace
// scope, and standard names the code takes from that header's includes (it includes neither
// <algorithm>, <type_traits> nor <cmath> itself).
#pragma once

#include <c10/util/complex.h>

using complex_t = c10::complex<float>;

constexpr size_t custom_max(std::initializer_list<size_t> sizes) { return std::max(sizes); }

__device__ __forceinline__ complex_t cexp2f(complex_t z) {
  float t = exp2f(z.real_);
  float c, s;
  sincosf(z.imag_, &s, &c);
  return complex_t(c * t, s * t);
}

template <typename weight_t>
struct ScanState {
  using type = std::conditional_t<std::is_same_v<weight_t, float>, float2, float4>;
};

template <typename weight_t>
__device__ __forceinline__ weight_t conj_of(weight_t x) {
  if constexpr (std::is_same_v<weight_t, float>) {
    return x;
  } else {
    return std::conj(x);
  }
}
