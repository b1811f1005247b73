// keep_freed_memory_for_reuse: after it, a block under 32 MiB comes from
// malloc's arena instead of a mapping of its own, and freeing it leaves the
// memory in the arena (the next block reuses it) instead of unmapping it.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "base/malloc_policy.h"
#include "sanitizer.h"

// Sanitizers bring their own malloc, which mallopt does not steer (the
// sanitized build compiles the tests uninstrumented: JARVIS_ASAN says so).
#if JARVIS_ASAN
#define JARVIS_OWN_MALLOC 1
#endif
#if defined(__has_feature)
#if __has_feature(memory_sanitizer)
#define JARVIS_OWN_MALLOC 1
#endif
#endif

#if defined(__GLIBC__) && !defined(JARVIS_OWN_MALLOC)
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

TEST_CASE("malloc policy: blocks up to 32 MiB come from the arena and stay after a free") {
  jarvis::keep_freed_memory_for_reuse();
  constexpr size_t kBlock = size_t{24} << 20;  // over glibc's default mmap threshold (128 KiB)
  size_t mapped_before = mallinfo2().hblkhd;   // bytes in blocks with a mapping of their own
  void* block = std::malloc(kBlock);
  REQUIRE(block != nullptr);
  std::memset(block, 1, kBlock);
  CHECK(mallinfo2().hblkhd == mapped_before);  // not mapped on its own
  size_t arena_with_block = mallinfo2().arena;
  CHECK(arena_with_block >= kBlock);
  std::free(block);
  // The freed block stays in the arena (no trim) for the next allocations.
  CHECK(mallinfo2().arena == arena_with_block);
  CHECK(mallinfo2().fordblks >= kBlock);
}

// The server's policy, in a child (mallopt's settings are the whole
// process's, and the suite's other tests run in this one). glibc's default
// is put back first, fixed at 128 KiB, whatever the suite set before.
namespace {
enum ServerPolicyFault {
  kMappedOnItsOwn = 1,   // a 24 MiB block did not come from the arena
  kNotKept = 2,          // the block, freed at the arena's top, went back to the system
  kAllKept = 4,          // 72 MiB freed at the top was kept whole (over the 64 MiB bound)
  kDefaultNotMapped = 8  // the default did not map the block on its own: the test proves nothing
};

int server_policy_faults() {
  constexpr size_t kBlock = size_t{24} << 20;
  // A block from memory the arena does not hold yet: free chunks of its size
  // left by the suite (in the arena's bins, which malloc reads before it
  // asks the system) are taken first and kept, and the child's exit frees
  // them.
  auto fresh_block = [] {
    for (int tries = 0; tries < 64; ++tries) {
      const size_t free_before = mallinfo2().fordblks;
      void* block = std::malloc(kBlock);
      if (!block) return block;
      std::memset(block, 1, kBlock);
      if (free_before < mallinfo2().fordblks + kBlock) return block;  // not from free memory
    }
    return static_cast<void*>(nullptr);
  };
  int faults = 0;
  mallopt(M_MMAP_THRESHOLD, 128 << 10);
  mallopt(M_TRIM_THRESHOLD, 128 << 10);
  ::malloc_trim(0);
  size_t mapped = mallinfo2().hblkhd;
  void* probe = fresh_block();
  if (!probe || mallinfo2().hblkhd == mapped) faults |= kDefaultNotMapped;
  std::free(probe);
  jarvis::reuse_freed_memory_in_a_server();
  mapped = mallinfo2().hblkhd;
  void* one = fresh_block();
  if (!one || mallinfo2().hblkhd != mapped) faults |= kMappedOnItsOwn;
  std::free(one);
  if (mallinfo2().keepcost < kBlock) faults |= kNotKept;
  // Three at once, freed last first: each joins the free top.
  void* blocks[3] = {fresh_block(), fresh_block(), fresh_block()};
  for (int i = 2; i >= 0; --i) std::free(blocks[i]);
  if (mallinfo2().keepcost >= 3 * kBlock) faults |= kAllKept;
  return faults;
}
}  // namespace

