#include "report/analysis_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "report/analysis_document.h"
#include "report/csv.h"

namespace powertrain::report {
namespace {

std::string shorten(const std::string& name, std::size_t width) {
  if (name.size() <= width) return name;
  return name.substr(0, width - 3) + "...";
}

nlohmann::json summary(const analyze::AnalysisRun& run, const AnalysisEcho& echo) {
  nlohmann::json doc = analysis_json(run.ranks, run.context(), echo.top);
  doc["traces"] = echo.traces;
  doc["window"] = echo.window;
  doc["kernel_wait_threshold_s"] = echo.kernel_wait_us * 1e-6;
  doc["notes"] = run.notes;
  if (run.verdict) {
    doc["faithful"] = run.verdict->faithful;
    nlohmann::json reasons = nlohmann::json::array();
    for (const auto& r : run.verdict->reasons)
      reasons.push_back({{"text", r.text}, {"explained_s_per_step", r.explained_s}});
    doc["reasons"] = reasons;
  }
  return doc;
}

template <typename... Args>
void line(std::string& out, fmt::format_string<Args...> format, Args&&... args) {
  fmt::format_to(std::back_inserter(out), format, std::forward<Args>(args)...);
}

void append_ranks(std::string& out, const analyze::AnalysisRun& run) {
  line(out, "  {:>5} {:>12} {:>7} {:>9} {:>9} {:>9} {:>10} {:>8}\n", "rank", "window ms", "idle %",
       "compute %", "non-comp%", "overlap %", "comm ms", "GPU evts");
  for (const auto& r : run.ranks)
    line(out, "  {:>5} {:>12.3f} {:>7.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>10.3f} {:>8}\n", r.rank,
         r.window.length_ns() * 1e-6, r.temporal.pct(r.temporal.idle_ns),
         r.temporal.pct(r.temporal.compute_ns), r.temporal.pct(r.temporal.non_compute_ns),
         r.comm_comp_overlap_pct(), r.communication_ns * 1e-6, r.gpu_events);
  line(out, "  kernel types (% of GPU busy time, HTA states; measured):\n");
  for (const auto& r : run.ranks) {
    std::string states;
    for (int m = 1; m < 8; ++m)
      if (r.types.state_ns[m] > 0)
        states += fmt::format("  {} {:.2f}", analyze::state_name(m), r.types.state_pct(m));
    line(out, "  {:>5}{}\n", r.rank, states);
    for (const auto& l : r.libraries)
      line(out, "        {} kernels: {} ({:.3f} ms total)\n", analyze::to_string(l.library),
           l.count, l.total_ns * 1e-6);
  }
}

void append_top_kernels(std::string& out, const analyze::AnalysisRun& run, int top) {
  if (run.ranks.empty()) return;
  const auto& r = run.ranks.front();
  line(out, "  top kernels of rank {} (measured):\n", r.rank);
  line(out, "    {:<60} {:>13} {:>7} {:>11} {:>11}\n", "name", "type", "count", "total ms",
       "mean us");
  for (std::size_t k = 0; k < r.kernels.size() && static_cast<int>(k) < top; ++k) {
    const auto& ks = r.kernels[k];
    line(out, "    {:<60} {:>13} {:>7} {:>11.3f} {:>11.2f}\n", shorten(ks.name, 60),
         analyze::to_string(ks.type), ks.count, ks.total_ns * 1e-6, ks.mean_ns() * 1e-3);
  }
}

void append_critical_paths(std::string& out, const analyze::AnalysisRun& run) {
  if (run.paths.empty()) {
    line(out, "  critical path: not available ({})\n", run.unavailable);
    return;
  }
  line(out, "  critical path (replay; energy modelled on {}):\n", run.gpu);
  for (const auto& p : run.paths) {
    const auto& b = p.bound;
    const double len = static_cast<double>(std::max<std::int64_t>(b.total_ns(), 1));
    line(out,
         "  {:>5} whole path {:.3f} ms: compute {:.1f} %, communication {:.1f} %, host {:.1f} "
         "%, idle gap {:.1f} %; {:.3f} J (modelled)\n",
         p.rank, (p.end_ns - p.start_ns) * 1e-6, 100 * b.compute_ns / len,
         100 * b.communication_ns / len, 100 * b.host_ns / len, 100 * b.idle_gap_ns / len,
         p.energy_j);
    for (const auto& st : p.steps) {
      const auto& sb = st.bound;
      const double on = static_cast<double>(std::max<std::int64_t>(sb.total_ns(), 1));
      line(out,
           "        {} {:.3f} ms, {:.3f} ms on the path: compute {:.1f} %, communication {:.1f} "
           "%, host {:.1f} %, idle gap {:.1f} %; {:.3f} J (modelled)\n",
           st.step < 0 ? std::string("window") : fmt::format("step {}", st.step),
           (st.end_ns - st.start_ns) * 1e-6, sb.total_ns() * 1e-6, 100 * sb.compute_ns / on,
           100 * sb.communication_ns / on, 100 * sb.host_ns / on, 100 * sb.idle_gap_ns / on,
           st.energy_j);
    }
  }
}

}  // namespace

std::string analysis_summary_json(const analyze::AnalysisRun& run, const AnalysisEcho& echo) {
  return summary(run, echo).dump(2) + "\n";
}

std::string analysis_kernels_csv(const analyze::AnalysisRun& run) {
  std::string csv = "rank,name,type,library,count,total_s,mean_s,min_s,max_s\n";
  for (const auto& r : run.ranks)
    for (const auto& k : r.kernels)
      csv += fmt::format("{},{},{},{},{},{:.9f},{:.9f},{:.9f},{:.9f}\n", r.rank, csv_field(k.name),
                         analyze::to_string(k.type), analyze::to_string(k.library), k.count,
                         k.total_ns * 1e-9, k.mean_ns() * 1e-9, k.min_ns * 1e-9, k.max_ns * 1e-9);
  return csv;
}

core::Status write_analysis(const analyze::AnalysisRun& run, const AnalysisEcho& echo,
                            core::AtomicOutputDirectory& output) {
  const nlohmann::json doc = summary(run, echo);
  if (auto w = output.write_file("summary.json", doc.dump(2) + "\n"); !w) return w;
  if (auto w = output.write_file("kernels.csv", analysis_kernels_csv(run)); !w) return w;
  return output.write_file("report.html", html_report(doc));
}

std::string analysis_console(const analyze::AnalysisRun& run, const AnalysisEcho& echo,
                             double total_s, const std::filesystem::path& directory) {
  std::string out;
  // The critical path comes from the replay: say first when the replay does not reproduce the
  // trace (the measured quantities stay valid).
  if (run.verdict && !run.verdict->faithful) {
    line(out,
         "verdict: NOT FAITHFUL - the replay does not reproduce the trace; the critical path is "
         "not reliable (measured quantities are):\n");
    for (const auto& reason : run.verdict->reasons)
      line(out, "  - {} ({:.6f} s per step)\n", reason.text, reason.explained_s);
  } else if (run.verdict) {
    line(out, "verdict: FAITHFUL - the replay behind the critical path reproduces the trace\n");
  }
  line(out, "powertrain analyze: {} rank(s), window {}; measured from the trace ({:.2f} s)\n",
       run.ranks.size(), echo.window, total_s);
  append_ranks(out, run);
  append_top_kernels(out, run, echo.top);
  append_critical_paths(out, run);
  for (const auto& note : run.notes) line(out, "  note: {}\n", note);
  line(out, "  files         {}/: summary.json kernels.csv report.html\n", directory.string());
  return out;
}

}  // namespace powertrain::report
