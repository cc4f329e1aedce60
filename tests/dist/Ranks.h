// Ranks.h: runs a function as several processes (fork) and collects what each returned or
// threw, with a hard time limit: a rank still running at the limit is killed and reported,
// so a hang fails the test instead of stalling it. For the host-side (no GPU) dist tests:
// children never touch CUDA. Also: a free TCP port for a rendezvous.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace testing {

struct RankOutcome {
  int exitCode = -1;   // 0: returned, 1: threw, other: the process's own; -1: killed at the limit
  std::string text;    // what it returned, or the exception's message
  double seconds = 0;  // from the start of all ranks to this one's end
};

// A port that was free a moment ago (bound to port 0 and released).
inline int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

// body(i) runs in child i of n; returns its text (exit 0) or throws (exit 1).
inline std::vector<RankOutcome> run_ranks(int n, const std::function<std::string(int)>& body, double limitSeconds) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::vector<pid_t> pids(n);
  std::vector<int> pipes(n);
  for (int i = 0; i < n; ++i) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      std::string text;
      int code = 0;
      try {
        text = body(i);
      } catch (const std::exception& e) {
        text = e.what();
        code = 1;
      }
      size_t done = 0;
      while (done < text.size()) {
        const ssize_t w = ::write(fds[1], text.data() + done, text.size() - done);
        if (w <= 0) break;
        done += static_cast<size_t>(w);
      }
      ::_exit(code);
    }
    ::close(fds[1]);
    pids[i] = pid;
    pipes[i] = fds[0];
  }
  std::vector<RankOutcome> out(n);
  std::vector<bool> done(n, false);
  int left = n;
  while (left > 0) {
    for (int i = 0; i < n; ++i) {
      if (done[i]) continue;
      // Drain the pipe as we go (a long message would otherwise block the child).
      char buf[4096];
      pollfd p{pipes[i], POLLIN, 0};
      while (::poll(&p, 1, 0) > 0) {
        const ssize_t r = ::read(pipes[i], buf, sizeof buf);
        if (r <= 0) break;
        out[i].text.append(buf, static_cast<size_t>(r));
      }
      int status = 0;
      if (::waitpid(pids[i], &status, WNOHANG) == pids[i]) {
        ssize_t r;
        while ((r = ::read(pipes[i], buf, sizeof buf)) > 0) out[i].text.append(buf, static_cast<size_t>(r));
        out[i].exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        out[i].seconds = std::chrono::duration<double>(Clock::now() - start).count();
        done[i] = true;
        --left;
        ::close(pipes[i]);
      }
    }
    if (left > 0 && std::chrono::duration<double>(Clock::now() - start).count() > limitSeconds) {
      for (int i = 0; i < n; ++i) {
        if (done[i]) continue;
        ::kill(pids[i], SIGKILL);
        ::waitpid(pids[i], nullptr, 0);
        ::close(pipes[i]);
        out[i].exitCode = -1;
        out[i].text += "(killed: still running after the test's limit)";
        out[i].seconds = limitSeconds;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return out;
}

}  // namespace testing
