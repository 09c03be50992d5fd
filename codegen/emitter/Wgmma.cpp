//===- Wgmma.cpp - Hopper wgmma pieces shared by the kernel templates -----===//

#include "codegen/emitter/Wgmma.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;

namespace kfuse::kf::wgmma {
namespace {

/// Descriptor fields for the 128-byte swizzle, in units of 16 bytes.
constexpr int64_t kSwizzle128B = int64_t(1) << 62;
/// K-major: 8-row groups 1024 bytes apart (the leading offset is unused).
constexpr int64_t kKMajorDescriptor = kSwizzle128B |
                                      (int64_t(1024 / 16) << 32) |
                                      (int64_t(16 / 16) << 16);
/// M/N-major: 8-row K groups 1024 bytes apart, atom columns
/// kAtomColumnBytes apart.
constexpr int64_t kMNMajorDescriptor = kSwizzle128B |
                                       (int64_t(1024 / 16) << 32) |
                                       (int64_t(kAtomColumnBytes / 16) << 16);

Value index(OpBuilder &b, Location l, int64_t v) {
  return arith::ConstantIndexOp::create(b, l, v);
}

} // namespace

Value swizzledOffset(OpBuilder &b, Location l, Value r, Value col,
                     bool kContiguous, int64_t elementBytes) {
  auto add = [&](Value x, Value y) { return arith::AddIOp::create(b, l, x, y); };
  auto mul = [&](Value x, int64_t c) {
    return arith::MulIOp::create(b, l, x, index(b, l, c));
  };
  auto div = [&](Value x, int64_t c) {
    return arith::DivUIOp::create(b, l, x, index(b, l, c));
  };
  auto rem = [&](Value x, int64_t c) {
    return arith::RemUIOp::create(b, l, x, index(b, l, c));
  };
  // 16-byte chunk c of a 128-byte row r lies at chunk c ^ (r % 8).
  int64_t perChunk = 16 / elementBytes, perRow = 128 / elementBytes;
  Value chunk =
      arith::XOrIOp::create(b, l, rem(div(col, perChunk), 8), rem(r, 8));
  if (kContiguous)
    return add(mul(r, perRow), mul(chunk, perChunk));
  return add(add(mul(div(col, perRow), kAtomColumnBytes / elementBytes),
                 mul(div(r, 8), 8 * perRow)),
             add(mul(rem(r, 8), perRow), mul(chunk, perChunk)));
}

Value descriptor(OpBuilder &b, Location l, Value byteAddress,
                 bool kContiguous) {
  auto i64 = [&](int64_t v) {
    return arith::ConstantOp::create(b, l, b.getI64IntegerAttr(v));
  };
  Value address = arith::IndexCastOp::create(b, l, b.getI64Type(), byteAddress);
  Value field = arith::AndIOp::create(
      b, l, arith::ShRUIOp::create(b, l, address, i64(4)), i64(0x3FFF));
  return arith::OrIOp::create(
      b, l, field, i64(kContiguous ? kKMajorDescriptor : kMNMajorDescriptor));
}

Value offsetDescriptor(OpBuilder &b, Location l, Value desc, int64_t bytes) {
  if (bytes == 0)
    return desc;
  return arith::AddIOp::create(
      b, l, desc, arith::ConstantOp::create(b, l, b.getI64IntegerAttr(bytes / 16)));
}

void fenceSharedForAsyncProxy(OpBuilder &b, Location l) {
  NVVM::FenceProxyOp::create(
      b, l, NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(b.getContext(), NVVM::SharedSpace::shared_cta));
}

SmallVector<Value> multiplyRegisterA(OpBuilder &b, Location l,
                                     ArrayRef<Value> acc, ArrayRef<Value> a,
                                     Value descriptorB, bool bf16,
                                     bool transposeB, bool accumulate) {
  // NVVM's wgmma op takes A through a descriptor only: this one is written
  // as PTX. Operands: the accumulators ($0..), tied to the inputs after
  // them, then A's registers and B's descriptor.
  int64_t n = int64_t(acc.size()) * 2, count = int64_t(acc.size());
  std::string ptx, constraints;
  llvm::raw_string_ostream os(ptx), cs(constraints);
  os << "{\n.reg .pred p;\nsetp.ne.b32 p, " << (accumulate ? 1 : 0)
     << ", 0;\n"
     << "wgmma.mma_async.sync.aligned.m64n" << n << "k16.f32."
     << (bf16 ? "bf16.bf16" : "f16.f16") << " {";
  for (int64_t i = 0; i < count; ++i) {
    os << (i ? ", $" : "$") << i;
    cs << "=f,";
  }
  os << "}, {$" << 2 * count << ", $" << 2 * count + 1 << ", $"
     << 2 * count + 2 << ", $" << 2 * count + 3 << "}, $" << 2 * count + 4
     << ", p, 1, 1, " << (transposeB ? 1 : 0) << ";\n}\n";
  for (int64_t i = 0; i < count; ++i)
    cs << i << ",";
  cs << "r,r,r,r,l";
  SmallVector<Value> operands(acc.begin(), acc.end());
  operands.append(a.begin(), a.end());
  operands.push_back(descriptorB);
  Type f32 = b.getF32Type();
  auto result = LLVM::LLVMStructType::getLiteral(
      b.getContext(), SmallVector<Type>(count, f32));
  Value d = LLVM::InlineAsmOp::create(
                b, l, result, operands, ptx, constraints,
                /*has_side_effects=*/true, /*is_align_stack=*/false,
                LLVM::tailcallkind::TailCallKind::None,
                LLVM::AsmDialectAttr::get(b.getContext(),
                                          LLVM::AsmDialect::AD_ATT),
                ArrayAttr())
                .getResult(0);
  SmallVector<Value> out;
  for (int64_t i = 0; i < count; ++i)
    out.push_back(LLVM::ExtractValueOp::create(b, l, d, i));
  return out;
}

Value computedHere(OpBuilder &b, Location l, Value index) {
  Value wide = arith::IndexCastOp::create(b, l, b.getI64Type(), index);
  Value copy =
      LLVM::InlineAsmOp::create(
          b, l, b.getI64Type(), ValueRange{wide}, "mov.b64 $0, $1;", "=l,l",
          /*has_side_effects=*/true, /*is_align_stack=*/false,
          LLVM::tailcallkind::TailCallKind::None,
          LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
          ArrayAttr())
          .getResult(0);
  return arith::IndexCastOp::create(b, l, b.getIndexType(), copy);
}

void keepRegistersUntilHere(OpBuilder &b, Location l, ValueRange registers) {
  std::string constraints;
  for (size_t i = 0; i < registers.size(); ++i)
    constraints += i ? ",r" : "r";
  LLVM::InlineAsmOp::create(
      b, l, TypeRange(), registers, "", constraints,
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      ArrayAttr());
}

} // namespace kfuse::kf::wgmma
