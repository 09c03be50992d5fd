//===- NumericsTest.cpp - 16-bit float rounding ---------------------------===//

#include "ir/Numerics.h"
#include "kfuse/Evaluator.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace kfuse;
using namespace kfuse::numerics;

namespace {

TEST(Numerics, BF16RoundsToNearestEven) {
  EXPECT_EQ(bf16ToFloat(floatToBF16(1.0f)), 1.0f);
  EXPECT_EQ(bf16ToFloat(floatToBF16(1.00390625f)), 1.0f);      // tie, even
  EXPECT_EQ(bf16ToFloat(floatToBF16(1.01171875f)), 1.015625f); // tie, up
  EXPECT_EQ(bf16ToFloat(floatToBF16(1.005f)), 1.0078125f);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBF16(NAN))));
  EXPECT_EQ(bf16ToFloat(floatToBF16(INFINITY)), INFINITY);
}

TEST(Numerics, F16RoundsNormalsSubnormalsAndOverflow) {
  EXPECT_EQ(f16ToFloat(floatToF16(1.0f)), 1.0f);
  EXPECT_EQ(f16ToFloat(floatToF16(1.00048828125f)), 1.0f); // tie, even
  EXPECT_EQ(f16ToFloat(floatToF16(65504.0f)), 65504.0f);
  EXPECT_EQ(f16ToFloat(floatToF16(65520.0f)), INFINITY);
  EXPECT_EQ(f16ToFloat(floatToF16(std::ldexp(1.0f, -24))), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16ToFloat(floatToF16(std::ldexp(1.0f, -26))), 0.0f);
  EXPECT_EQ(f16ToFloat(floatToF16(-2.5f)), -2.5f);
  EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(NAN))));
}

TEST(Numerics, DoubleRoundsOnceToBF16) {
  // 1 + 2^-8 + 2^-40 is just above a bf16 tie: it must round up, although
  // the nearest float is the tie itself.
  double v = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  HostTensor t(DType::bf16, {1});
  t.set(0, v);
  EXPECT_EQ(t.get(0), 1.0078125);
}

TEST(HostTensor, RandomIsSeededAndNeverAllZero) {
  HostTensor a = HostTensor::random(DType::f32, {64}, 3);
  HostTensor b = HostTensor::random(DType::f32, {64}, 3);
  HostTensor c = HostTensor::random(DType::f32, {64}, 4);
  EXPECT_EQ(relativeError(a, b), 0.0);
  EXPECT_GT(relativeError(a, c), 0.1);
  double norm = 0;
  for (size_t i = 0; i < a.numElements(); ++i)
    norm += std::fabs(a.get(i));
  EXPECT_GT(norm, 1.0);
}

TEST(HostTensor, RelativeErrorSeesNaN) {
  HostTensor a(DType::f32, {2}), b(DType::f32, {2});
  a.set(0, 1);
  b.set(0, 1);
  a.set(1, NAN);
  EXPECT_TRUE(std::isnan(relativeError(a, b)));
  b.set(1, NAN);
  EXPECT_EQ(relativeError(a, b), 0.0);
}

} // namespace
