// JARVIS_ASAN is 1 in AddressSanitizer builds (GCC or clang), else 0: tests
// with time or memory bounds widen them there (ASan runs ~3x slower and keeps
// freed memory in its quarantine). The sanitized build compiles the tests
// themselves uninstrumented and defines it on the command line (CMakeLists.txt).
#pragma once

#if defined(JARVIS_ASAN)
#elif defined(__SANITIZE_ADDRESS__)
#define JARVIS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JARVIS_ASAN 1
#endif
#endif
#ifndef JARVIS_ASAN
#define JARVIS_ASAN 0
#endif

// How much longer a wall-clock bound may take under ASan + UBSan: the
// instrumented build runs ~3x slower, and CI runs it in two shards on two
// cores beside each other.
constexpr int kSanitizerSlowdown = JARVIS_ASAN ? 4 : 1;
