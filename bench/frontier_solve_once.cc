// One frontier solve per process, for before/after timings that alternate two builds (issue 12,
// docs/benchmarks.md): prints the solve's process CPU seconds and a hash of the points, energies
// and plan changes (equal hashes = bit-identical frontiers). Not part of the CMake build:
//   c++ -O3 -DNDEBUG -std=c++20 -Isrc -isystem /usr/include/eigen3 -DFMT_SHARED \
//       bench/frontier_solve_once.cc build/libpowertrain_lib.a -lfmt -lpthread -o /tmp/solve_once
//   /tmp/solve_once 16x128          # built-in GPT-3 175B, A100 SXM, TP 8, PP 16 x 128 microbatches
//   /tmp/solve_once floor [PROFILE] # golden A100 profile, 8 x 96, --quantization floor
//   /tmp/solve_once 16x128 ref      # the reference (pre-issue-12) engine (also: floor ref)
// Run from the repository root (the profile defaults to ../shared/data/perseus/...).
#include <time.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "frontier/problem.h"
#include "frontier/solver.h"
#include "profile/model_profile.h"
#include "profile/profile.h"
using namespace powertrain;
static double cpu() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
int main(int argc, char** argv) {
  std::string which = argc > 1 ? argv[1] : "16x128";
  core::Result<profile::Profile> prof = core::Result<profile::Profile>(profile::Profile{});
  int stages, mb;
  double pb;
  frontier::Quantization q = frontier::Quantization::kCeil;
  if (which == "floor") {
    prof = profile::read_profile(argc > 2 && std::string(argv[2]) != "ref"
                                     ? argv[2]
                                     : "../shared/data/perseus/gpt3-175b+a100_sxm_bf16.csv");
    if (!prof) {
      std::fprintf(stderr, "%s\n", prof.error().message.c_str());
      return 1;
    }
    stages = 8;
    mb = 96;
    pb = 83.64;
    q = frontier::Quantization::kFloor;
  } else {
    int s = 16, m = 128;
    std::sscanf(which.c_str(), "%dx%d", &s, &m);
    profile::ModelJobRequest request;
    request.model = "gpt3-175b";
    request.gpu = "a100-sxm";
    request.tp = 8;
    request.pp = s;
    request.microbatches = m;
    auto job = profile::build_model_job(request);
    if (!job) {
      std::fprintf(stderr, "%s\n", job.error().message.c_str());
      return 1;
    }
    prof = profile::generate_profile(*job);
    stages = s;
    mb = m;
    pb = job->gpu.p_blocking_w;
  }
  pipeline::PipelineSpec spec;
  spec.num_gpus = stages;
  spec.num_microbatches = mb;
  frontier::PlanningSettings settings;
  settings.unit_time_s = 1e-3;
  settings.p_blocking_w = pb;
  settings.quantization = q;
  auto problem = frontier::build_planning_problem(*prof, spec, settings);
  frontier::SolverOptions options;
  if (std::string(argv[argc - 1]) == "ref") options.incremental = false;
  if (!problem) {
    std::fprintf(stderr, "%s\n", problem.error().message.c_str());
    return 1;
  }
  const double c0 = cpu();
  auto f = frontier::solve_frontier(*problem, options);
  const double c1 = cpu();
  unsigned long long h = 1469598103934665603ULL;
  auto mix = [&](const void* p, size_t n) {
    auto* b = (const unsigned char*)p;
    for (size_t i = 0; i < n; ++i) {
      h ^= b[i];
      h *= 1099511628211ULL;
    }
  };
  for (auto& p : f.points) {
    mix(&p.time_units, 4);
    mix(&p.energy_j, 8);
  }
  for (auto& c : f.changes) {
    mix(&c.operation, 4);
    mix(&c.units, 4);
  }
  for (auto o : f.change_offsets) mix(&o, sizeof o);
  std::printf("%s cpu_s %.3f points %zu steps %zu hash %016llx\n", which.c_str(), c1 - c0,
              f.points.size(), f.stats.iterations, h);
}
