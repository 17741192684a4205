// layerlib internals: dtype aliases, launch parameters, the launcher registry and its
// registration macro, and the plans the entry points build.
#ifndef LAYERLIB_COMMON_H_
#define LAYERLIB_COMMON_H_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

#include "layerlib/norm.h"

namespace layerlib {

using fp32 = float;
using fp16 = __half;
using bf16 = __nv_bfloat16;

enum class DType { kFloat32, kFloat16, kBFloat16 };
enum class NormType { LayerNorm, RMSNorm, RMSNormZeroCentered };
enum class Stage { Forward, ForwardAdd, Backward };

template <typename T>
struct TypeToDType;
template <>
struct TypeToDType<fp32> {
  static constexpr DType value = DType::kFloat32;
};
template <>
struct TypeToDType<fp16> {
  static constexpr DType value = DType::kFloat16;
};
template <>
struct TypeToDType<bf16> {
  static constexpr DType value = DType::kBFloat16;
};

inline void check_cuda(cudaError_t status, const char *what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

struct ParamsBase {
  int rows = 0;
  int cols = 0;
  int ctas_per_col = 1;
  int ctas_per_row = 1;
  const void *x = nullptr;
  const void *gamma = nullptr;
  float *rs = nullptr;
  bool zero_centered_gamma = false;
};

struct ForwardParams : ParamsBase {
  const void *beta = nullptr;
  const void *add = nullptr;
  void *y = nullptr;
  float *mu = nullptr;
  float epsilon = 0.f;
};

struct BackwardParams : ParamsBase {
  const void *dy = nullptr;
  const float *mu = nullptr;
  void *dx = nullptr;
  void *dgamma = nullptr;
  void *dbeta = nullptr;
  float *dgamma_part = nullptr;
};

using ForwardAddParams = ForwardParams;

template <typename Params>
struct LaunchParams {
  int sm_count = 1;
  cudaStream_t stream = nullptr;
  Params params;
};

// (norm type, stage, weight dtype, input dtype, compute dtype, hidden size), ordered as a tuple.
struct Key {
  int fields[6];
  int rows;  // 0 in the registry; plans are cached per row count as well
  bool operator<(const Key &o) const {
    for (int i = 0; i < 6; ++i) {
      if (fields[i] != o.fields[i]) return fields[i] < o.fields[i];
    }
    return rows < o.rows;
  }
};

inline Key make_key(NormType norm, Stage stage, DType wtype, DType itype, DType ctype, int hidden,
                    int rows = 0) {
  return Key{{static_cast<int>(norm), static_cast<int>(stage), static_cast<int>(wtype),
              static_cast<int>(itype), static_cast<int>(ctype), hidden},
             rows};
}

// Launchers by key; filled before main() by the static objects REGISTER_BASE defines.
template <typename Params>
class Registry {
 public:
  using Launcher = void (*)(LaunchParams<Params> &, bool);

  static int add(Key key, Launcher launcher) {
    table().emplace(key, launcher);
    return 0;
  }

  static Launcher find(Key key) {
    auto it = table().find(key);
    if (it == table().end()) throw std::invalid_argument("layerlib: no launcher for this config");
    return it->second;
  }

 private:
  static std::map<Key, Launcher> &table() {
    static std::map<Key, Launcher> launchers;
    return launchers;
  }
};

#define REGISTER_BASE(NORM, STAGE, HIDDEN, WTYPE, ITYPE, CTYPE, FUNC)                         \
  static int register_##NORM##_##STAGE##_##HIDDEN##_##WTYPE##_##ITYPE = Registry<STAGE##Params>::add( \
      make_key(NormType::NORM, Stage::STAGE, TypeToDType<WTYPE>::value,                      \
               TypeToDType<ITYPE>::value, TypeToDType<CTYPE>::value, HIDDEN),                \
      FUNC)

// A plan looks its launcher up once and configures it (grid, workspace) before the first run.
template <typename Params>
class Plan {
 public:
  Plan(NormType norm, Stage stage, DType wtype, DType itype, int rows, int hidden, int sm_count);
  void run(const Params &params, cudaStream_t stream);

 private:
  typename Registry<Params>::Launcher launcher_;
  LaunchParams<Params> launch_params_;
};

Plan<ForwardParams> *get_forward_plan(NormType norm, Stage stage, DType wtype, DType itype, int rows,
                                      int hidden);
Plan<BackwardParams> *get_backward_plan(NormType norm, DType wtype, DType itype, int rows,
                                        int hidden);

DType to_dtype(layerlib_dtype t);

}  // namespace layerlib

#endif  // LAYERLIB_COMMON_H_
