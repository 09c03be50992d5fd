//===- BadInputTest.cpp - bad input gets a clear error, never a crash -----===//
//
// Three sources of bad input, all through the public API:
//  - the corpus in tests/corpus/bad-input: each file's first line lists,
//    after "// ERROR: ", the parts (separated by " | ") its error must name;
//  - every valid op file of the lit suite cut short at many lengths, and
//    with bytes overwritten: each parses or fails with a positioned error;
//  - wrong run-time arguments, refused by name before anything launches
//    (without a GPU, the driver is never reached: no "no CUDA driver").
// Under the sanitizer build (KFUSE_SANITIZE) these also show no memory or
// undefined-behaviour error on any of it.
//
//===----------------------------------------------------------------------===//

#include "kfuse/kfuse.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

using namespace kfuse;

namespace {

std::vector<std::string> filesIn(const std::string &dir) {
  std::vector<std::string> files;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > 5 && name.substr(name.size() - 5) == ".mlir")
        files.push_back(name);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> split(const std::string &s, const std::string &sep) {
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end - start));
    if (end == std::string::npos)
      return parts;
    start = end + sep.size();
  }
}

/// Parses and compiles `text`; the error, or "" when both succeed.
std::string parseAndCompile(const std::string &text, const std::string &name) {
  Expected<Graph> graph = Graph::fromMLIR(text, name);
  if (!graph)
    return graph.error().message();
  CompileOptions options;
  options.diskCache = false;
  Expected<Executable> exe = Compiler(options).compile(*graph);
  if (!exe)
    return exe.error().message();
  return "";
}

/// The folder of test data (corpus/, lit/ops/): $KFUSE_TEST_DATA, else
/// tests/ beside the binary's bin/ folder (how scripts/gpu-bundle.sh lays it
/// out on a machine without the source tree), else the source tree's.
std::string testData() {
  if (const char *env = std::getenv("KFUSE_TEST_DATA"); env && *env)
    return env;
  std::error_code error;
  std::filesystem::path exe =
      std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    std::filesystem::path beside = exe.parent_path().parent_path() / "tests";
    if (std::filesystem::is_directory(beside / "corpus", error))
      return beside.string();
  }
  return KFUSE_SOURCE_DIR "/tests";
}

const std::string kCorpus = testData() + "/corpus/bad-input";
const std::string kOps = testData() + "/lit/ops";

TEST(BadInputTest, CorpusFilesGiveTheErrorsTheyName) {
  std::vector<std::string> files = filesIn(kCorpus);
  ASSERT_GE(files.size(), 20u) << "corpus missing from " << kCorpus;
  int clear = 0;
  for (const std::string &file : files) {
    std::string text = readFile(kCorpus + "/" + file);
    std::string header = text.substr(0, text.find('\n'));
    ASSERT_EQ(header.rfind("// ERROR: ", 0), 0u) << file << " has no ERROR line";
    std::string error = parseAndCompile(text, file);
    bool named = !error.empty();
    for (const std::string &part : split(header.substr(10), " | "))
      if (error.find(part) == std::string::npos) {
        named = false;
        ADD_FAILURE() << file << ": the error does not name '" << part
                      << "':\n" << error;
      }
    clear += named;
  }
  std::cout << "bad-input corpus: " << files.size() << " files, " << clear
            << " with the clear error expected\n";
}

/// A failure to parse must say where: "name:line:col" (or, for text with
/// no function at all, that one is expected).
bool positioned(const std::string &error, const std::string &name) {
  return error.rfind(name + ":", 0) == 0 ||
         error.find("expected one func.func") != std::string::npos;
}

TEST(BadInputTest, TruncatedFilesFailWithAPosition) {
  int tried = 0, clear = 0;
  for (const std::string &file : filesIn(kOps)) {
    std::string text = readFile(kOps + "/" + file);
    for (size_t length = 0; length < text.size(); length += 5) {
      std::string error = parseAndCompile(text.substr(0, length), file);
      ++tried;
      // A prefix can be a complete graph (cut inside a trailing comment).
      if (error.empty() || positioned(error, file))
        ++clear;
      else
        ADD_FAILURE() << file << " cut at " << length << ": " << error;
    }
  }
  EXPECT_GT(tried, 1000);
  std::cout << "truncated files: " << tried << " tried, " << clear
            << " parsed or failed with a position\n";
}

