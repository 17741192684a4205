// Calls bitsandbytes' C API (the functions its Python package loads) from the library given as
// argv[1] over the blockwise quantize/dequantize formats and block sizes and the 32-bit and 8-bit
// blockwise optimizers, and writes every output's bytes to argv[2]; two libraries' files must be
// equal. Deterministic inputs; one CUDA stream (the default one, as the API's callers use it).
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CHECK(call)                                                                     \
  do {                                                                                  \
    cudaError_t e = (call);                                                             \
    if (e != cudaSuccess) {                                                             \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e));   \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

static void *library;
template <typename F>
static F symbol(const char *name) {
  void *f = dlsym(library, name);
  if (f == nullptr) {
    std::fprintf(stderr, "no %s in the library\n", name);
    std::exit(1);
  }
  return reinterpret_cast<F>(f);
}

static std::vector<char> bytes;
template <typename T>
static void keep(const T *device, size_t count) {
  std::vector<char> host(count * sizeof(T));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(host.data(), device, host.size(), cudaMemcpyDeviceToHost));
  bytes.insert(bytes.end(), host.begin(), host.end());
}

template <typename T>
static T *random_device(size_t n, unsigned seed, float scale = 1.f) {
  std::vector<T> host(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    host[i] = T((static_cast<float>(seed >> 8) / 16777216.0f - 0.5f) * scale);
  }
  T *d;
  CHECK(cudaMalloc(&d, n * sizeof(T)));
  CHECK(cudaMemcpy(d, host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <typename T>
static void blockwise(const char *quantize, const char *dequantize, int n) {
  using Q = void (*)(float *, T *, float *, unsigned char *, int, int);
  using D = void (*)(float *, unsigned char *, float *, T *, int, int, cudaStream_t);
  auto q = symbol<Q>(quantize);
  auto d = symbol<D>(dequantize);
  float *code = random_device<float>(256, 3u);  // a sorted code is not needed for equality
  for (int blocksize : {64, 128, 256, 512, 1024, 2048, 4096}) {
    T *a = random_device<T>(n, 11u + blocksize, 4.f);
    float *absmax;
    unsigned char *out;
    T *back;
    CHECK(cudaMalloc(&absmax, (n / blocksize + 1) * sizeof(float)));
    CHECK(cudaMalloc(&out, n));
    CHECK(cudaMalloc(&back, n * sizeof(T)));
    q(code, a, absmax, out, blocksize, n);
    CHECK(cudaGetLastError());
    keep(out, n);
    keep(absmax, n / blocksize);
    d(code, out, absmax, back, blocksize, n, 0);
    CHECK(cudaGetLastError());
    keep(back, n);
    for (void *p : {static_cast<void *>(a), static_cast<void *>(absmax), static_cast<void *>(out),
                    static_cast<void *>(back)})
      CHECK(cudaFree(p));
  }
  CHECK(cudaFree(code));
}

template <typename T>
static void optimizer32(const char *name, int n) {
  using F = void (*)(T *, T *, float *, float *, float *, float, float, float, float, float, float, float, float, int,
                     float, float, bool, int);
  auto f = symbol<F>(name);
  T *g = random_device<T>(n, 5u), *p = random_device<T>(n, 7u);
  float *s1 = random_device<float>(n, 9u, 0.1f), *s2 = random_device<float>(n, 13u, 0.01f);
  float *unorm;
  CHECK(cudaMalloc(&unorm, sizeof(float)));
  CHECK(cudaMemset(unorm, 0, sizeof(float)));
  for (int step = 1; step <= 3; ++step) {
    f(g, p, s1, s2, unorm, 0.f, 1.f, 0.9f, 0.999f, 0.f, 0.f, 1e-8f, 0.01f, step, 1e-3f, 1.f, false, n);
    CHECK(cudaGetLastError());
  }
  keep(p, n);
  keep(s1, n);
  keep(s2, n);
  for (void *q : {static_cast<void *>(g), static_cast<void *>(p), static_cast<void *>(s1), static_cast<void *>(s2),
                  static_cast<void *>(unorm)})
    CHECK(cudaFree(q));
}

template <typename T>
static void optimizer8_blockwise(const char *name, int n) {
  using F = void (*)(T *, T *, unsigned char *, unsigned char *, float, float, float, float, float, int, float,
                     float *, float *, float *, float *, float, float, bool, int);
  auto f = symbol<F>(name);
  T *p = random_device<T>(n, 17u), *g = random_device<T>(n, 19u);
  unsigned char *s1, *s2;
  CHECK(cudaMalloc(&s1, n));
  CHECK(cudaMalloc(&s2, n));
  CHECK(cudaMemset(s1, 128, n));
  CHECK(cudaMemset(s2, 0, n));
  float *q1 = random_device<float>(256, 23u), *q2 = random_device<float>(256, 29u);
  float *a1 = random_device<float>(n / 256 + 1, 31u, 2.f), *a2 = random_device<float>(n / 256 + 1, 37u, 2.f);
  for (int step = 1; step <= 3; ++step) {
    f(p, g, s1, s2, 0.9f, 0.999f, 0.f, 0.f, 1e-8f, step, 1e-3f, q1, q2, a1, a2, 0.01f, 1.f, false, n);
    CHECK(cudaGetLastError());
  }
  keep(p, n);
  keep(s1, n);
  keep(s2, n);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s LIBRARY OUT\n", argv[0]);
    return 2;
  }
  library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  const int n = 1 << 16;
  blockwise<float>("cquantize_blockwise_fp32", "cdequantize_blockwise_fp32", n);
  blockwise<half>("cquantize_blockwise_fp16", "cdequantize_blockwise_fp16", n);
  blockwise<float>("cquantize_blockwise_fp32_nf4", "cdequantize_blockwise_fp32_nf4", n);
  blockwise<half>("cquantize_blockwise_fp16_fp4", "cdequantize_blockwise_fp16_fp4", n);
  optimizer32<float>("cadam32bit_grad_fp32", n);
  optimizer32<half>("cadam32bit_grad_fp16", n);
  optimizer32<float>("cmomentum32bit_grad_32", n);
  optimizer8_blockwise<float>("cadam_8bit_blockwise_grad_fp32", n);
  optimizer8_blockwise<half>("cmomentum_8bit_blockwise_grad_fp16", n);
  FILE *f = std::fopen(argv[2], "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  std::printf("%zu bytes\n", bytes.size());
  return 0;
}
