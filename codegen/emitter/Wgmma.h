//===- Wgmma.h - Hopper wgmma pieces shared by the kernel templates -*- C++ -*-===//
//
// Operand tiles that wgmma reads through matrix descriptors live in shared
// memory in the 128-byte swizzled layouts (PTX ISA, "Shared Memory Matrix
// Layout"): K-major tiles as rows of 64 elements, 16-byte chunk c of row r
// at chunk c ^ (r % 8); M/N-major tiles as atoms of 8 K rows by 64 M/N
// elements, swizzled the same way, the atoms of one atom column (64 K
// rows) contiguous. Used by the matmul (MatmulKernel.cpp) and attention
// (AttentionKernel.cpp) templates.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_WGMMA_H
#define KFUSE_CODEGEN_WGMMA_H

#include "mlir/IR/Builders.h"

namespace kfuse::kf::wgmma {

/// Bytes between the atom columns of an M/N-major tile of 64 K rows.
constexpr int64_t kAtomColumnBytes = 64 * 64 * 2;

/// Element offset of element (r, col) of a tile of `elementBytes`-byte
/// elements: r along M/N and col along K when `kContiguous` (rows of 128
/// bytes), else r along K (64 K rows) and col along M/N.
mlir::Value swizzledOffset(mlir::OpBuilder &b, mlir::Location l, mlir::Value r,
                           mlir::Value col, bool kContiguous,
                           int64_t elementBytes = 2);

/// The matrix descriptor of a tile at shared-memory byte address
/// `byteAddress` in the layout above.
mlir::Value descriptor(mlir::OpBuilder &b, mlir::Location l,
                       mlir::Value byteAddress, bool kContiguous);

/// `desc` moved `bytes` (a multiple of 16) further: one add, as the
/// address field (bits 0-13, in 16-byte units) cannot carry over within
/// the 227 KiB of shared memory.
mlir::Value offsetDescriptor(mlir::OpBuilder &b, mlir::Location l,
                             mlir::Value desc, int64_t bytes);

/// Makes the generic proxy's shared-memory writes (cp.async, st.shared)
/// visible to wgmma, which reads through the async proxy.
void fenceSharedForAsyncProxy(mlir::OpBuilder &b, mlir::Location l);

/// d = a * b + d for m64nNk16 with A from registers (four 32-bit registers
/// of 16-bit pairs, laid out as mma.sync's A fragment for the warp's 16
/// rows) and B through `descriptorB` (M/N-major when `transposeB`). `acc`
/// holds the N / 2 f32 accumulators (ignored unless `accumulate`); returns
/// them updated (asynchronous: wait before reading them).
llvm::SmallVector<mlir::Value>
multiplyRegisterA(mlir::OpBuilder &b, mlir::Location l,
                  llvm::ArrayRef<mlir::Value> acc, llvm::ArrayRef<mlir::Value> a,
                  mlir::Value descriptorB, bool bf16, bool transposeB,
                  bool accumulate = true);

/// An empty asm statement that reads `registers` (32-bit): they stay live,
/// in their registers, until here. A wgmma in flight reads its A registers
/// asynchronously; without this the compiler may reuse them before the
/// wait, and ptxas then serialises the wgmma.
/// `index`, as a value the compilers cannot see through: what is computed
/// from it stays where it is computed (an offset of a loop's one stage,
/// constant, is not hoisted out of the loop, where its registers would be
/// live throughout).
mlir::Value computedHere(mlir::OpBuilder &b, mlir::Location l,
                         mlir::Value index);

void keepRegistersUntilHere(mlir::OpBuilder &b, mlir::Location l,
                            mlir::ValueRange registers);

} // namespace kfuse::kf::wgmma

#endif // KFUSE_CODEGEN_WGMMA_H