TEST(BadInputTest, MutatedFilesNeverCrash) {
  std::vector<std::string> files = filesIn(kOps);
  ASSERT_FALSE(files.empty());
  std::mt19937_64 rng(20261129);
  const char kBytes[] = "0123456789x?<>()[]{}:%,.-=\"@ \n\x01\xff";
  int tried = 0, clear = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string &file = files[rng() % files.size()];
    std::string text = readFile(kOps + "/" + file);
    for (int flips = 1 + int(rng() % 3); flips > 0; --flips)
      text[rng() % text.size()] = kBytes[rng() % (sizeof kBytes - 1)];
    std::string error = parseAndCompile(text, file);
    ++tried;
    // Past the parser, an error names the op or the tensor at fault.
    if (error.empty() || positioned(error, file) ||
        error.find("'kf.") != std::string::npos ||
        error.find("more bytes than 64 bits") != std::string::npos ||
        error.find("zero-size dim") != std::string::npos ||
        error.find("rank up to") != std::string::npos)
      ++clear;
    else
      ADD_FAILURE() << file << " mutated: " << error;
  }
  std::cout << "mutated files: " << tried << " tried, " << clear
            << " parsed or failed clearly\n";
}

/// A compiled y = exp(x) + b over [N, 256] f32 (N symbolic), and device
/// addresses that are never dereferenced: every call below must be refused
/// before the driver is reached.
struct RunFixture {
  Executable exe;
  void *good = reinterpret_cast<void *>(uintptr_t(1) << 40);
  DeviceTensor x{good, DType::f32, {64, 256}};
  DeviceTensor b{good, DType::f32, {256}};
  DeviceTensor y{good, DType::f32, {64, 256}};

  RunFixture() {
    Graph g("bad_args");
    Tensor in = g.input("x", DType::f32, {"N", 256});
    Tensor bias = g.input("b", DType::f32, {256});
    g.output("y", exp(in) + bias);
    CompileOptions options;
    options.diskCache = false;
    exe = *Compiler(options).compile(g);
  }
  std::string run(DeviceTensor x0, DeviceTensor b0, DeviceTensor y0) {
    return exe.run({x0, b0}, {y0}).message();
  }
};

TEST(BadInputTest, WrongRunArgumentsAreRefusedByName) {
  RunFixture f;
  auto with = [](DeviceTensor t, auto change) {
    change(t);
    return t;
  };
  void *odd = reinterpret_cast<void *>((uintptr_t(1) << 40) + 2);
  struct Case {
    std::string error;
    std::vector<std::string> names;
  };
  std::vector<Case> cases = {
      {f.exe.run({f.x}, {f.y}).message(), {"takes 2 inputs and 1 outputs, got 1"}},
      {f.exe.run({f.x, f.b}, {}).message(), {"got 2 and 0"}},
      {f.run(with(f.x, [](auto &t) { t.dtype = DType::bf16; }), f.b, f.y),
       {"input 'x'", "bf16", "f32"}},
      {f.run(f.x, with(f.b, [](auto &t) { t.shape = {255}; }), f.y),
       {"input 'b'", "255", "256"}},
      {f.run(f.x, f.b, with(f.y, [](auto &t) { t.shape = {64, 255}; })),
       {"output 'y'", "64x255", "64x256"}},
      {f.run(with(f.x, [](auto &t) { t.data = nullptr; }), f.b, f.y),
       {"input 'x'", "null pointer"}},
      {f.run(f.x, f.b, with(f.y, [&](auto &t) { t.data = odd; })),
       {"output 'y'", "misaligned"}},
      {f.run(f.x, f.b, with(f.y, [](auto &t) { t.bytes = 64 * 256 * 4 - 4; })),
       {"output 'y'", "needs 65536 bytes", "holds 65532"}},
      {f.run(with(f.x, [](auto &t) { t.shape = {1, 2, 3, 4, 5, 6, 7, 8, 9}; }),
             f.b, f.y),
       {"input 'x'", "more than 8 dims"}},
      {f.run(with(f.x, [](auto &t) { t.shape = {int64_t(1) << 62, 256}; }), f.b,
             f.y),
       {"input 'x'", "more bytes than 64 bits can count"}},
      {f.run(with(f.x, [](auto &t) { t.shape = {-3, 256}; }), f.b, f.y),
       {"input 'x'", "negative dim"}},
  };
  int clear = 0;
  for (const Case &c : cases) {
    bool named = !c.error.empty();
    for (const std::string &name : c.names)
      named &= c.error.find(name) != std::string::npos;
    EXPECT_TRUE(named) << "error: '" << c.error << "' should name "
                       << c.names.front();
    EXPECT_EQ(c.error.find("CUDA"), std::string::npos) << c.error;
    clear += named;
  }
  std::cout << "bad run arguments: " << cases.size() << " tried, " << clear
            << " refused with a clear error\n";
}

} // namespace
