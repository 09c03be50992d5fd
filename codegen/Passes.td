//===- Passes.td - kfuse's lowering passes -----------------*- tablegen -*-===//
//
// The passes that lower kf.kernel regions to the gpu dialect and on towards
// NVVM: def KF<Name>Pass, argument kf-<name>, implemented in
// codegen/<Name>.cpp and tested in tests/lit/passes/kf-<name>.mlir. The
// graph passes are in transforms/Passes.td; the pass order lives in
// compiler/PassPipeline.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef KF_CODEGEN_PASSES
#define KF_CODEGEN_PASSES

include "mlir/Pass/PassBase.td"

def KFLowerToGPUPass : Pass<"kf-lower-to-gpu", "mlir::ModuleOp"> {
  let summary = "Emit one gpu.func per distinct kf.kernel";
  let description = [{
    Creates `gpu.module @kf_kernels` holding one kernel per kf.kernel, named
    in the kernel's `gpu_func` attribute. Kernels that compute the same
    function of their buffers (the same body, decisions and types: the
    repeated layers of a model) share the first one's gpu.func, so LLVM
    and the PTX assembler compile it once. A kernel takes one memref per
    input, then one per result, and computes with scf, arith, math and
    memref ops in f32 (bf16/f16 are widened on load and rounded on store),
    i32 or i1, with 64-bit indexing. The block and the items come from the `#kf.launch`, the template from the `tiling`.
    A warp-specialised matmul (pipeline `tma`) also takes the TMA tensor maps
    of A and B, as `!llvm.ptr` arguments after the memrefs, counted in the
    gpu.func's `kf.tensor_maps` attribute (see kf-grid-constants).

    After:
    ```mlir
    gpu.module @kf_kernels {
      gpu.func @k0(%in: memref<64xf32>, %out: memref<64xf32>) kernel {
        ... scf.for over the kernel's items ...
        gpu.return
      }
    }
    ```
  }];
  let dependentDialects = [
    "mlir::gpu::GPUDialect", "mlir::scf::SCFDialect",
    "mlir::arith::ArithDialect", "mlir::math::MathDialect",
    "mlir::memref::MemRefDialect", "mlir::vector::VectorDialect",
    "mlir::nvgpu::NVGPUDialect", "mlir::NVVM::NVVMDialect",
    "mlir::LLVM::LLVMDialect",
  ];
}

def KFLowerNVGPUPass : Pass<"kf-lower-nvgpu", "mlir::gpu::GPUModuleOp"> {
  let summary = "Lower the nvgpu ops of tensor-core kernels to NVVM";
  let description = [{
    Rewrites nvgpu.device_async_copy (cp.async), nvgpu.ldmatrix and the
    other nvgpu ops into NVVM ops, with the index width the rest of the
    LLVM lowering uses (upstream's convert-nvgpu-to-nvvm assumes 64 bits,
    whose memref descriptors then do not meet those of a 32-bit
    convert-gpu-to-nvvm). Runs before convert-gpu-to-nvvm; other ops are
    untouched.
  }];
  let options = [
    Option<"indexBitwidth", "index-bitwidth", "unsigned", /*default=*/"64",
           "bits of the index type">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::NVVM::NVVMDialect"];
}

def KFGridConstantsPass : Pass<"kf-grid-constants", "mlir::gpu::GPUModuleOp"> {
  let summary = "Make the tensor-map kernel parameters by-value grid constants";
  let description = [{
    kf-lower-to-gpu counts the last gpu.func arguments that carry a TMA
    tensor map (a CUtensorMap passed by value) in the function attribute
    `kf.tensor_maps`. The lowering of gpu.func drops the argument
    attributes such an argument needs, so this pass, run after
    convert-gpu-to-nvvm, gives those llvm.func arguments `llvm.byval = !llvm.array<128 x i8>`, an alignment
    of 64 and `nvvm.grid_constant`: the TMA then reads the map in parameter
    space instead of a local copy.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::NVVM::NVVMDialect"];
}

#endif // KF_CODEGEN_PASSES
