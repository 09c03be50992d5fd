//===- Executable.cpp - Compiler, Executable and the kernel cache ---------===//
//
// The in-memory cache maps a full key (kfuse and LLVM versions, the
// compiler's build ID, arch, fusion mode, input shapes, graph text) to one
// entry; concurrent callers of one key wait on a once_flag, so a key
// compiles once per process. Below
// it sits the disk cache. The hot path of run() (shapes seen before) does
// no hashing, no allocation and no string work: it compares shapes, checks
// arguments and launches.
//
//===----------------------------------------------------------------------===//

#include "compiler/DeviceArguments.h"
#include "compiler/ExecutableImpl.h"
#include "kfuse/Graph.h"
#include "kfuse/kfuse.h"
#include "runtime/Debug.h"
#include "runtime/DiskCache.h"
#include "llvm/Support/FileSystem.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <unordered_map>

namespace kfuse {

using runtime::Driver;
using namespace detail;

namespace {

std::atomic<uint64_t> statCompiles{0}, statMemoryHits{0}, statDiskHits{0},
    statDiskRejected{0};

class MemoryCache {
public:
  std::shared_ptr<CacheEntry> entry(const std::string &key) {
    std::lock_guard<std::mutex> lock(mutex);
    std::shared_ptr<CacheEntry> &e = entries[key];
    if (!e)
      e = std::make_shared<CacheEntry>();
    else
      ++statMemoryHits;
    return e;
  }

private:
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<CacheEntry>> entries;
};

MemoryCache &memoryCache() {
  static MemoryCache *cache = new MemoryCache();
  return *cache;
}

} // namespace

CacheStats cacheStats() {
  return {statCompiles.load(), statMemoryHits.load(), statDiskHits.load(),
          statDiskRejected.load()};
}

namespace detail {

std::string
ExecutableImpl::keyFor(const std::vector<std::vector<int64_t>> &shapes,
                       bool aligned, bool runtime) const {
  std::string key = std::string("kfuse ") + version() + "\nbuild " +
                    compilerBuildId() + "\nllvm " + llvmVersion() +
                    "\narch " + options.arch + "\nfusion " +
                    (options.fusion == Fusion::Fused ? "fused" : "unfused") +
                    "\npad rows " + (options.padRows ? "16" : "no") +
                    "\ntf32 " + (options.allowTF32 ? "allowed" : "no") +
                    "\nsplit k " + (options.splitK ? "yes" : "no") +
                    // (Only when on: keys from before the option still hit.)
                    (options.splitKeys ? "\nsplit keys yes" : "") +
                    (options.deterministic ? "" : "\ndeterministic no") +
                    (options.attentionGradTma ? ""
                                              : "\nattention grad cp.async") +
                    "\nalign " + (aligned ? "16" : "element") + "\nshapes";
  for (const std::vector<int64_t> &shape : shapes)
    key += " " + shapeText(shape);
  if (runtime)
    for (const std::string &symbol : runtimeDims.symbols())
      key += "\nat run time " + symbol;
  return key + "\n" + graphText;
}

/// The call's shapes against the declared ones: ranks, static dims, and
/// one size per symbol.
Status ExecutableImpl::bindShapes(
    const std::vector<std::vector<int64_t>> &shapes) const {
  std::map<std::string, std::pair<int64_t, std::string>> symbols;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo &info = inputs[i];
    const std::vector<int64_t> &shape = shapes[i];
    std::string where = "input '" + info.name + "'";
    if (shape.size() != info.shape.size())
      return invalid(where + " has shape " + shapeText(shape) +
                     " but the graph declares " + shapeString(info.shape));
    uint64_t bytes = dtypeSize(info.dtype);
    for (int64_t d : shape)
      if (d > 0 && __builtin_mul_overflow(bytes, uint64_t(d), &bytes))
        return invalid(where + " has shape " + shapeText(shape) +
                       ": more bytes than 64 bits can count");
    for (size_t d = 0; d < shape.size(); ++d) {
      const Dim &dim = info.shape[d];
      if (shape[d] < 0)
        return invalid(where + " has a negative dim in " + shapeText(shape));
      if (!dim.isSymbolic() && dim.size() != shape[d])
        return invalid(where + " has shape " + shapeText(shape) +
                       " but the graph declares " + shapeString(info.shape));
      if (!dim.isSymbolic())
        continue;
      auto [it, inserted] =
          symbols.try_emplace(dim.symbol(), shape[d], where);
      if (!inserted && it->second.first != shape[d])
        return invalid("symbolic dim '" + dim.symbol() + "' is " +
                       std::to_string(it->second.first) + " in " +
                       it->second.second + " but " + std::to_string(shape[d]) +
                       " in " + where);
    }
  }
  return Status::ok();
}

bool ExecutableImpl::matches(const Specialization &spec,
                             const DeviceTensor *in) const {
  for (size_t i = 0; i < spec.inputShapes.size(); ++i)
    if (spec.runtime ? !runtimeDims.matches(i, spec.inputShapes[i], in[i].shape)
                     : !(spec.inputShapes[i] == in[i].shape))
      return false;
  return true;
}

compiler::CompileRequest ExecutableImpl::compileRequest(
    const std::vector<std::vector<int64_t>> &shapes, bool aligned,
    bool runtime) const {
  compiler::CompileRequest request;
  if (runtime)
    request.runtimeSymbols = runtimeDims.symbols();
  request.graphText = graphText;
  request.shapes = shapes;
  request.arch = options.arch;
  request.fused = options.fusion == Fusion::Fused;
  request.padRows = options.padRows;
  request.allowTF32 = options.allowTF32;
  request.splitK = options.splitK;
  request.splitKeys = options.splitKeys;
  request.deterministic = options.deterministic;
  request.attentionGradTma = options.attentionGradTma;
  request.aligned = aligned;
  return request;
}

Expected<const std::string *>
ExecutableImpl::stageText(Specialization &spec, const std::string &stage) {
  CacheEntry &entry = *spec.entry;
  if (auto it = entry.plan.dumps.find(stage); it != entry.plan.dumps.end())
    return &it->second;
  std::call_once(entry.dumped, [&] {
    std::vector<std::vector<int64_t>> shapes;
    for (const Dims &d : spec.inputShapes)
      shapes.emplace_back(d.begin(), d.end());
    // Compiles are deterministic: the same stages the plan came from.
    Expected<runtime::Plan> again = compiler::compileGraph(
        compileRequest(shapes, spec.aligned, spec.runtime));
    if (!again) {
      entry.dumpStatus = again.error();
      return;
    }
    entry.allDumps = std::move(again->dumps);
  });
  if (!entry.dumpStatus)
    return entry.dumpStatus.error();
  auto it = entry.allDumps.find(stage);
  if (it == entry.allDumps.end())
    return Error(ErrorCode::CompileFailed, "no dump of the " + stage +
                                               " stage");
  return &it->second;
}

std::string ExecutableImpl::dumpRoot() const {
  if (!options.dumpDir.empty())
    return options.dumpDir;
  const char *env = std::getenv("KFUSE_DUMP_DIR");
  return env ? env : "";
}

Status ExecutableImpl::compileEntry(
    CacheEntry &entry, const std::string &key,
    const std::vector<std::vector<int64_t>> &shapes, bool aligned,
    bool runtime, std::string *refusal) {
  runtime::DiskCache disk(options.cacheDir);
  if (options.diskCache) {
    bool rejected = false;
    auto start = std::chrono::steady_clock::now();
    if (std::optional<runtime::Plan> plan = disk.load(key, &rejected)) {
      ++statDiskHits;
      if (debugEnabled())
        debugLog("disk cache: hit, " + std::to_string(msSince(start)) +
                 " ms to read and check " +
                 std::to_string(plan->ptx.size() + plan->cubin.size()) +
                 " bytes of PTX and cubin");
      entry.plan = std::move(*plan);
      return Status::ok();
    }
    statDiskRejected += rejected;
  }
  ++statCompiles;
  compiler::CompileRequest request = compileRequest(shapes, aligned, runtime);
  request.refusal = refusal;
  request.printLateStages = !dumpRoot().empty();
  Expected<runtime::Plan> plan = compiler::compileGraph(request);
  if (!plan)
    return plan.error();
  entry.plan = plan.take();
  if (options.diskCache)
    if (Status s = disk.store(key, entry.plan); !s)
      debugLog("cannot store in the disk cache: " + s.message());
  return Status::ok();
}

void ExecutableImpl::writeDumps(Specialization &spec) {
  std::string root = dumpRoot();
  if (root.empty())
    return;
  const runtime::Plan &plan = spec.entry->plan;
  const std::string &key = spec.key;
  // Named by the key without the compiler's build ID, so that the dumps
  // of one compile by two builds of kfuse have one name (a diff -r of two
  // dump directories compares them: scripts/ptx-snapshot.sh).
  std::string stable = key;
  if (size_t at = stable.find("\nbuild "); at != std::string::npos)
    stable.erase(at, stable.find('\n', at + 1) - at);
  std::string dir = root + "/" + graphName + "-" +
                    runtime::DiskCache::digest(stable).substr(0, 12);
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    // Asked for by the user (KFUSE_DUMP_DIR or the option): said always.
    std::fprintf(stderr, "kfuse: cannot create the dump directory %s: %s\n",
                 dir.c_str(), ec.message().c_str());
    return;
  }
  auto write = [&](const std::string &name, const std::string &text) {
    if (text.empty())
      return;
    std::ofstream(dir + "/" + name, std::ios::binary) << text;
  };
  for (auto [stage, file] :
       {std::pair{"graph", "graph.mlir"}, {"fused", "fused.mlir"},
        {"gpu", "gpu.mlir"}, {"llvm", "kernels.ll"}}) {
    Expected<const std::string *> text = stageText(spec, stage);
    if (!text) {
      debugLog("no dumps of the stages: " + text.error().message());
      break;
    }
    write(file, **text);
  }
  write("kernels.ptx", plan.ptx);
  write("ptxas.log", plan.ptxasLog);
}

