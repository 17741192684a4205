"""Minimal hand-written definitions of standard names for NVRTC shims (`shims.<name>.minimal`).

Including `<cuda/std/type_traits>` or `<cuda/std/functional>` costs 1.0-1.5 s of CPU per NVRTC
program; the few names element-wise kernels use cost almost nothing. Each entry: the names it needs
first, and its text (inside `namespace std`). Names not listed here come from the shim's libcu++
include as before."""

from __future__ import annotations

import re

_HD = "__host__ __device__"

DEFINITIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "integral_constant": ((), f"""template <class T, T v>
struct integral_constant {{
  static constexpr T value = v;
  using value_type = T;
  using type = integral_constant;
  {_HD} constexpr operator value_type() const noexcept {{ return value; }}
  {_HD} constexpr value_type operator()() const noexcept {{ return value; }}
}};"""),
    "bool_constant": (("integral_constant",), "template <bool B>\nusing bool_constant = integral_constant<bool, B>;"),
    "true_type": (("integral_constant",), "using true_type = integral_constant<bool, true>;"),
    "false_type": (("integral_constant",), "using false_type = integral_constant<bool, false>;"),
    "is_same": (("true_type", "false_type"), "template <class T, class U>\nstruct is_same : false_type {};\n"
                                             "template <class T>\nstruct is_same<T, T> : true_type {};"),
    "is_same_v": (("is_same",), "template <class T, class U>\ninline constexpr bool is_same_v = is_same<T, U>::value;"),
    "conditional": ((), "template <bool B, class T, class F>\nstruct conditional { using type = T; };\n"
                        "template <class T, class F>\nstruct conditional<false, T, F> { using type = F; };"),
    "conditional_t": (("conditional",), "template <bool B, class T, class F>\n"
                                        "using conditional_t = typename conditional<B, T, F>::type;"),
    "enable_if": ((), "template <bool B, class T = void>\nstruct enable_if {};\n"
                      "template <class T>\nstruct enable_if<true, T> { using type = T; };"),
    "enable_if_t": (("enable_if",), "template <bool B, class T = void>\nusing enable_if_t = typename enable_if<B, T>::type;"),
    "remove_const": ((), "template <class T>\nstruct remove_const { using type = T; };\n"
                         "template <class T>\nstruct remove_const<const T> { using type = T; };"),
    "remove_const_t": (("remove_const",), "template <class T>\nusing remove_const_t = typename remove_const<T>::type;"),
    "remove_volatile": ((), "template <class T>\nstruct remove_volatile { using type = T; };\n"
                            "template <class T>\nstruct remove_volatile<volatile T> { using type = T; };"),
    "remove_volatile_t": (("remove_volatile",), "template <class T>\nusing remove_volatile_t = typename remove_volatile<T>::type;"),
    "remove_cv": (("remove_const", "remove_volatile"),
                  "template <class T>\nstruct remove_cv {\n"
                  "  using type = typename remove_volatile<typename remove_const<T>::type>::type;\n};"),
    "remove_cv_t": (("remove_cv",), "template <class T>\nusing remove_cv_t = typename remove_cv<T>::type;"),
    "remove_reference": ((), "template <class T>\nstruct remove_reference { using type = T; };\n"
                             "template <class T>\nstruct remove_reference<T &> { using type = T; };\n"
                             "template <class T>\nstruct remove_reference<T &&> { using type = T; };"),
    "remove_reference_t": (("remove_reference",), "template <class T>\nusing remove_reference_t = typename remove_reference<T>::type;"),
    "remove_pointer": ((), "template <class T>\nstruct remove_pointer { using type = T; };\n"
                           "template <class T>\nstruct remove_pointer<T *> { using type = T; };\n"
                           "template <class T>\nstruct remove_pointer<T *const> { using type = T; };\n"
                           "template <class T>\nstruct remove_pointer<T *volatile> { using type = T; };\n"
                           "template <class T>\nstruct remove_pointer<T *const volatile> { using type = T; };"),
    "remove_pointer_t": (("remove_pointer",), "template <class T>\nusing remove_pointer_t = typename remove_pointer<T>::type;"),
    "is_floating_point": (("integral_constant", "is_same", "remove_cv_t"),
                          "template <class T>\nstruct is_floating_point\n"
                          "    : integral_constant<bool, is_same<remove_cv_t<T>, float>::value ||\n"
                          "                                  is_same<remove_cv_t<T>, double>::value ||\n"
                          "                                  is_same<remove_cv_t<T>, long double>::value> {};"),
    "is_floating_point_v": (("is_floating_point",), "template <class T>\n"
                            "inline constexpr bool is_floating_point_v = is_floating_point<T>::value;"),
    # <type_traits>: the integral types of [basic.fundamental] (TE's DIVUP_TO_MULTIPLE asserts it)
    "is_integral_base": (("true_type", "false_type"),
                         "// Whether T is one of U...\n"
                         "template <class T, class... U>\nstruct is_integral_base : false_type {};\n"
                         "template <class T, class... U>\nstruct is_integral_base<T, T, U...> : true_type {};\n"
                         "template <class T, class V, class... U>\n"
                         "struct is_integral_base<T, V, U...> : is_integral_base<T, U...> {};"),
    "is_integral": (("is_integral_base", "remove_cv_t"),
                    "template <class T>\nstruct is_integral\n"
                    "    : is_integral_base<remove_cv_t<T>, bool, char, signed char, unsigned char, wchar_t,\n"
                    "                       char16_t, char32_t, short, unsigned short, int, unsigned int, long,\n"
                    "                       unsigned long, long long, unsigned long long> {};"),
    "is_integral_v": (("is_integral",), "template <class T>\n"
                      "inline constexpr bool is_integral_v = is_integral<T>::value;"),
    "min": ((), f"template <class T>\n{_HD} constexpr const T &min(const T &a, const T &b) {{\n"
                "  return (b < a) ? b : a;\n}"),
    "max": ((), f"template <class T>\n{_HD} constexpr const T &max(const T &a, const T &b) {{\n"
                "  return (a < b) ? b : a;\n}"),
    # <limits>: the primary template and float/double, for constant expressions such as TE's
    # TypeExtrema<float>::max = std::numeric_limits<float>::max() (other types: libcu++);
    # infinity() for device code only (fused_router's reductions: `-numeric_limits<float>::infinity()`),
    # through the bit-pattern intrinsics NVRTC declares (no constexpr builtin there).
    "numeric_limits": ((), "template <class T>\nstruct numeric_limits;\n"
                           "template <>\nstruct numeric_limits<float> {\n"
                           "  static constexpr bool is_specialized = true;\n"
                           f"  {_HD} static constexpr float max() {{ return 3.40282347e+38F; }}\n"
                           f"  {_HD} static constexpr float min() {{ return 1.17549435e-38F; }}\n"
                           f"  {_HD} static constexpr float lowest() {{ return -3.40282347e+38F; }}\n"
                           f"  {_HD} static constexpr float epsilon() {{ return 1.19209290e-07F; }}\n"
                           "  __device__ static float infinity() { return __int_as_float(0x7f800000); }\n"
                           "};\n"
                           "template <>\nstruct numeric_limits<double> {\n"
                           "  static constexpr bool is_specialized = true;\n"
                           f"  {_HD} static constexpr double max() {{ return 1.7976931348623157e+308; }}\n"
                           f"  {_HD} static constexpr double min() {{ return 2.2250738585072014e-308; }}\n"
                           f"  {_HD} static constexpr double lowest() {{ return -1.7976931348623157e+308; }}\n"
                           f"  {_HD} static constexpr double epsilon() {{ return 2.2204460492503131e-16; }}\n"
                           "  __device__ static double infinity() { return __longlong_as_double(0x7ff0000000000000LL); }\n"
                           "};"),
    # <cstdint>: fixed-width integers by size (long long is 64-bit on every CUDA target; libcu++
    # spells int64_t `long` on LP64 hosts: same size and layout, another type name).
    # <cuda/std/cstdint> lives under include/cccl since CUDA 13, a folder a library's NVRTC layer
    # does not always put on the include path.
    "int8_t": ((), "using int8_t = signed char;"),
    "int16_t": ((), "using int16_t = short;"),
    "int32_t": ((), "using int32_t = int;"),
    "int64_t": ((), "using int64_t = long long;"),
    "uint8_t": ((), "using uint8_t = unsigned char;"),
    "uint16_t": ((), "using uint16_t = unsigned short;"),
    "uint32_t": ((), "using uint32_t = unsigned int;"),
    "uint64_t": ((), "using uint64_t = unsigned long long;"),
    "intptr_t": ((), "using intptr_t = long long;"),
    "uintptr_t": ((), "using uintptr_t = unsigned long long;"),
    # glibc's <sys/types.h> (through <stdlib.h>), which TE's grouped MXFP8 kernels spell
    "uint": ((), "using uint = unsigned int;"),
    # <float.h>'s FLT_MAX (bitsandbytes' kernels), GCC's value: NVRTC has no <float.h>
    "FLT_MAX": ((), "#define FLT_MAX 3.40282346638528859811704183484516925e+38F"),
    # <math.h>'s (POSIX, through <cmath>) log2(e), glibc's literal (mamba's `kLog2e = M_LOG2E`)
    "M_LOG2E": ((), "#define M_LOG2E 1.4426950408889634074"),
}


