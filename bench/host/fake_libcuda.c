// A stand-in libcuda.so.1 for measuring kfuse's host code on a machine
// without a GPU: every call succeeds at once; memory is malloc'd.
#include <cuda.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
static int handles = 1;
#define H(T) ((T)(intptr_t)(handles++ * 16))
CUresult cuInit(unsigned f) { return 0; }
CUresult cuGetErrorName(CUresult e, const char **s) { *s = "FAKE"; return 0; }
CUresult cuGetErrorString(CUresult e, const char **s) { *s = "fake"; return 0; }
CUresult cuDeviceGetCount(int *c) { *c = 1; return 0; }
CUresult cuDeviceGet(CUdevice *d, int o) { *d = 0; return 0; }
CUresult cuDeviceGetName(char *n, int len, CUdevice d) { strncpy(n, "Fake H200", len); return 0; }
CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 50 << 20; break;
  default: *v = 1; break;
  }
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { *c = H(CUcontext); return 0; }
CUresult cuCtxSetCurrent(CUcontext c) { return 0; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { *p = (CUdeviceptr)aligned_alloc(256, (n + 255) / 256 * 256); return 0; }
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)p); return 0; }
CUresult cuMemGetInfo_v2(size_t *f, size_t *t) { *f = *t = (size_t)80 << 30; return 0; }
CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s) { return cuMemAlloc_v2(p, n); }
CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) { return cuMemFree_v2(p); }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { memcpy((void *)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { memcpy(d, (void *)s, n); return 0; }
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { return 0; }
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { return 0; }
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) { return 0; }
CUresult cuModuleLoadData(CUmodule *m, const void *img) { *m = H(CUmodule); return 0; }
CUresult cuModuleUnload(CUmodule m) { return 0; }
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *n) { *f = H(CUfunction); return 0; }
CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f) { *v = 32; return 0; }
CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) { return 0; }
static char cubin[64] = "\x7f" "ELF fake cubin";
CUresult cuLinkCreate_v2(unsigned n, CUjit_option *o, void **v, CUlinkState *s) { *s = H(CUlinkState); return 0; }
CUresult cuLinkAddData_v2(CUlinkState s, CUjitInputType t, void *d, size_t n, const char *name, unsigned no, CUjit_option *o, void **v) { return 0; }
CUresult cuLinkComplete(CUlinkState s, void **c, size_t *n) { *c = cubin; *n = sizeof cubin; return 0; }
CUresult cuLinkDestroy(CUlinkState s) { return 0; }
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sh, CUstream s, void **p, void **e) { return 0; }
CUresult cuStreamCreate(CUstream *s, unsigned f) { *s = H(CUstream); return 0; }
CUresult cuStreamDestroy_v2(CUstream s) { return 0; }
CUresult cuStreamSynchronize(CUstream s) { return 0; }
CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned f) { return 0; }
CUresult cuEventCreate(CUevent *e, unsigned f) { *e = H(CUevent); return 0; }
CUresult cuEventDestroy_v2(CUevent e) { return 0; }
CUresult cuEventRecord(CUevent e, CUstream s) { return 0; }
CUresult cuEventSynchronize(CUevent e) { return 0; }
CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) { *ms = 0.001f; return 0; }
CUresult cuGraphCreate(CUgraph *g, unsigned f) { *g = H(CUgraph); return 0; }
CUresult cuGraphDestroy(CUgraph g) { return 0; }
CUresult cuGraphAddKernelNode_v2(CUgraphNode *n, CUgraph g, const CUgraphNode *d, size_t nd, const CUDA_KERNEL_NODE_PARAMS *p) { *n = H(CUgraphNode); return 0; }
CUresult cuGraphAddMemcpyNode(CUgraphNode *n, CUgraph g, const CUgraphNode *d, size_t nd, const CUDA_MEMCPY3D *p, CUcontext c) { *n = H(CUgraphNode); return 0; }
CUresult cuGraphAddMemsetNode(CUgraphNode *n, CUgraph g, const CUgraphNode *d, size_t nd, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext c) { *n = H(CUgraphNode); return 0; }
CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec e, CUgraphNode n, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext c) { return 0; }
CUresult cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long f) { *e = H(CUgraphExec); return 0; }
CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p) { return 0; }
CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec e, CUgraphNode n, const CUDA_MEMCPY3D *p, CUcontext c) { return 0; }
CUresult cuGraphExecDestroy(CUgraphExec e) { return 0; }
CUresult cuGraphLaunch(CUgraphExec e, CUstream s) { return 0; }
CUresult cuDeviceGraphMemTrim(CUdevice d) { return 0; }
CUresult cuDeviceGetGraphMemAttribute(CUdevice d, CUgraphMem_attribute a, void *v) { *(uint64_t *)v = 0; return 0; }
CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st) { *st = CU_STREAM_CAPTURE_STATUS_NONE; return 0; }
CUresult cuTensorMapEncodeTiled(CUtensorMap *m, CUtensorMapDataType t, cuuint32_t r, void *a, const cuuint64_t *d, const cuuint64_t *s, const cuuint32_t *b, const cuuint32_t *es, CUtensorMapInterleave i, CUtensorMapSwizzle sw, CUtensorMapL2promotion l, CUtensorMapFloatOOBfill o) { memset(m, 0, sizeof *m); return 0; }
