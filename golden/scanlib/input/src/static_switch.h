// scanlib: a runtime flag made a compile-time constant. The constant takes both values inside the
// lambda passed as the last argument, so each nested switch doubles what the body compiles.
#pragma once

#define SCAN_BOOL_SWITCH(COND, CONST_NAME, ...) \
  [&] {                                         \
    if (COND) {                                 \
      constexpr bool CONST_NAME = true;         \
      return __VA_ARGS__();                     \
    } else {                                    \
      constexpr bool CONST_NAME = false;        \
      return __VA_ARGS__();                     \
    }                                           \
  }()
