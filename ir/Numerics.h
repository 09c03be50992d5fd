//===- Numerics.h - storage rounding of kfuse dtypes ------------*- C++ -*-===//
//
// Host conversions between float and the 16-bit float formats, rounding to
// nearest even as the GPU's cvt.rn does. NaN stays NaN (quiet).
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_IR_NUMERICS_H
#define KFUSE_IR_NUMERICS_H

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace kfuse::numerics {

inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// double -> float rounding to odd. Rounding that float to nearest-even in
/// a format at least two bits narrower (bf16, f16) gives the correctly
/// rounded result of the double: no double rounding.
inline float toFloatRoundOdd(double v) {
  float f = static_cast<float>(v);
  if (std::isfinite(f) && static_cast<double>(f) != v && !(bitsOf(f) & 1))
    f = std::nextafter(f, v < f ? -INFINITY : INFINITY);
  return f;
}

inline uint16_t floatToBF16(float f) {
  uint32_t u = bitsOf(f);
  if (std::isnan(f))
    return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16ToFloat(uint16_t h) { return floatOf(uint32_t(h) << 16); }

inline uint16_t floatToF16(float f) {
  uint32_t u = bitsOf(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  uint32_t absBits = u & 0x7FFFFFFF;
  if (absBits > 0x7F800000)
    return sign | 0x7E00; // NaN
  if (absBits >= 0x477FF000) // rounds to >= 65520: overflow to inf
    return sign | 0x7C00;
  if (absBits < 0x38800000) { // below the smallest normal: subnormal or 0
    // Scale so the subnormal's integer mantissa is the integer part, and
    // let the FPU round to nearest even.
    float scaled = floatOf(absBits) * 16777216.0f; // 2^24
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  uint32_t mantissa = absBits & 0x7FFFFF;
  uint32_t exponent = (absBits >> 23) - 127 + 15;
  uint32_t half = (exponent << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half; // may carry into the exponent, which is right
  return sign | static_cast<uint16_t>(half);
}

inline float f16ToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  if (exponent == 0) {
    float value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  if (exponent == 31)
    return floatOf(sign | 0x7F800000 | (mantissa << 13));
  return floatOf(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

/// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
/// 3", SC'11): the constants of kf.random, shared by the evaluator and the
/// GPU code so that both compute the same bits.
inline constexpr uint32_t kPhiloxM0 = 0xD2511F53u, kPhiloxM1 = 0xCD9E8D57u;
inline constexpr uint32_t kPhiloxW0 = 0x9E3779B9u, kPhiloxW1 = 0xBB67AE85u;
inline constexpr int kPhiloxRounds = 10;

/// The four output words of Philox4x32-10 for `counter` and `key`.
inline std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> c,
                                          std::array<uint32_t, 2> key) {
  for (int round = 0; round < kPhiloxRounds; ++round) {
    if (round) {
      key[0] += kPhiloxW0;
      key[1] += kPhiloxW1;
    }
    uint64_t p0 = uint64_t(kPhiloxM0) * c[0], p1 = uint64_t(kPhiloxM1) * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ key[0], uint32_t(p1),
         uint32_t(p0 >> 32) ^ c[3] ^ key[1], uint32_t(p0)};
  }
  return c;
}

/// kf.random's element `index`: word index mod 4 of the block of counter
/// index / 4, uniform in [0, 1) with 24 random bits. (Four elements share
/// one Philox evaluation.)
inline float philoxUniform(uint32_t seed, uint32_t stream, uint64_t index) {
  uint64_t block = index / 4;
  uint32_t w = philox4x32({uint32_t(block), uint32_t(block >> 32), stream, 0},
                          {seed, 0})[index % 4];
  return float(w >> 8) * 0x1p-24f;
}

} // namespace kfuse::numerics

#endif // KFUSE_IR_NUMERICS_H
