//===- HostTensor.cpp - host buffers in kfuse dtypes ----------------------===//

#include "ir/Numerics.h"
#include "kfuse/Evaluator.h"

#include <cmath>
#include <limits>
#include <random>

namespace kfuse {

HostTensor::HostTensor(DType dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)), numElements_(1) {
  for (int64_t d : shape_)
    numElements_ *= static_cast<size_t>(d);
  data_.assign(numElements_ * dtypeSize(dtype), 0);
}

HostTensor HostTensor::random(DType dtype, std::vector<int64_t> shape,
                              uint64_t seed) {
  HostTensor t(dtype, std::move(shape));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::uniform_int_distribution<int> small(-8, 8), coin(0, 1);
  for (size_t i = 0; i < t.numElements(); ++i) {
    if (isFloat(dtype))
      t.set(i, uniform(rng));
    else if (dtype == DType::i32 || dtype == DType::i64)
      t.set(i, small(rng));
    else
      t.set(i, coin(rng));
  }
  return t;
}

double HostTensor::get(size_t i) const {
  const unsigned char *p = data_.data() + i * dtypeSize(dtype_);
  switch (dtype_) {
  case DType::f32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case DType::f16:
  case DType::bf16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return dtype_ == DType::f16 ? numerics::f16ToFloat(h)
                                : numerics::bf16ToFloat(h);
  }
  case DType::i32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::i1:
    return *p ? 1.0 : 0.0;
  case DType::i64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return static_cast<double>(v);
  }
  }
  return 0;
}

void HostTensor::set(size_t i, double value) {
  unsigned char *p = data_.data() + i * dtypeSize(dtype_);
  switch (dtype_) {
  case DType::f32: {
    float f = static_cast<float>(value);
    std::memcpy(p, &f, 4);
    return;
  }
  case DType::f16:
  case DType::bf16: {
    float f = numerics::toFloatRoundOdd(value);
    uint16_t h = dtype_ == DType::f16 ? numerics::floatToF16(f)
                                      : numerics::floatToBF16(f);
    std::memcpy(p, &h, 2);
    return;
  }
  case DType::i32: {
    int32_t v = static_cast<int32_t>(value);
    std::memcpy(p, &v, 4);
    return;
  }
  case DType::i1:
    *p = value != 0.0;
    return;
  case DType::i64: {
    // Saturated: 2^63 has no int64, and a cast of it is undefined.
    int64_t v = std::isnan(value)      ? 0
                : value >= 0x1p63      ? INT64_MAX
                : value < -0x1p63      ? INT64_MIN
                                       : static_cast<int64_t>(value);
    std::memcpy(p, &v, 8);
    return;
  }
  }
}

double relativeError(const HostTensor &actual, const HostTensor &expected) {
  if (actual.numElements() != expected.numElements())
    return std::numeric_limits<double>::infinity();
  double diff = 0, norm = 0;
  for (size_t i = 0; i < actual.numElements(); ++i) {
    double a = actual.get(i), e = expected.get(i);
    if (std::isnan(a) || std::isnan(e)) {
      if (std::isnan(a) && std::isnan(e))
        continue;
      return std::numeric_limits<double>::quiet_NaN();
    }
    if (std::isinf(a) || std::isinf(e)) {
      if (a == e)
        continue;
      return std::numeric_limits<double>::infinity();
    }
    diff += (a - e) * (a - e);
    norm += e * e;
  }
  if (norm == 0)
    return diff == 0 ? 0 : std::sqrt(diff);
  return std::sqrt(diff / norm);
}

} // namespace kfuse