Expected<Specialization *>
ExecutableImpl::specialize(const std::vector<std::vector<int64_t>> &shapes,
                           bool aligned) {
  bool runtime = takesRuntimeDims();
  std::vector<std::vector<int64_t>> compiled =
      runtime ? runtimeDims.bucketed(shapes) : shapes;
  for (auto &spec : specializations)
    if (spec->aligned == aligned && spec->runtime == runtime &&
        std::equal(spec->inputShapes.begin(), spec->inputShapes.end(),
                   compiled.begin(), compiled.end(),
                   [](const Dims &a, const std::vector<int64_t> &b) {
                     return a == Dims(b);
                   }))
      return spec.get();
  KFUSE_RETURN_IF_ERROR(bindShapes(shapes));
  std::string key = keyFor(compiled, aligned, runtime);
  std::shared_ptr<CacheEntry> entry = memoryCache().entry(key);
  std::call_once(entry->compiled, [&] {
    entry->status = compileEntry(*entry, key, compiled, aligned, runtime,
                                 &entry->runtimeRefusal);
  });
  if (!entry->status && runtime && !entry->runtimeRefusal.empty()) {
    // Exact sizes from now on, as for any symbol.
    runtimeRefusal = entry->runtimeRefusal;
    debugLog("compile: the sizes of " + runtimeDims.symbols().front() +
             (runtimeDims.symbols().size() > 1 ? " and others" : "") +
             " are specialised exactly: " + runtimeRefusal);
    return specialize(shapes, aligned);
  }
  if (!entry->status)
    return entry->status.error();
  auto spec = std::make_unique<Specialization>();
  spec->runtime = runtime;
  spec->reason = runtime ? "new buckets: runs " +
                               runtimeDims.bucketRanges(compiled) +
                               " with the call's sizes"
                 : !runtimeRefusal.empty()
                     ? "new shapes (dynamic dims specialised exactly: " +
                           runtimeRefusal + ")"
                     : "new shapes";
  if (debugEnabled()) {
    std::string text;
    for (const std::vector<int64_t> &shape : compiled)
      text += " " + shapeText(shape);
    debugLog("specialised " + graphName + " for input shapes" + text + ": " +
             spec->reason);
  }
  for (const std::vector<int64_t> &shape : compiled) {
    if (shape.size() > Dims::kMaxRank)
      return invalid("tensors of rank above 8 are not supported").error();
    spec->inputShapes.push_back(Dims(shape));
  }
  spec->key = std::move(key);
  spec->aligned = aligned;
  spec->entry = std::move(entry);
  spec->extents = runtime::ExtentValues(spec->entry->plan);
  spec->inputBytes.assign(inputs.size(), 0);
  spec->table.assign(spec->entry->plan.buffers.size(), 0);
  for (const runtime::LaunchDesc &l : spec->entry->plan.launches)
    spec->kernels += l.grid > 0;
  spec->workspace = runtime::WorkspaceLayout::of(spec->entry->plan);
  writeDumps(*spec);
  specializations.push_back(std::move(spec));
  return specializations.back().get();
}

} // namespace detail
} // namespace kfuse

