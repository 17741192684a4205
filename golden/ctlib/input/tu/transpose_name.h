// The name ctlib's cast-transpose reports its errors under: data, included inside a namespace of
// tu/transpose.cu (as TE includes the strings of its hand-written NVRTC kernels there).
constexpr const char kCastTransposeName[] = "ctlib cast-transpose";
