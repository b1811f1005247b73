// run_shell (process.h): fork, exec /bin/sh -c, poll for the exit.
#include "ab/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "base/error.h"

namespace jarvis::ab {

CommandRun run_shell(const std::string& command, const EnvList& env, const std::string& log_path,
                     double timeout_s) {
  CommandRun run;
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw Error(ErrorKind::Internal, fmt::format("fork failed for `{}`", command));
  if (pid == 0) {
    setpgid(0, 0);
    const int in = open("/dev/null", O_RDONLY);
    const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (in >= 0) dup2(in, 0);
    if (log >= 0) {
      dup2(log, 1);
      dup2(log, 2);
    }
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);  // both sides set it: no race with the child's exec
  int status = 0;
  bool terminated = false;
  std::chrono::steady_clock::time_point term_at;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start).count();
    if (!terminated && timeout_s > 0 && elapsed > timeout_s) {
      run.timed_out = true;
      kill(-pid, SIGTERM);
      terminated = true;
      term_at = now;
    } else if (terminated && now - term_at > std::chrono::seconds(3)) {
      kill(-pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // What the command left running in its group (a DataLoader worker whose
  // parent exited at once) goes with it.
  kill(-pid, SIGKILL);
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status))
    run.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    run.exit_code = 128 + WTERMSIG(status);
  return run;
}

std::string log_tail(const std::string& log_path, size_t max_bytes) {
  std::ifstream in(log_path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const std::streamoff size = in.tellg();
  const std::streamoff from = size > static_cast<std::streamoff>(max_bytes)
                                  ? size - static_cast<std::streamoff>(max_bytes)
                                  : 0;
  in.seekg(from);
  std::string text(static_cast<size_t>(size - from), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  return text;
}

std::pair<std::string, std::string> parse_env_assignment(const std::string& text,
                                                         const std::string& flag) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError(fmt::format("{} {}: expected NAME=VALUE", flag, text));
  return {text.substr(0, eq), text.substr(eq + 1)};
}

}  // namespace jarvis::ab