namespace kfuse::detail {

Status ExecutableImpl::load(Driver &driver, CacheEntry &entry,
                            const std::string &key) {
  std::call_once(entry.loaded, [&] {
    bool jitted = false;
    Expected<runtime::LoadedModule> module =
        runtime::loadPlan(driver, entry.plan, jitted);
    if (!module) {
      entry.loadStatus = module.error();
      return;
    }
    entry.module = *module;
    entry.isLoaded = true;
    // Store the cubin so that the next process skips the JIT as well.
    if (jitted && options.diskCache)
      if (Status s = runtime::DiskCache(options.cacheDir).store(key, entry.plan);
          !s)
        debugLog("cannot store in the disk cache: " + s.message());
  });
  return entry.loadStatus;
}

Status ExecutableImpl::checkArguments(const Specialization &spec,
                                      const DeviceTensor *in,
                                      const DeviceTensor *out) const {
  const runtime::Plan &plan = spec.entry->plan;
  size_t numIn = inputs.size();
  for (size_t i = 0; i < numIn + outputs.size(); ++i) {
    const runtime::BufferDesc &b = plan.buffers[i];
    const DeviceTensor &t = i < numIn ? in[i] : out[i - numIn];
    const std::string &name =
        i < numIn ? inputs[i].name : outputs[i - numIn].name;
    const char *what = i < numIn ? "input" : "output";
    if (t.dtype != b.dtype)
      return invalid(std::string("run: ") + what + " '" + name + "' is " +
                     dtypeName(t.dtype) + " but the graph takes " +
                     dtypeName(b.dtype));
    bool runtime = spec.runtime && i < numIn;
    if (!t.shape.valid() ||
        !(runtime ? runtimeDims.matches(i, Dims(b.shape), t.shape)
                  : std::equal(t.shape.begin(), t.shape.end(),
                               b.shape.begin(), b.shape.end())))
      return invalid(std::string("run: ") + what + " '" + name +
                     "' has shape " + shapeText(t.shape) +
                     " but the graph " + (i < numIn ? "takes " : "gives ") +
                     shapeText(b.shape));
    uint64_t needed = b.bytes;
    if (runtime) {
      needed = dtypeSize(b.dtype);
      for (int64_t d : t.shape)
        needed *= uint64_t(d);
      if (needed == 0)
        return invalid(std::string("run: input '") + name + "' is " +
                       shapeText(t.shape) +
                       ": tensors with a zero-size dim are not supported");
    }
    if (!t.data)
      return invalid(std::string("run: ") + what + " '" + name +
                     "' is a null pointer");
    if (t.bytes != 0 && t.bytes < needed)
      return invalid(std::string("run: ") + what + " '" + name + "' is " +
                     shapeText(t.shape) + " " + dtypeName(b.dtype) +
                     ", which needs " + std::to_string(needed) +
                     " bytes, but its buffer holds " + std::to_string(t.bytes));
    if (reinterpret_cast<uintptr_t>(t.data) % dtypeSize(b.dtype))
      return invalid(std::string("run: ") + what + " '" + name +
                     "' is misaligned: " + dtypeName(b.dtype) +
                     " data needs " + std::to_string(dtypeSize(b.dtype)) +
                     "-byte alignment");
  }
  return Status::ok();
}

} // namespace kfuse::detail

