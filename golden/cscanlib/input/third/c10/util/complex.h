// cscanlib's stand-in for a framework header (PyTorch's c10/util/complex.h), so the golden case
// builds without the framework: c10::complex<T> with PyTorch's layout and public members, and the
// host standard headers the real one brings along (<complex>, <cmath>, and through them
// <algorithm>'s and <type_traits>' names).
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <type_traits>

#include <cuda_runtime.h>

namespace c10 {

template <typename T>
struct alignas(2 * sizeof(T)) complex {
  T real_ = T(0);
  T imag_ = T(0);
  constexpr complex() = default;
  __host__ __device__ constexpr complex(const T &re, const T &im = T()) : real_(re), imag_(im) {}
  __host__ __device__ constexpr T real() const { return real_; }
  __host__ __device__ constexpr T imag() const { return imag_; }
  __host__ __device__ complex &operator+=(const complex &o) {
    real_ += o.real_;
    imag_ += o.imag_;
    return *this;
  }
  __host__ __device__ complex &operator*=(const complex &o) {
    T a = real_, b = imag_;
    real_ = a * o.real_ - b * o.imag_;
    imag_ = a * o.imag_ + b * o.real_;
    return *this;
  }
  __host__ __device__ complex &operator*=(const T &s) {
    real_ *= s;
    imag_ *= s;
    return *this;
  }
};

template <typename T>
__host__ __device__ complex<T> operator+(complex<T> a, const complex<T> &b) {
  return a += b;
}
template <typename T>
__host__ __device__ complex<T> operator*(complex<T> a, const complex<T> &b) {
  return a *= b;
}
template <typename T>
__host__ __device__ complex<T> operator*(complex<T> a, const T &s) {
  return a *= s;
}
template <typename T>
__host__ __device__ complex<T> operator*(const T &s, complex<T> a) {
  return a *= s;
}

}  // namespace c10

namespace std {
template <typename T>
__host__ __device__ constexpr c10::complex<T> conj(const c10::complex<T> &z) {
  return c10::complex<T>(z.real_, -z.imag_);
}
}  // namespace std
