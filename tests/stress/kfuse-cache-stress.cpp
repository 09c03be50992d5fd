//===- kfuse-cache-stress.cpp - the disk cache under contention and faults ===//
//
//   kfuse-cache-stress [--processes 16] [--rounds 50] [--keep DIR]
//
// Lanes of processes share one cache directory. Each round is a new
// process (so nothing is cached in its memory) that compiles one of a few
// overlapping shapes through the cache and compares the PTX with the
// reference compiled without it; with a GPU it also runs the kernel
// against the evaluator. Meanwhile a vandal, every few milliseconds,
// truncates an entry, flips a byte of one, rewrites one as another kfuse
// version's or another key's entry, or starts a writer and kills it
// mid-compile. Every damaged entry must be detected and recompiled: a load
// that gives other PTX (a corrupt load) or a wrong value, or a round that
// crashes, fails the run.
//
//===----------------------------------------------------------------------===//

#include "kfuse/kfuse.h"
#include "runtime/DiskCache.h"
#include "runtime/Plan.h"

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace kfuse;
namespace fs = std::filesystem;

namespace {

const int64_t kSizes[] = {1000, 4099, 65536, 100003, 7};

Graph stressGraph() {
  Graph g("cache_stress");
  Tensor x = g.input("x", DType::f32, {"N"});
  g.output("y", tanh(x) * 2.0 + exp(x));
  return g;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// One round, in its own process. Exit codes: 0 ok, 3 corrupt load (PTX
/// differs from the reference), 4 wrong values, 5 an error.
int round(const std::string &dir, int sizeIndex, const std::string &refDir) {
  int64_t n = kSizes[sizeIndex];
  CompileOptions options;
  options.cacheDir = dir;
  Expected<Executable> exe = Compiler(options).compile(stressGraph());
  Expected<std::string> ptx =
      exe ? exe->dump(Stage::PTX, {{n}}) : Expected<std::string>(exe.error());
  if (!ptx) {
    std::cerr << "round: " << ptx.error().message() << "\n";
    return 5;
  }
  CacheStats stats = cacheStats();
  std::cout << "hits " << stats.diskHits << " rejected " << stats.diskRejected
            << " compiles " << stats.compiles << "\n";
  if (*ptx != readFile(refDir + "/" + std::to_string(n) + ".ptx"))
    return 3;
  if (!device())
    return 0;
  HostTensor in = HostTensor::random(DType::f32, {n}, uint64_t(getpid()));
  Expected<std::vector<HostTensor>> out = exe->runOnHost({in});
  Expected<std::vector<HostTensor>> ref = evaluate(stressGraph(), {in});
  if (!out || !ref) {
    std::cerr << "round: " << (out ? ref.error() : out.error()).message() << "\n";
    return 5;
  }
  return relativeError((*out)[0], (*ref)[0]) <= 1e-5 ? 0 : 4;
}

pid_t spawn(const std::vector<std::string> &args, int outFd = -1) {
  pid_t pid = fork();
  if (pid != 0)
    return pid;
  if (outFd >= 0)
    dup2(outFd, 1);
  std::vector<char *> argv;
  for (const std::string &a : args)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());
  _exit(127);
}

/// Damages a random entry of `dir` one way or another; returns what it did.
std::string vandalise(const std::string &dir, std::mt19937_64 &rng) {
  std::vector<fs::path> entries;
  std::error_code ec;
  for (auto &e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".kfc")
      entries.push_back(e.path());
  if (entries.empty())
    return "";
  fs::path victim = entries[rng() % entries.size()];
  std::string text = readFile(victim);
  // Past the magic and checksum lines: a flip there is caught trivially.
  // (Repeated truncation makes short files common: keep the modulus > 0.)
  if (text.size() <= 64)
    return "";
  fs::path tmp = victim.string() + ".vandal";
  switch (rng() % 4) {
  case 0:
    text.resize(rng() % text.size());
    break;
  case 1:
    text[64 + rng() % (text.size() - 64)] ^= char(1 << (rng() % 8));
    break;
  case 2: { // another kfuse version's entry at this key's path
    size_t at = text.find("\nkfuse ");
    if (at == std::string::npos)
      return "";
    text.insert(at + 7, "0.0.0-other-");
    break;
  }
  default: { // a whole, valid entry for another key under this name
    runtime::DiskCache other(dir + "/.other");
    runtime::Plan plan;
    if (!other.store("another key", plan))
      return "";
    text = readFile(other.pathFor("another key"));
    break;
  }
  }
  std::ofstream(tmp, std::ios::binary) << text;
  fs::rename(tmp, victim, ec);
  return "damaged";
}

struct Tally {
  int rounds = 0, corruptLoads = 0, wrongValues = 0, errors = 0, crashes = 0;
  uint64_t hits = 0, rejected = 0, compiles = 0;
  int damaged = 0, killedWriters = 0;
};

/// Tallies a finished round: its exit status and the counters it printed.
void record(int status, int fd, Tally &t) {
  std::string out;
  char buffer[256];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;)
    out.append(buffer, size_t(n));
  close(fd);
  std::istringstream words(out);
  std::string w;
  uint64_t hits = 0, rejected = 0, compiles = 0;
  words >> w >> hits >> w >> rejected >> w >> compiles;
  t.hits += hits, t.rejected += rejected, t.compiles += compiles;
  ++t.rounds;
  if (!WIFEXITED(status))
    ++t.crashes;
  else if (WEXITSTATUS(status) == 3)
    ++t.corruptLoads;
  else if (WEXITSTATUS(status) == 4)
    ++t.wrongValues;
  else if (WEXITSTATUS(status) != 0)
    ++t.errors;
}