namespace kfuse {

namespace detail {

Expected<Specialization *> prepare(ExecutableImpl &impl, const DeviceTensor *in,
                                   size_t numIn, const DeviceTensor *out,
                                   size_t numOut, Driver *&driverOut) {
  // The alignment fact: are all buffers on 16-byte boundaries?
  uintptr_t addressBits = 0;
  for (size_t i = 0; i < numIn; ++i)
    addressBits |= reinterpret_cast<uintptr_t>(in[i].data);
  for (size_t i = 0; i < numOut; ++i)
    addressBits |= reinterpret_cast<uintptr_t>(out[i].data);
  bool aligned = (addressBits & 15) == 0;
  Specialization *spec = impl.last;
  if (spec == nullptr || spec->aligned != aligned || !impl.matches(*spec, in)) {
    std::vector<std::vector<int64_t>> shapes;
    for (size_t i = 0; i < numIn; ++i) {
      if (!in[i].shape.valid())
        return invalid("run: input '" + impl.inputs[i].name +
                       "' has more than 8 dims")
            .error();
      shapes.emplace_back(in[i].shape.begin(), in[i].shape.end());
    }
    Expected<Specialization *> found = impl.specialize(shapes, aligned);
    if (!found)
      return found.error();
    spec = impl.last = *found;
  }
  KFUSE_RETURN_IF_ERROR(impl.checkArguments(*spec, in, out));
  Expected<Driver *> driver = Driver::get();
  if (!driver)
    return driver.error();
  KFUSE_RETURN_IF_ERROR(impl.load(**driver, *spec->entry, spec->key));
  driverOut = *driver;
  return spec;
}

} // namespace detail

Status Executable::run(const DeviceTensor *in, size_t numIn,
                       const DeviceTensor *out, size_t numOut, void *stream) {
  detail::ExecutableImpl &impl = *impl_;
  if (numIn != impl.inputs.size() || numOut != impl.outputs.size())
    return invalid("run: the graph takes " +
                   std::to_string(impl.inputs.size()) + " inputs and " +
                   std::to_string(impl.outputs.size()) + " outputs, got " +
                   std::to_string(numIn) + " and " + std::to_string(numOut));
  std::lock_guard<std::mutex> lock(impl.mutex);
  Driver *driver = nullptr;
  Expected<detail::Specialization *> spec =
      detail::prepare(impl, in, numIn, out, numOut, driver);
  if (!spec)
    return spec.error();
  return impl.launch(*driver, **spec, in, out, static_cast<CUstream>(stream),
                     nullptr);
}

} // namespace kfuse

