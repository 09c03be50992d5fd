//===- TemplateSupport.cpp - what the kernel templates share --------------===//
//
// The helpers KernelTemplates.h declares for every template: the kernel's
// root value and log-sum-exp result, reduction arithmetic, shared-memory
// buffers.
//
//===----------------------------------------------------------------------===//

#include "analysis/KernelAnalysis.h"
#include "codegen/templates/KernelTemplates.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace kfuse::kf;

Value kfuse::kf::rootValue(KernelOp kernel) {
  return mlir::cast<YieldOp>(kernel.getBody().front().getTerminator())
      .getValues()[0];
}

std::optional<unsigned> kfuse::kf::resultIndexOf(KernelOp kernel, Value value) {
  auto yield = mlir::cast<YieldOp>(kernel.getBody().front().getTerminator());
  for (auto [i, v] : llvm::enumerate(yield.getValues()))
    if (v == value)
      return unsigned(i);
  return std::nullopt;
}

std::optional<unsigned> kfuse::kf::lseResultOf(KernelOp kernel,
                                               AttentionOp op) {
  if (!op.getLse())
    return std::nullopt;
  return resultIndexOf(kernel, op.getLse());
}

Value kfuse::kf::combine(KernelEmitter &e, ReduceKind kind, Value acc, Value v) {
  OpBuilder &b = e.builder();
  bool isFloat = isa<FloatType>(acc.getType());
  switch (kind) {
  case ReduceKind::sum:
  case ReduceKind::mean:
    return isFloat ? Value(arith::AddFOp::create(b, e.loc(), acc, v))
                   : Value(arith::AddIOp::create(b, e.loc(), acc, v));
  case ReduceKind::max:
    return isFloat ? Value(arith::MaximumFOp::create(b, e.loc(), acc, v))
                   : Value(arith::MaxSIOp::create(b, e.loc(), acc, v));
  case ReduceKind::min:
    return isFloat ? Value(arith::MinimumFOp::create(b, e.loc(), acc, v))
                   : Value(arith::MinSIOp::create(b, e.loc(), acc, v));
  }
  return acc;
}

Value kfuse::kf::reductionInit(KernelEmitter &e, ReduceKind kind, Type type) {
  if (isa<FloatType>(type))
    return e.f32(kind == ReduceKind::max   ? -INFINITY
                 : kind == ReduceKind::min ? INFINITY
                                           : 0.0);
  return e.constant(type, kind == ReduceKind::max   ? INT32_MIN
                          : kind == ReduceKind::min ? INT32_MAX
                                                    : 0);
}

LogicalResult kfuse::kf::storeResultsAt(KernelEmitter &e, Value at) {
  auto yield = cast<YieldOp>(e.kernel().getBody().front().getTerminator());
  for (auto [i, root] : llvm::enumerate(yield.getValues())) {
    FailureOr<Value> out =
        e.elementAt(root, ElementIndex::linear(shapeOf(root), at));
    if (failed(out))
      return failure();
    e.storeResult(i, at, *out);
  }
  return success();
}

Value kfuse::kf::workgroupBuffer(KernelEmitter &e, int64_t count,
                                 Type element) {
  OpBuilder &b = e.builder();
  return e.gpuFunc().addWorkgroupAttribution(
      MemRefType::get({count}, element ? element : b.getF32Type(), AffineMap(),
                      gpu::AddressSpaceAttr::get(b.getContext(),
                                                 gpu::AddressSpace::Workgroup)),
      e.loc());
}

Value kfuse::kf::dynamicSharedView(OpBuilder &b, Location l,
                                           int64_t elements, Type dtype) {
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                              gpu::AddressSpace::Workgroup);
  Value bytes = gpu::DynamicSharedMemoryOp::create(
      b, l, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(),
                            workgroup));
  return memref::ViewOp::create(
      b, l, MemRefType::get({elements}, dtype, AffineMap(), workgroup), bytes,
      arith::ConstantIndexOp::create(b, l, 0), ValueRange{});
}
