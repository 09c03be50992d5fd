// RUN: kfuse-opt %s --pass-pipeline='builtin.module(gpu.module(kf-lower-nvgpu{index-bitwidth=32}))' | FileCheck %s
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(gpu.module(kf-lower-nvgpu))' | FileCheck %s --check-prefix=WIDE

// cp.async and ldmatrix become NVVM ops; the memref descriptors they read
// use the index width asked for (32 bits here, as convert-gpu-to-nvvm will).
// CHECK-LABEL: gpu.func @copy_and_load
// CHECK: builtin.unrealized_conversion_cast %{{.*}} : memref<64xbf16> to !llvm.struct<(ptr, ptr, i32, array<1 x i32>, array<1 x i32>)>
// CHECK: nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache = cg
// CHECK: nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 4 : i32
// CHECK-NOT: nvgpu.
// WIDE: !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>

// A memref cast to a pointer (the address that inline PTX such as the bulk
// reduction takes) becomes the descriptor's aligned pointer plus its
// offset: a pointer of 64 bits, never an address taken as a 32-bit index.
// CHECK-LABEL: gpu.func @address
// CHECK: %[[D:.*]] = builtin.unrealized_conversion_cast %{{.*}} : memref<?x64xf32, strided<[64, 1], offset: ?>> to !llvm.struct
// CHECK-DAG: %[[BASE:.*]] = llvm.extractvalue %[[D]][1]
// CHECK-DAG: %[[OFFSET:.*]] = llvm.extractvalue %[[D]][2]
// CHECK: %[[AT:.*]] = llvm.getelementptr %[[BASE]][%[[OFFSET]]] : (!llvm.ptr, i32) -> !llvm.ptr, f32
// CHECK: %[[GLOBAL:.*]] = llvm.addrspacecast %[[AT]] : !llvm.ptr to !llvm.ptr<1>
// CHECK: llvm.ptrtoint %[[GLOBAL]] : !llvm.ptr<1> to i64
// CHECK-NOT: unrealized_conversion_cast {{.*}} to !llvm.ptr
gpu.module @kernels {
  gpu.func @copy_and_load(%g: memref<64xbf16>, %out: memref<8xbf16>) kernel {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %bytes = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %s = memref.view %bytes[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<256xbf16, #gpu.address_space<workgroup>>
    %t = nvgpu.device_async_copy %g[%c0], %s[%c8], 8, %c8 {bypassL1} : memref<64xbf16> to memref<256xbf16, #gpu.address_space<workgroup>>
    %f = nvgpu.ldmatrix %s[%c0] {numTiles = 4 : i32, transpose = true} : memref<256xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
    %p = vector.extract %f[0] : vector<2xbf16> from vector<4x2xbf16>
    vector.store %p, %out[%c0] : memref<8xbf16>, vector<2xbf16>
    gpu.return
  }

  gpu.func @address(%g: memref<?x64xf32, strided<[64, 1], offset: ?>>) kernel {
    %p = builtin.unrealized_conversion_cast %g : memref<?x64xf32, strided<[64, 1], offset: ?>> to !llvm.ptr<1>
    %i = llvm.ptrtoint %p : !llvm.ptr<1> to i64
    llvm.inline_asm has_side_effects "prefetch.global.L2 [$0];", "l" %i : (i64) -> ()
    gpu.return
  }
}
