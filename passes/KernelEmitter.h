//===- KernelEmitter.h - scalar code for kf ops inside a gpu.func -*- C++ -*-===//
//
// Shared by the kernel templates of kf-lower-to-gpu. A template loops over
// its work items; whenever it needs the element of a tensor of the fused
// body at some index, it asks `elementAt`, which loads kernel inputs and
// recomputes pointwise producers (elementwise math, casts, broadcasts,
// transposes, reshapes, iota, constants) in registers. This is how a fused
// elementwise prologue or body costs no memory traffic.
//
// Values are computed in f32 for every float dtype, i32, or i1; they are
// widened on load and rounded once on store.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_PASSES_KERNELEMITTER_H
#define KFUSE_PASSES_KERNELEMITTER_H

#include "ir/KFDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <functional>

namespace kfuse::kf {

class KernelEmitter {
public:
  /// `func` is the gpu.func being built: its arguments are one memref per
  /// kernel input, then one per kernel result.
  KernelEmitter(KernelOp kernel, mlir::gpu::GPUFuncOp func);

  mlir::OpBuilder &builder() { return b; }
  mlir::Location loc() const { return location; }
  KernelOp kernel() const { return kernelOp; }

  /// The element of `tensor` (a value of the kernel body) at `index`.
  mlir::FailureOr<mlir::Value> elementAt(mlir::Value tensor,
                                         mlir::ValueRange index);
  /// Stores `value` (in compute type) into result `result` at `index`.
  void storeResult(unsigned result, mlir::ValueRange index, mlir::Value value);

  /// for item in [first, items) step stride: body(item); with the kernel's
  /// launch config giving first = global thread id, stride = all threads.
  void forEachItem(int64_t items,
                   llvm::function_ref<mlir::LogicalResult(mlir::Value)> body,
                   mlir::LogicalResult &status);
  /// scf.for over [0, count) with loop-carried `init`; body returns the
  /// next values.
  mlir::SmallVector<mlir::Value>
  loop(int64_t count, mlir::ValueRange init,
       llvm::function_ref<mlir::SmallVector<mlir::Value>(mlir::Value,
                                                         mlir::ValueRange)>
           body);

  /// Row-major index of `linear` in `shape`, and back.
  mlir::SmallVector<mlir::Value> delinearize(mlir::Value linear,
                                             llvm::ArrayRef<int64_t> shape);
  mlir::Value linearize(mlir::ValueRange index, llvm::ArrayRef<int64_t> shape);

  mlir::Value index(int64_t value);
  mlir::Value f32(double value);
  /// The type values of dtype `type` are computed in: f32, i32 or i1.
  static mlir::Type computeType(mlir::Type dtype);

private:
  mlir::Value load(mlir::Value memref, mlir::ValueRange index);
  mlir::FailureOr<mlir::Value> scalarOp(mlir::Operation *op,
                                        mlir::ValueRange operands);
  mlir::Value castScalar(mlir::Value v, mlir::Type from, mlir::Type to);
  mlir::FailureOr<mlir::Value> constantAt(ConstantOp op,
                                          mlir::ValueRange index);

  KernelOp kernelOp;
  mlir::gpu::GPUFuncOp func;
  mlir::OpBuilder b;
  mlir::Location location;
  /// The last index each value was computed at, with the value: a thread
  /// reuses an element it already has (a fused DAG with shared operands).
  llvm::DenseMap<mlir::Value,
                 std::pair<mlir::SmallVector<mlir::Value, 4>, mlir::Value>>
      computed;
};

} // namespace kfuse::kf

#endif // KFUSE_PASSES_KERNELEMITTER_H
