//===- Interpreter.h - the reference evaluator's interpreter ----*- C++ -*-===//
//
// Internal to frontend/: the interpreter behind kfuse::evaluate, split over
// Evaluator.cpp (arithmetic, shapes, reductions, contractions) and
// EvaluatorIndexing.cpp (slice, concat, pad, gather, random).
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_FRONTEND_INTERPRETER_H
#define KFUSE_FRONTEND_INTERPRETER_H

#include "ir/KFDialect.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <vector>

namespace kfuse::detail {

using mlir::ArrayRef;
using mlir::Block;
using mlir::RankedTensorType;
using mlir::FailureOr;
using mlir::LogicalResult;
using mlir::Operation;
using mlir::Value;
using llvm::SmallVector;
using llvm::SmallVectorImpl;

struct Buffer {
  SmallVector<int64_t, 4> shape;
  std::vector<double> data;
};

inline SmallVector<int64_t, 4> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t, 4> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Calls fn(outIndex, multiIndex) for every element of `shape`.
template <typename Fn> void forEachIndex(ArrayRef<int64_t> shape, Fn fn) {
  SmallVector<int64_t, 4> index(shape.size(), 0);
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  for (int64_t linear = 0; linear < count; ++linear) {
    fn(linear, ArrayRef<int64_t>(index));
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
}

class Interpreter {
public:
  /// `roundEachOp`: EvaluateOptions::roundEachOp.
  explicit Interpreter(bool roundEachOp = false) : roundEachOp(roundEachOp) {}
  LogicalResult run(Block &block, ArrayRef<Buffer> args,
                    SmallVectorImpl<Buffer> &results);

private:
  FailureOr<Buffer> eval(Operation *op);
  const Buffer &in(Value v) { return env.find(v)->second; }
  Buffer like(Value result) {
    Buffer b;
    b.shape.assign(mlir::cast<RankedTensorType>(result.getType()).getShape().begin(),
                   mlir::cast<RankedTensorType>(result.getType()).getShape().end());
    int64_t n = 1;
    for (int64_t d : b.shape)
      n *= d;
    b.data.assign(n, 0.0);
    return b;
  }
  /// Ops of the SameOperandsAndResult trait: unary and binary arithmetic.
  Buffer evalElementwise(Operation *op);
  Buffer evalIota(kf::IotaOp op);
  Buffer evalSoftmax(kf::SoftmaxOp op);
  Buffer evalConstant(kf::ConstantOp op);
  Buffer evalBroadcast(kf::BroadcastOp op);
  Buffer evalTranspose(kf::TransposeOp op);
  Buffer evalReduce(kf::ReduceOp op);
  Buffer evalMatmul(kf::MatmulOp op);
  Buffer evalAttention(kf::AttentionOp op);
  Buffer evalAttentionGrad(kf::AttentionGradOp op);
  // The indexing ops (EvaluatorIndexing.cpp).
  Buffer evalSlice(kf::SliceOp op);
  Buffer evalConcat(kf::ConcatOp op);
  Buffer evalPad(kf::PadOp op);
  Buffer evalGather(kf::GatherOp op);
  Buffer evalIndexAdd(kf::IndexAddOp op);
  Buffer evalTakeAlongAxis(kf::TakeAlongAxisOp op);
  Buffer evalRandom(kf::RandomOp op);
  // The ops along one axis (EvaluatorAxisOps.cpp).
  Buffer evalArgReduce(kf::ArgReduceOp op);
  Buffer evalCumsum(kf::CumsumOp op);
  FailureOr<Buffer> evalKernel(kf::KernelOp op);

  llvm::DenseMap<Value, Buffer> env;
  bool roundEachOp;
};

} // namespace kfuse::detail

#endif // KFUSE_FRONTEND_INTERPRETER_H