namespace kfuse {

static std::vector<std::vector<int64_t>>
declaredShapes(const detail::ExecutableImpl &impl,
               const std::vector<std::vector<int64_t>> &shapes, Status &status) {
  if (!shapes.empty())
    return shapes;
  std::vector<std::vector<int64_t>> out;
  for (const TensorInfo &info : impl.inputs) {
    std::vector<int64_t> shape;
    for (const Dim &d : info.shape) {
      if (d.isSymbolic()) {
        status = invalid("input '" + info.name + "' is " +
                         shapeString(info.shape) +
                         ": give the shapes to specialise for");
        return {};
      }
      shape.push_back(d.size());
    }
    out.push_back(shape);
  }
  return out;
}

/// The specialisation for `shapes`, or for the graph's own shapes when
/// empty (dump, kernels, outputShapes). The caller holds the mutex.
static Expected<detail::Specialization *>
specializeFor(detail::ExecutableImpl &impl,
              const std::vector<std::vector<int64_t>> &shapes) {
  Status status;
  auto concrete = declaredShapes(impl, shapes, status);
  if (!status)
    return status.error();
  if (concrete.size() != impl.inputs.size())
    return invalid("the graph takes " + std::to_string(impl.inputs.size()) +
                   " inputs, got " + std::to_string(concrete.size()) +
                   " shapes")
        .error();
  return impl.specialize(concrete);
}

Expected<std::string>
Executable::dump(Stage stage, const std::vector<std::vector<int64_t>> &shapes) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  Expected<detail::Specialization *> spec = specializeFor(*impl_, shapes);
  if (!spec)
    return spec.error();
  if (stage == Stage::PTX)
    return (*spec)->entry->plan.ptx;
  Expected<const std::string *> text =
      impl_->stageText(**spec, compiler::stageName(stage));
  if (!text)
    return text.error();
  return **text;
}