TEST_CASE("malloc policy: a server takes blocks up to 32 MiB from the arena, keeps 64 MiB free") {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) ::_exit(server_policy_faults());
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  const int faults = WEXITSTATUS(status);
  INFO("faults (ServerPolicyFault bits): " << faults);
  CHECK((faults & kDefaultNotMapped) == 0);
  CHECK((faults & kMappedOnItsOwn) == 0);
  CHECK((faults & kNotKept) == 0);
  CHECK((faults & kAllKept) == 0);
}
#endif

// tune_malloc_at_start: the GLIBC_TUNABLES the program is run again with,
// and the user's own restored from the marker it carries.
TEST_CASE("malloc tuning: the run again adds glibc.malloc.hugetlb=1 to the user's tunables") {
  namespace mt = jarvis::malloc_tuning;
  CHECK(mt::tunables_with_huge_pages(nullptr) == "glibc.malloc.hugetlb=1");
  CHECK(mt::tunables_with_huge_pages("") == "glibc.malloc.hugetlb=1");
  CHECK(mt::tunables_with_huge_pages("glibc.malloc.arena_max=2") ==
        "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
  // The user's own setting of the tunable stands: no run again.
  CHECK_FALSE(mt::tunables_with_huge_pages("glibc.malloc.hugetlb=0"));
  CHECK_FALSE(mt::tunables_with_huge_pages("glibc.malloc.tcache_count=0:glibc.malloc.hugetlb=2"));
  // Unset, empty and set each come back as they were.
  CHECK_FALSE(mt::user_tunables_of(mt::marker_of(nullptr)));
  CHECK(mt::user_tunables_of(mt::marker_of("")) == "");
  CHECK(mt::user_tunables_of(mt::marker_of("glibc.malloc.arena_max=2")) ==
        "glibc.malloc.arena_max=2");
}

#if defined(__linux__) && !JARVIS_ASAN
#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {
namespace JARVIS_TEST_FILE {
// The environment `jarvis serve --stdio` runs under once started, as the
// kernel holds it for the process (/proc/PID/environ: what its last exec
// was given), with `tuning` as JARVIS_MALLOC_TUNING ("" = unset).
std::string served_environment(const char* tuning) {
  // The child's environment, made before the fork (a forked child of a
  // process with threads calls nothing that may take a lock): this one's
  // without GLIBC_TUNABLES, with JARVIS_MALLOC_TUNING when given.
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "GLIBC_TUNABLES=", 15) != 0 &&
        std::strncmp(*e, "JARVIS_MALLOC_TUNING=", 21) != 0)
      env.emplace_back(*e);
  if (*tuning) env.push_back(std::string("JARVIS_MALLOC_TUNING=") + tuning);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  char* argv[] = {const_cast<char*>(JARVIS_BINARY), const_cast<char*>("serve"),
                  const_cast<char*>("--stdio"), nullptr};
  int in[2];
  REQUIRE(::pipe(in) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::close(in[1]);
    ::execve(JARVIS_BINARY, argv, envp.data());
    ::_exit(127);
  }
  ::close(in[0]);
  std::string seen;
  const std::string path = "/proc/" + std::to_string(pid) + "/environ";
  // Until the server has read its first line (it waits on stdin then).
  for (int tries = 0; tries < 100; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream f(path);
    seen.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    if (tries >= 10 || seen.find("JARVIS_MALLOC_TUNED") != std::string::npos) break;
  }
  ::close(in[1]);  // end of input: the server exits
  int status = 0;
  ::waitpid(pid, &status, 0);
  return seen;
}
}  // namespace JARVIS_TEST_FILE
}  // namespace

TEST_CASE("malloc tuning: jarvis runs again with huge pages for malloc, unless told not to") {
  using JARVIS_TEST_FILE::served_environment;
  const std::string tuned = served_environment("");
  CHECK(tuned.find(std::string("GLIBC_TUNABLES=glibc.malloc.hugetlb=1") + '\0') !=
        std::string::npos);
  CHECK(tuned.find(std::string("JARVIS_MALLOC_TUNED=-") + '\0') != std::string::npos);
  const std::string untuned = served_environment("0");
  CHECK(untuned.find("GLIBC_TUNABLES") == std::string::npos);
  CHECK(untuned.find("JARVIS_MALLOC_TUNED") == std::string::npos);
}
#endif
