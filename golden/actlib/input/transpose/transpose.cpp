// actlib_transpose: the library's existing NVRTC kernel, launched through rtc::KernelManager.
#include <string>

#include "../common.h"
#include "../util/rtc.h"
#include "actlib/cast.h"
#include "string_code_rtc_transpose_cu.h"

namespace {

constexpr int kTransposeTile = 32;
constexpr int kTransposeRowsPerPass = 8;

const char *storage_type_name(actlib::DType dtype) {
  switch (dtype) {
    case actlib::DType::kFloat32: return "unsigned int";
    case actlib::DType::kFloat16:
    case actlib::DType::kBFloat16: return "unsigned short";
    case actlib::DType::kFloat8E4M3:
    case actlib::DType::kFloat8E5M2: return "unsigned char";
  }
  ACTLIB_ERROR("unknown dtype");
}

}  // namespace

void actlib_transpose(const ActlibTensor input_handle, ActlibTensor output_handle,
                      cudaStream_t stream) {
  using namespace actlib;
  const Tensor input = view(input_handle);
  const Tensor output = view(output_handle);
  ACTLIB_CHECK(input.dtype == output.dtype, "transpose keeps the dtype");
  ACTLIB_CHECK(input.rows == output.cols && input.cols == output.rows, "output must be [cols, rows]");
  const std::string type_name = storage_type_name(input.dtype);
  const std::string label = "transpose,type=" + type_name + ",tile=" + std::to_string(kTransposeTile);
  auto &manager = rtc::KernelManager::instance();
  if (!manager.is_compiled(label)) {
    manager.compile(label,
                    "actlib_rtc::transpose_kernel<" + type_name + ", " +
                        std::to_string(kTransposeTile) + ">",
                    string_code_rtc_transpose_cu, "rtc/transpose.cu", {"-std=c++17"});
  }
  const dim3 grid(static_cast<unsigned>((input.cols + kTransposeTile - 1) / kTransposeTile),
                  static_cast<unsigned>((input.rows + kTransposeTile - 1) / kTransposeTile));
  const dim3 block(kTransposeTile, kTransposeRowsPerPass);
  const unsigned long long rows = input.rows, cols = input.cols;
  manager.launch(label, grid, block, 0, stream, static_cast<const void *>(input.data), output.data,
                 rows, cols);
}