Expected<std::vector<KernelReport>>
Executable::kernels(const std::vector<std::vector<int64_t>> &shapes) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  Expected<detail::Specialization *> spec = specializeFor(*impl_, shapes);
  if (!spec)
    return spec.error();
  CacheEntry &entry = *(*spec)->entry;
  return runtime::kernelReports(entry.plan,
                                entry.isLoaded ? &entry.module : nullptr);
}

Expected<std::vector<std::vector<int64_t>>>
Executable::outputShapes(const std::vector<std::vector<int64_t>> &shapes) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  Expected<detail::Specialization *> spec = specializeFor(*impl_, shapes);
  if (!spec)
    return spec.error();
  std::vector<std::vector<int64_t>> out;
  for (const runtime::BufferDesc &b : (*spec)->entry->plan.buffers)
    if (b.role == runtime::BufferRole::Output)
      out.push_back(b.shape);
  return out;
}

std::vector<SpecializationInfo> Executable::specializations() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  std::vector<SpecializationInfo> out;
  for (const auto &spec : impl_->specializations) {
    SpecializationInfo info;
    for (const Dims &d : spec->inputShapes)
      info.shapes.emplace_back(d.begin(), d.end());
    info.runtimeSizes = spec->runtime;
    info.reason = spec->reason;
    out.push_back(std::move(info));
  }
  return out;
}

size_t Executable::numInputs() const { return impl_->inputs.size(); }
size_t Executable::numOutputs() const { return impl_->outputs.size(); }

Expected<std::vector<HostTensor>>
Executable::runOnHost(const std::vector<HostTensor> &inputs) {
  if (inputs.size() != impl_->inputs.size())
    return invalid("runOnHost: the graph takes " +
                   std::to_string(impl_->inputs.size()) + " inputs, got " +
                   std::to_string(inputs.size()))
        .error();
  std::vector<std::vector<int64_t>> shapes;
  for (const HostTensor &t : inputs)
    shapes.push_back(t.shape());
  std::vector<detail::OutputSpec> outputs;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    Expected<detail::Specialization *> spec = impl_->specialize(shapes);
    if (!spec)
      return spec.error();
    for (const runtime::BufferDesc &b : (*spec)->entry->plan.buffers)
      if (b.role == runtime::BufferRole::Output)
        outputs.push_back({b.dtype, b.shape, b.bytes});
  }
  Expected<detail::DeviceArguments> args =
      detail::deviceArguments(inputs, outputs, /*poison=*/true);
  if (!args)
    return args.error();
  KFUSE_RETURN_IF_ERROR(run(args->in.data(), args->in.size(), args->out.data(),
                            args->out.size()));
  KFUSE_RETURN_IF_ERROR(synchronize());
  std::vector<HostTensor> results;
  for (size_t i = 0; i < outputs.size(); ++i) {
    HostTensor t(outputs[i].dtype, outputs[i].shape);
    KFUSE_RETURN_IF_ERROR(
        args->buffers[inputs.size() + i].copyToHost(t.data(), t.sizeInBytes()));
    results.push_back(std::move(t));
  }
  return results;
}

