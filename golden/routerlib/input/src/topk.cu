// routerlib top-k router: scores, top-k selection and its backward pass.
#include <cmath>

#include "common.h"

namespace routerlib {

enum class Mode { Plain, Balanced };

template <int ScoreFunc>
__device__ inline float score(float x) {
  if constexpr (ScoreFunc == 0) {
    return 1.f / (1.f + expf(-x));
  } else if constexpr (ScoreFunc == 1) {
    return expf(x);
  } else {
    return sqrtf(log1pf(expf(x)));
  }
}

// The persistent kernel: one warp per token, the grid from the occupancy helper.
template <typename T, int ScoreFunc, Mode M>
__global__ void topk_forward_kernel(const T *logits, T *probs, int num_tokens, int num_experts,
                                    int topk) {
  extern __shared__ float scratch[];
  for (int t = blockIdx.x; t < num_tokens; t += gridDim.x) {
    for (int e = threadIdx.x; e < num_experts; e += blockDim.x) {
      float s = score<ScoreFunc>(static_cast<float>(logits[t * num_experts + e]));
      if constexpr (M == Mode::Balanced) {
        s = s / static_cast<float>(topk);
      }
      scratch[e] = s;
      probs[t * num_experts + e] = static_cast<T>(s);
    }
  }
}

// The simple kernel: one block per token, the score function chosen at run time.
template <typename T, bool kBalanced>
__global__ void topk_simple_kernel(const T *logits, T *probs, int num_tokens, int num_experts,
                                   int topk, int score_function) {
  int t = blockIdx.x;
  for (int e = threadIdx.x; e < num_experts; e += blockDim.x) {
    float x = static_cast<float>(logits[t * num_experts + e]);
    float s = score_function == 0 ? score<0>(x) : (score_function == 1 ? score<1>(x) : score<2>(x));
    probs[t * num_experts + e] = static_cast<T>(kBalanced ? s / topk : s);
  }
}

template <typename T, int ScoreFunc>
__global__ void topk_backward_kernel(const T *grad_probs, T *grad_logits, int num_tokens,
                                     int num_experts) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < num_tokens * num_experts;
       i += gridDim.x * blockDim.x) {
    float g = static_cast<float>(grad_probs[i]);
    grad_logits[i] = static_cast<T>(ScoreFunc == 1 ? g : g * score<ScoreFunc>(g));
  }
}

// Declared, launched only by a debugging helper that no entry point calls.
template <typename T>
__global__ void topk_debug_kernel(const T *probs, int n) {
  if (threadIdx.x == 0 && n > 0 && static_cast<float>(probs[0]) < 0.f) {
    __trap();
  }
}

// Declared and launched nowhere.
template <typename T>
__global__ void topk_unused_kernel(T *probs) {
  probs[threadIdx.x] = static_cast<T>(0.f);
}

template <typename T, Mode M>
void topk_forward_launcher(const T *logits, T *probs, int num_tokens, int num_experts, int topk,
                           int score_function, bool fast, cudaStream_t stream) {
  size_t total_blocks = static_cast<size_t>(num_tokens);
  size_t shmem = static_cast<size_t>(num_experts) * sizeof(float);

  auto launch = [&](auto kernel) {
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         static_cast<int>(shmem));
    size_t grid = persistent_grid(kernel, kThreads, shmem, total_blocks);
    kernel<<<grid, kThreads, shmem, stream>>>(logits, probs, num_tokens, num_experts, topk);
  };

  if (!fast) {
    auto launch_simple = [&](auto kernel) {
      kernel<<<total_blocks, kThreads, 0, stream>>>(logits, probs, num_tokens, num_experts, topk,
                                                    score_function);
    };
    if constexpr (M == Mode::Plain) {
      launch_simple(topk_simple_kernel<T, false>);
    } else {
      launch_simple(topk_simple_kernel<T, true>);
    }
    return;
  }
  switch (score_function) {
    case 0:
      launch(topk_forward_kernel<T, 0, M>);
      break;
    case 1:
      launch(topk_forward_kernel<T, 1, M>);
      break;
    default:
      launch(topk_forward_kernel<T, 2, M>);
      break;
  }
}

template <typename T>
void topk_backward_launcher(const T *grad_probs, T *grad_logits, int num_tokens, int num_experts,
                            int score_function, cudaStream_t stream) {
  size_t total_blocks = static_cast<size_t>(num_tokens);
  auto launch = [&](auto kernel) {
    size_t grid = persistent_grid(kernel, kThreads, 0, total_blocks);
    kernel<<<grid, kThreads, 0, stream>>>(grad_probs, grad_logits, num_tokens, num_experts);
  };
  if (score_function == 0) {
    launch(topk_backward_kernel<T, 0>);
    return;
  }
  if (score_function == 1) {
    launch(topk_backward_kernel<T, 1>);
    return;
  }
  launch(topk_backward_kernel<T, 2>);
}

template <typename T>
void topk_debug_dump(const T *probs, int n, cudaStream_t stream) {
  topk_debug_kernel<T><<<1, 32, 0, stream>>>(probs, n);
}

}  // namespace routerlib

extern "C" void routerlib_topk_forward(const void *logits, void *probs, int num_tokens,
                                       int num_experts, int topk, int score_function, int fast,
                                       int balanced, routerlib_dtype dtype, cudaStream_t stream) {
  using namespace routerlib;
  ROUTERLIB_TYPE_SWITCH(dtype, T, {
    if (balanced) {
      topk_forward_launcher<T, Mode::Balanced>(static_cast<const T *>(logits),
                                               static_cast<T *>(probs), num_tokens, num_experts,
                                               topk, score_function, fast != 0, stream);
    } else {
      topk_forward_launcher<T, Mode::Plain>(static_cast<const T *>(logits),
                                            static_cast<T *>(probs), num_tokens, num_experts,
                                            topk, score_function, fast != 0, stream);
    }
  })
}

extern "C" void routerlib_topk_backward(const void *grad_probs, void *grad_logits, int num_tokens,
                                        int num_experts, int score_function,
                                        routerlib_dtype dtype, cudaStream_t stream) {
  using namespace routerlib;
  ROUTERLIB_TYPE_SWITCH(dtype, T, {
    topk_backward_launcher<T>(static_cast<const T *>(grad_probs), static_cast<T *>(grad_logits),
                              num_tokens, num_experts, score_function, stream);
  })
}
