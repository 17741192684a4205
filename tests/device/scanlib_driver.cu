// Runs golden scanlib's launchers over every flag, tile and dtype combination and writes each
// output's bytes to one file (argv[1]); with argv[2] = N, N threads run the whole set at once on
// their own streams (first-use compiles racing in the NVRTC layer) and must agree byte for byte.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "scan.h"

#define CHECK(call)                                                                          \
  do {                                                                                       \
    cudaError_t e = (call);                                                                  \
    if (e != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e));        \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

template <typename T>
static std::vector<T> values(int n, unsigned seed) {
  std::vector<T> out(n);
  for (int i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    out[i] = T(static_cast<float>(seed >> 8) / 16777216.0f - 0.5f);
  }
  return out;
}

template <typename input_t, typename weight_t>
static void run_one(int seqlen, bool has_z, bool variable_b, cudaStream_t stream, std::vector<char> &bytes) {
  const int batch = 2, dim = 3, n = batch * dim * seqlen;
  auto u = values<input_t>(n, 1u + seqlen);
  auto b = values<weight_t>(seqlen, 7u + seqlen);
  auto z = values<float>(n, 13u + seqlen);
  void *du, *db, *dz, *dout;
  CHECK(cudaMallocAsync(&du, n * sizeof(input_t), stream));
  CHECK(cudaMallocAsync(&db, seqlen * sizeof(weight_t), stream));
  CHECK(cudaMallocAsync(&dz, n * sizeof(float), stream));
  CHECK(cudaMallocAsync(&dout, n * sizeof(float), stream));
  CHECK(cudaMemcpyAsync(du, u.data(), n * sizeof(input_t), cudaMemcpyHostToDevice, stream));
  CHECK(cudaMemcpyAsync(db, b.data(), seqlen * sizeof(weight_t), cudaMemcpyHostToDevice, stream));
  CHECK(cudaMemcpyAsync(dz, z.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
  CHECK(cudaMemsetAsync(dout, 0xff, n * sizeof(float), stream));
  ScanParams p{batch, dim, seqlen, has_z, variable_b, du, db, dz, dout};
  scan_fwd_cuda<input_t, weight_t>(p, stream);
  CHECK(cudaGetLastError());
  std::vector<char> out(n * sizeof(float));
  CHECK(cudaMemcpyAsync(out.data(), dout, out.size(), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  bytes.insert(bytes.end(), out.begin(), out.end());
  for (void *ptr : {du, db, dz, dout}) CHECK(cudaFreeAsync(ptr, stream));
}

static std::vector<char> run_all(cudaStream_t stream) {
  std::vector<char> bytes;
  for (int seqlen : {100, 128, 1000, 1024}) {  // both tiles, even and uneven lengths
    for (bool has_z : {false, true}) {
      for (bool variable_b : {false, true}) {
        run_one<float, float>(seqlen, has_z, variable_b, stream, bytes);
        run_one<__half, float>(seqlen, has_z, variable_b, stream, bytes);
        run_one<__half, __half>(seqlen, has_z, variable_b, stream, bytes);
      }
    }
  }
  float *fill;
  CHECK(cudaMalloc(&fill, 1000 * sizeof(float)));
  scan_fill(fill, 1000, stream);
  CHECK(cudaGetLastError());
  std::vector<char> out(1000 * sizeof(float));
  CHECK(cudaMemcpyAsync(out.data(), fill, out.size(), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaFree(fill));
  bytes.insert(bytes.end(), out.begin(), out.end());
  return bytes;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT [THREADS]\n", argv[0]);
    return 2;
  }
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  std::vector<std::vector<char>> results(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([t, &results] {
      cudaStream_t stream;
      CHECK(cudaStreamCreate(&stream));
      results[t] = run_all(stream);
      CHECK(cudaStreamDestroy(stream));
    });
  }
  for (auto &th : pool) th.join();
  for (int t = 1; t < threads; ++t) {
    if (results[t] != results[0]) {
      std::fprintf(stderr, "thread %d's outputs differ from thread 0's\n", t);
      return 1;
    }
  }
  FILE *f = std::fopen(argv[1], "wb");
  std::fwrite(results[0].data(), 1, results[0].size(), f);
  std::fclose(f);
  std::printf("%zu bytes, %d thread(s)\n", results[0].size(), threads);
  return 0;
}
