// Device-side activation functions and their derivatives. Every op has the signature
// ComputeType op(ComputeType x, const Param &p) so it can be passed as a template argument.
#ifndef ACTLIB_UTIL_MATH_H_
#define ACTLIB_UTIL_MATH_H_

namespace actlib {

// Parameter type of ops that take none.
struct Empty {};

// Parameters of the clamped SiLU used by clamped SwiGLU: the activation input is capped at
// `limit`, the gate input clamped to [-limit, limit] and shifted by one.
struct ClampParam {
  float limit = 7.0f;
  float alpha = 1.702f;
};

__device__ inline float logistic(float x) { return 1.0f / (1.0f + expf(-x)); }

// GELU, tanh form: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).
template <typename ComputeType, typename Param>
__device__ inline ComputeType gelu(ComputeType x, const Param &) {
  const ComputeType u = 0.7978845608f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanhf(u));
}

template <typename ComputeType, typename Param>
__device__ inline ComputeType dgelu(ComputeType x, const Param &) {
  const ComputeType u = 0.7978845608f * (x + 0.044715f * x * x * x);
  const ComputeType t = tanhf(u);
  const ComputeType du = 0.7978845608f * (1.0f + 3.0f * 0.044715f * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

template <typename ComputeType, typename Param>
__device__ inline ComputeType relu(ComputeType x, const Param &) {
  return x > 0.0f ? x : 0.0f;
}

template <typename ComputeType, typename Param>
__device__ inline ComputeType drelu(ComputeType x, const Param &) {
  return x > 0.0f ? 1.0f : 0.0f;
}

template <typename ComputeType, typename Param>
__device__ inline ComputeType silu(ComputeType x, const Param &) {
  return x * logistic(x);
}

template <typename ComputeType, typename Param>
__device__ inline ComputeType dsilu(ComputeType x, const Param &) {
  const ComputeType s = logistic(x);
  return s * (1.0f + x * (1.0f - s));
}

template <typename ComputeType, typename Param>
__device__ inline ComputeType clamped_silu(ComputeType x, const Param &p) {
  const ComputeType c = fminf(x, p.limit);
  return c * logistic(p.alpha * c);
}

template <typename ComputeType, typename Param>
__device__ inline ComputeType dclamped_silu(ComputeType x, const Param &p) {
  if (x > p.limit) return 0.0f;
  const ComputeType s = logistic(p.alpha * x);
  return s + p.alpha * x * s * (1.0f - s);
}

}  // namespace actlib

#endif  // ACTLIB_UTIL_MATH_H_
