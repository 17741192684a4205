// routerlib public C API: top-k routing of tokens to experts.
#pragma once

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum routerlib_dtype {
  ROUTERLIB_FLOAT32 = 0,
  ROUTERLIB_FLOAT16 = 1,
  ROUTERLIB_BFLOAT16 = 2,
} routerlib_dtype;

// score_function: 0 sigmoid, 1 softmax, 2 sqrt-softplus. `fast` picks the persistent kernel,
// `balanced` its load-balanced variant.
void routerlib_topk_forward(const void *logits, void *probs, int num_tokens, int num_experts,
                            int topk, int score_function, int fast, int balanced,
                            routerlib_dtype dtype, cudaStream_t stream);

void routerlib_topk_backward(const void *grad_probs, void *grad_logits, int num_tokens,
                             int num_experts, int score_function, routerlib_dtype dtype,
                             cudaStream_t stream);

#ifdef __cplusplus
}
#endif