/// The reference PTX of every size, compiled without the cache.
bool writeReferences(const std::string &refs) {
  CompileOptions plain;
  plain.diskCache = false;
  Expected<Executable> exe = Compiler(plain).compile(stressGraph());
  for (int64_t n : kSizes) {
    Expected<std::string> ptx = exe->dump(Stage::PTX, {{n}});
    if (!ptx) {
      std::cerr << ptx.error().message() << "\n";
      return false;
    }
    std::ofstream(refs + "/" + std::to_string(n) + ".ptx", std::ios::binary)
        << *ptx;
  }
  return true;
}

/// Starts a writer and kills it a random few milliseconds in: mid-compile,
/// mid-write or after.
void killAWriter(const std::string &dir, const std::string &refs,
                 std::mt19937_64 &rng) {
  int fds[2];
  if (pipe(fds) != 0)
    return;
  pid_t writer = spawn({"kfuse-cache-stress", "--round", dir,
                        std::to_string(rng() % std::size(kSizes)), refs},
                       fds[1]);
  close(fds[1]);
  std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 40));
  kill(writer, SIGKILL);
  waitpid(writer, nullptr, 0);
  close(fds[0]);
}

/// Keeps `processes` lanes of rounds going until each has run `rounds`,
/// damaging entries and killing writers between polls.
bool runLanes(int processes, int rounds, const std::string &dir,
              const std::string &refs, Tally &t) {
  std::mt19937_64 rng(20261129);
  struct Lane {
    pid_t pid = 0;
    int fd = -1, done = 0;
  };
  std::vector<Lane> lanes(processes);
  for (int busy = processes; busy > 0;) {
    busy = 0;
    for (Lane &lane : lanes) {
      int status;
      if (lane.pid && waitpid(lane.pid, &status, WNOHANG) == 0) {
        ++busy;
        continue;
      }
      if (lane.pid)
        record(status, lane.fd, t);
      lane.pid = 0;
      if (lane.done == rounds)
        continue;
      int fds[2];
      if (pipe(fds) != 0)
        return false;
      int size = int(rng() % std::size(kSizes));
      lane.pid = spawn({"kfuse-cache-stress", "--round", dir,
                        std::to_string(size), refs},
                       fds[1]);
      close(fds[1]);
      lane.fd = fds[0];
      ++lane.done, ++busy;
    }
    if (rng() % 3 == 0)
      killAWriter(dir, refs, rng), ++t.killedWriters;
    if (!vandalise(dir, rng).empty())
      ++t.damaged;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

int stress(int processes, int rounds, std::string keep) {
  std::string root =
      keep.empty() ? (fs::temp_directory_path() /
                      ("kfuse-cache-stress-" + std::to_string(getpid())))
                         .string()
                   : keep;
  std::string dir = root + "/cache", refs = root + "/refs";
  fs::remove_all(root);
  fs::create_directories(refs);
  if (!writeReferences(refs))
    return 2;
  Tally t;
  auto start = std::chrono::steady_clock::now();
  if (!runLanes(processes, rounds, dir, refs, t))
    return 2;
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  std::cout << "kfuse-cache-stress: " << processes << " processes x "
            << rounds << " rounds = " << t.rounds << " rounds in " << seconds
            << " s" << (device() ? " (compiled and run on the GPU)" : "")
            << "\n  damaged entries " << t.damaged << ", writers killed "
            << t.killedWriters << "\n  disk hits " << t.hits
            << ", damaged entries detected and recompiled " << t.rejected
            << ", compiles " << t.compiles << "\n  corrupt loads "
            << t.corruptLoads << ", wrong values " << t.wrongValues
            << ", errors " << t.errors << ", crashes " << t.crashes << "\n";
  if (keep.empty())
    fs::remove_all(root);
  bool ok = t.corruptLoads == 0 && t.wrongValues == 0 && t.errors == 0 &&
            t.crashes == 0 && t.rounds == processes * rounds;
  return ok ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 5 && std::string(argv[1]) == "--round")
    return round(argv[2], std::atoi(argv[3]), argv[4]);
  int processes = 16, rounds = 50;
  std::string keep;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string arg = argv[i];
    if (arg == "--processes")
      processes = std::atoi(argv[i + 1]);
    else if (arg == "--rounds")
      rounds = std::atoi(argv[i + 1]);
    else if (arg == "--keep")
      keep = argv[i + 1];
    else {
      std::cerr << "kfuse-cache-stress: unknown argument " << arg << "\n";
      return 2;
    }
  }
  return stress(processes, rounds, keep);
}