# The standard header each name comes from, for the library's own build (stdnames.additions).
STD_HEADERS: dict[str, str] = {
    **{n: "type_traits" for n in DEFINITIONS if not re.fullmatch(r"u?int(8|16|32|64|ptr)_t|uint|min|max|numeric_limits", n)},
    "min": "algorithm", "max": "algorithm", "numeric_limits": "limits",
    **{n: "cstdint" for n in DEFINITIONS if re.fullmatch(r"u?int(8|16|32|64|ptr)_t", n)},
}


def definitions(names: list[str], have: set[str] = frozenset()) -> tuple[list[str], list[str]]:
    """(texts for the names codemod defines, with what they need first, in a stable order;
    the names it has no definition for, left to the shim's libcu++ include). Names in `have` are
    defined already (by the target) and are neither written nor followed."""
    out: list[str] = []
    done: set[str] = set(have)

    def add(name: str) -> None:
        if name in done:
            return
        done.add(name)
        needs, text = DEFINITIONS[name]
        for n in needs:
            add(n)
        out.append(text)

    for n in names:
        if n in DEFINITIONS:
            add(n)
    return out, [n for n in names if n not in DEFINITIONS]


def shim_path(output_dir: str, name: str) -> str:
    """The generated file of the shim for `<name>`: a `.h` file (so the target's license and format
    hooks see it), shipped to NVRTC under the include name `name`: `shims/cstdint.h` for <cstdint>,
    `shims/stdint.h` for <stdint.h> (the folder is on no include path)."""
    return f"{output_dir}/shims/{name}" if name.endswith(".h") else f"{output_dir}/shims/{name}.h"