Expected<detail::DeviceArguments>
detail::deviceArguments(const std::vector<HostTensor> &inputs,
                        const std::vector<OutputSpec> &outputs, bool poison) {
  DeviceArguments args;
  for (const HostTensor &t : inputs) {
    Expected<DeviceBuffer> b = DeviceBuffer::fromHost(t);
    if (!b)
      return b.error();
    args.in.push_back(b->tensor(t.dtype(), Dims(t.shape())));
    args.buffers.push_back(b.take());
  }
  for (const OutputSpec &spec : outputs) {
    Expected<DeviceBuffer> b = DeviceBuffer::allocate(spec.bytes);
    if (!b)
      return b.error();
    if (poison)
      KFUSE_RETURN_IF_ERROR(b->fill(0xFF));
    args.out.push_back(b->tensor(spec.dtype, Dims(spec.shape)));
    args.buffers.push_back(b.take());
  }
  return args;
}

Compiler::Compiler(CompileOptions options) : options_(std::move(options)) {}

Expected<Executable> Compiler::compile(const Graph &graph) {
  if (!graph.status())
    return graph.status().error();
  Expected<std::string> text = graph.toMLIR();
  if (!text)
    return text.error();
  auto impl = std::make_shared<detail::ExecutableImpl>();
  impl->options = options_;
  // $KFUSE_LAUNCH (kernels or graph) decides for Launch::Auto: A/B timing
  // of whole programs without changing them.
  if (const char *env = std::getenv("KFUSE_LAUNCH");
      env && options_.launch == Launch::Auto)
    impl->options.launch = std::string(env) == "kernels" ? Launch::Kernels
                           : std::string(env) == "graph" ? Launch::Graph
                                                         : Launch::Auto;
  impl->graphText = text.take();
  impl->graphName = graph.name();
  impl->inputs = graph.inputs();
  impl->outputs = graph.outputs();
  impl->runtimeDims =
      compiler::RuntimeDims::of(impl->inputs, options_.dynamicDims);
  for (const std::string &symbol : options_.dynamicDims)
    if (std::find(impl->runtimeDims.symbols().begin(),
                  impl->runtimeDims.symbols().end(),
                  symbol) == impl->runtimeDims.symbols().end())
      return invalid("compile: dynamicDims names '" + symbol +
                     "', which is no symbolic dim of the graph's inputs")
          .error();
  if (impl->outputs.empty())
    return invalid("compile: the graph has no outputs").error();
  for (const std::vector<TensorInfo> *list : {&impl->inputs, &impl->outputs})
    for (const TensorInfo &info : *list)
      if (info.shape.size() > size_t(Dims::kMaxRank))
        return invalid("compile: '" + info.name + "' has rank " +
                       std::to_string(info.shape.size()) +
                       "; kfuse runs tensors of rank up to " +
                       std::to_string(Dims::kMaxRank))
            .error();
  bool symbolic = false;
  for (const TensorInfo &info : impl->inputs)
    for (const Dim &d : info.shape)
      symbolic |= d.isSymbolic();
  if (!symbolic) {
    Status status;
    auto shapes = declaredShapes(*impl, {}, status);
    std::lock_guard<std::mutex> lock(impl->mutex);
    Expected<detail::Specialization *> spec = impl->specialize(shapes);
    if (!spec)
      return spec.error();
  }
  Executable exe;
  exe.impl_ = std::move(impl);
  return exe;
}

std::string ptxTarget(const std::string &ptx) {
  size_t at = ptx.find("\n.target ");
  if (at == std::string::npos)
    return "";
  at += 9;
  size_t end = ptx.find_first_of(", \n", at);
  return ptx.substr(at, end == std::string::npos ? end : end - at);
}

} // namespace kfuse
