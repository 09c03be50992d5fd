// RUN: kfuse-opt %s --pass-pipeline="builtin.module(gpu.module(kf-grid-constants))" | FileCheck %s

// The last two arguments of a kernel that counts two tensor maps become
// by-value, 64-byte aligned grid constants of 128 bytes; the buffer
// before them and functions without the count are left alone.
// CHECK-LABEL: llvm.func @tma_kernel
// CHECK-SAME: (%{{.*}}: !llvm.ptr {llvm.align = 16 : i64},
// CHECK-SAME: %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
// CHECK-SAME: %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant})
// CHECK-NOT: kf.tensor_maps
// CHECK-LABEL: llvm.func @plain_kernel
// CHECK-SAME: (%{{.*}}: !llvm.ptr {llvm.align = 16 : i64}, %{{.*}}: !llvm.ptr)
gpu.module @kf_kernels {
  llvm.func @tma_kernel(%out: !llvm.ptr {llvm.align = 16 : i64}, %a: !llvm.ptr, %b: !llvm.ptr) attributes {kf.tensor_maps = 2 : i64, nvvm.kernel} {
    llvm.return
  }
  llvm.func @plain_kernel(%out: !llvm.ptr {llvm.align = 16 : i64}, %x: !llvm.ptr) attributes {nvvm.kernel} {
    llvm.return
  }
}
