// Synthetic data every backend moves: a buffer's values depend only on its seed and each value's
// index, so that a receiver (a GPU kernel, another process, the host) can compute the checksum
// of what it should have received without being sent it. Compiled by the host compiler and by
// nvcc alike (runtime/cuda fills device buffers with the same values).
#pragma once

#include <cstddef>
#include <cstdint>

#ifdef __CUDACC__
#define ARLSIM_HOST_DEVICE __host__ __device__
#else
#define ARLSIM_HOST_DEVICE
#endif

namespace arlsim::runtime {

// Value i of the buffer with `seed`: a float in [0, 1) with 24 random bits (a SplitMix64 step).
ARLSIM_HOST_DEVICE inline float pattern_value(uint64_t i, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + i + 1;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<float>(x & 0xFFFFFF) * (1.0f / 16777216.0f);
}

// The seed of a buffer: who made it and which of its kernels (or collectives) it is for.
ARLSIM_HOST_DEVICE inline uint64_t pattern_seed(uint64_t who, uint64_t which) {
  return who * 0x100000001B3ull + which * 0xD6E8FEB86659FD93ull + 1;
}

}  // namespace arlsim::runtime

#undef ARLSIM_HOST_DEVICE
