// splitlib: the kernels' declarations. kernels.cu defines and instantiates them; ops.cu launches
// them through these declarations only.
#pragma once

#include <cuda_fp16.h>

template <typename T, int BLOCK>
__global__ void scale_kernel(const T *in, T *out, float s, int n);

template <typename T>
__global__ void shift_kernel(T *data, float by, int n);
