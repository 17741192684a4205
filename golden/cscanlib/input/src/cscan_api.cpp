// cscanlib: the bindings. They only declare the launchers (cscan.h): the instantiations they call
// are compiled by the cscan_bwd_*.cu files, not here.
#include <c10/util/complex.h>

#include "cscan.h"

void cscan_bwd(CscanParams &params, bool is_complex, cudaStream_t stream) {
  if (is_complex) {
    cscan_bwd_cuda<c10::complex<float>>(params, stream);
  } else {
    cscan_bwd_cuda<float>(params, stream);
  }
}
