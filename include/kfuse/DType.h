//===- kfuse/DType.h - element types ----------------------------*- C++ -*-===//

#ifndef KFUSE_DTYPE_H
#define KFUSE_DTYPE_H

#include <cstddef>
#include <optional>
#include <string_view>

namespace kfuse {

/// i64 holds indices (gather, iota, cast); it is not reduced or multiplied
/// as matrices.
enum class DType { f32, f16, bf16, i32, i1, i64 };

/// "f32", "f16", "bf16", "i32", "i1" or "i64".
const char *dtypeName(DType dtype);
/// The dtype with that name, or nullopt.
std::optional<DType> parseDType(std::string_view name);
/// Bytes per element in a buffer (i1 is stored as one byte, 0 or 1).
size_t dtypeSize(DType dtype);
bool isFloat(DType dtype);

} // namespace kfuse

#endif // KFUSE_DTYPE_H
