// The one place the CLI chooses between the single-process sweep load and
// the MPI one (JARVIS_MPI builds only).
#include "cli/sweep_engine.h"

#include <cstdio>
#include <filesystem>

#include "base/process_stats.h"

#if JARVIS_MPI
#include "scaleout/scaleout.h"
#endif

namespace jarvis::cli {
namespace {

namespace fs = std::filesystem;

struct Line {
  double peak_rss_mb = 0;
  size_t runs = 0, parsed = 0, hits = 0, failed = 0;
};

void print_line(const std::string& who, const Line& l) {
  std::fprintf(stderr,
               "stats: %s: peak RSS %.1f MB, runs %zu, parsed %zu, cache hits %zu, failed %zu\n",
               who.c_str(), l.peak_rss_mb, l.runs, l.parsed, l.hits, l.failed);
}

void print_trace_line(const std::string& who, double rss_mb, size_t parsed, size_t failed) {
  std::fprintf(stderr, "stats: %s: peak RSS %.1f MB, traces parsed %zu, failed %zu\n", who.c_str(),
               rss_mb, parsed, failed);
}

}  // namespace

#if JARVIS_MPI
struct SweepEngine::Mpi {
  std::unique_ptr<scaleout::JobApi> job = scaleout::join_job();
};
#else
struct SweepEngine::Mpi {};
#endif

SweepEngine::SweepEngine() {
#if JARVIS_MPI
  if (scaleout::started_as_ranks()) mpi_ = std::make_unique<Mpi>();
#endif
}

SweepEngine::~SweepEngine() = default;

bool SweepEngine::serving_rank() const {
#if JARVIS_MPI
  return mpi_ && !mpi_->job->root();
#else
  return false;
#endif
}

void SweepEngine::serve() {
#if JARVIS_MPI
  if (mpi_) mpi_->job->serve();
#endif
}

engine::Sweep SweepEngine::load(const std::string& dir, const engine::SweepLoadOptions& options) {
#if JARVIS_MPI
  if (mpi_) return mpi_->job->load_sweep(dir, options);
#endif
  return engine::load_sweep(dir, options);
}

engine::CollectiveReportResult SweepEngine::collective_report(
    const std::vector<std::string>& paths, const engine::CollectiveReportOptions& options) {
#if JARVIS_MPI
  if (mpi_) return mpi_->job->collective_report(paths, options);
#endif
  return engine::collective_report(paths, options);
}

std::vector<std::string> SweepEngine::write_dir(
    const std::string& out,
    const std::function<std::vector<std::string>(const std::string&)>& write) {
#if JARVIS_MPI
  if (mpi_) {
    std::vector<std::string> written;
    scaleout::write_dir_staged(out, [&](const std::string& staging) {
      for (const auto& p : write(staging))
        written.push_back((fs::path(out) / fs::path(p).filename()).string());
    });
    return written;
  }
#endif
  return write(out);
}

void SweepEngine::print_stats(const std::vector<const engine::Sweep*>& sweeps) {
  Line total;
  for (const engine::Sweep* s : sweeps) {
    size_t analysed_ok = s->runs.size() - s->cache_hits;
    total.runs += s->runs.size() + (s->runs_parsed - analysed_ok);
    total.parsed += s->runs_parsed;
    total.hits += s->cache_hits;
    total.failed += s->runs_parsed - analysed_ok;
  }
#if JARVIS_MPI
  if (mpi_) {
    for (const auto& r : mpi_->job->stats()) {
      print_line("rank " + std::to_string(r.rank),
                 {r.peak_rss_mb, r.tasks, r.runs_parsed, r.cache_hits, r.failed});
      total.peak_rss_mb = std::max(total.peak_rss_mb, r.peak_rss_mb);
    }
    print_line("all " + std::to_string(mpi_->job->size()) + " ranks (largest peak RSS)", total);
    return;
  }
#endif
  total.peak_rss_mb = peak_rss_mb();
  print_line("rank 0", total);
}

void SweepEngine::print_trace_stats(size_t traces) {
#if JARVIS_MPI
  if (mpi_) {
    double peak = 0;
    size_t parsed = 0, failed = 0;
    for (const auto& r : mpi_->job->stats()) {
      print_trace_line("rank " + std::to_string(r.rank), r.peak_rss_mb, r.runs_parsed, r.failed);
      peak = std::max(peak, r.peak_rss_mb);
      parsed += r.runs_parsed;
      failed += r.failed;
    }
    print_trace_line("all " + std::to_string(mpi_->job->size()) + " ranks (largest peak RSS)", peak,
                     parsed, failed);
    return;
  }
#endif
  print_trace_line("rank 0", peak_rss_mb(), traces, 0);
}

}  // namespace jarvis::cli
