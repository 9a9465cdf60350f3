#include "kareus/paper_tables.h"

#include <fmt/core.h>

#include <cmath>

namespace powertrain::kareus {

std::array<double, 2> max_throughput_reduction(const SystemsResult& r, int s) {
  const auto [m_t, m_e] = fastest_point(r.systems[kMegatron]);
  const auto [t, e] = fastest_point(r.systems[static_cast<std::size_t>(s)]);
  return {100.0 * (1.0 - t / m_t), 100.0 * (1.0 - e / m_e)};
}

namespace {

// Cell tallies: cells with a paper value, and those within 5 pp.
struct Tally {
  int compared = 0;
  int within = 0;
  double worst = 0.0;
};

std::string number(double v) {
  if (std::isnan(v)) return "n/a";
  if (std::isinf(v)) return "—";
  return fmt::format("{:.1f}", v);
}

// "ours / paper (Δ pp)"; the paper's "—" against ours: a match only when ours is "—" too.
std::string cell(std::optional<double> ours, double paper, Tally& tally) {
  const std::string o = ours ? number(*ours) : "—";
  if (std::isnan(paper)) return o + " / n/a";
  const std::string p = number(paper);
  if (std::isinf(paper) || !ours) {
    ++tally.compared;
    const bool match = std::isinf(paper) && !ours;
    tally.within += match ? 1 : 0;
    return fmt::format("{} / {} ({})", o, p, match ? "=" : "miss");
  }
  const double d = *ours - paper;
  ++tally.compared;
  tally.within += std::abs(d) <= 5.0 ? 1 : 0;
  tally.worst = std::max(tally.worst, std::abs(d));
  return fmt::format("{} / {} ({:+.1f}{})", o, p, d, std::abs(d) <= 5.0 ? "" : " ✗");
}

std::string tally_line(const char* table, const Tally& t) {
  return fmt::format(
      "{}: {} of {} cells with a paper value are within 5 pp (largest deviation {:.1f} pp).\n\n",
      table, t.within, t.compared, t.worst);
}

// Table 1: the time and energy split of one workload, ours next to the paper's.
std::string table1_markdown(const std::vector<Table3Outcome>& table3) {
  std::string md;
  if (kTable1Workload >= static_cast<int>(table3.size()) || !table3[kTable1Workload].result)
    return md;
  const Table3Outcome& o = table3[kTable1Workload];
  const SystemsResult& r = *o.result;
  Tally tally;
  md += fmt::format(
      "### Table 1: time and energy split, {} ({} GPUs; static = {:.0f} W GPU ready-state power "
      "× GPUs × time, the paper's definition)\n\n",
      o.workload.label(), r.gpus, o.ready_power_w);
  md +=
      "| system | time s (ours / paper) | static J | dynamic J | total J | time vs M % | "
      "static share % | dynamic vs M % | total vs M % |\n|---|---|---|---|---|---|---|---|---|\n";
  const auto [m_t, m_e] = fastest_point(r.systems[kMegatron]);
  const double m_static = r.gpus * o.ready_power_w * m_t;
  const PaperTable1Row& pm = kPaperTable1[0];
  for (int s = 0; s < 4; ++s) {
    const auto [t, e] = fastest_point(r.systems[static_cast<std::size_t>(s)]);
    const double st = r.gpus * o.ready_power_w * t;
    const PaperTable1Row& p = kPaperTable1[static_cast<std::size_t>(s)];
    md += fmt::format(
        "| {} | {:.2f} / {:.2f} | {:.0f} / {:.0f} | {:.0f} / {:.0f} | {:.0f} / {:.0f} | {} | {} "
        "| "
        "{} | {} |\n",
        system_name(s), t, p.time_s, st, p.static_j, e - st, p.dynamic_j, e, p.total_j,
        cell(100.0 * (t / m_t - 1.0), 100.0 * (p.time_s / pm.time_s - 1.0), tally),
        cell(100.0 * st / e, 100.0 * p.static_j / p.total_j, tally),
        cell(100.0 * ((e - st) / (m_e - m_static) - 1.0),
             100.0 * (p.dynamic_j / pm.dynamic_j - 1.0), tally),
        cell(100.0 * (e / m_e - 1.0), 100.0 * (p.total_j / pm.total_j - 1.0), tally));
  }
  md += "\n";
  md += tally_line("Table 1 (relative columns)", tally);
  return md;
}

// Table 4 (max-throughput reductions vs Megatron-LM), the OOM verdicts and the memory table.
std::string table4_markdown(const std::vector<Table3Outcome>& table3) {
  std::string md;
  Tally tally;
  md +=
      "### Table 4: max-throughput time and energy reduction % vs Megatron-LM\n\n"
      "| workload | time M+P | time N+P | time Kareus | energy M+P | energy N+P | energy Kareus "
      "|\n|---|---|---|---|---|---|---|\n";
  int oom_agree = 0, oom_cells = 0;
  for (std::size_t i = 0; i < table3.size() && i < kPaperTable4.size(); ++i) {
    const Table3Outcome& o = table3[i];
    const PaperTable4Row& p = kPaperTable4[i];
    ++oom_cells;
    oom_agree += o.oom == p.oom ? 1 : 0;
    md += fmt::format("| {} ", o.workload.label());
    if (o.oom || p.oom)
      md += fmt::format("(ours {}, paper {}) ", o.oom ? "OOM" : "fits", p.oom ? "OOM" : "fits");
    if (!o.result) {
      md += "|||||||\n";
      continue;
    }
    std::array<std::string, 6> cells;
    for (int k = 0; k < 3; ++k) {
      const auto red = max_throughput_reduction(*o.result, k == 0   ? kMegatronPerseus
                                                           : k == 1 ? kNanobatchingPerseus
                                                                    : kKareus);
      const auto ki = static_cast<std::size_t>(k);
      cells[ki] = p.oom ? fmt::format("{:.1f} / OOM", red[0])
                        : cell(red[0], p.time_reduction_pct[ki], tally);
      cells[ki + 3] = p.oom ? fmt::format("{:.1f} / OOM", red[1])
                            : cell(red[1], p.energy_reduction_pct[ki], tally);
    }
    for (const std::string& c : cells) md += "| " + c + " ";
    md += "|\n";
  }
  md += "\n";
  md += tally_line("Table 4", tally);
  md += fmt::format("OOM verdicts: {} of {} workloads agree with the paper.\n\n", oom_agree,
                    oom_cells);
  md += fmt::format(
      "### Memory (modelled, fullest stage per GPU; testbed A100 {:.0f} GB)\n\n| workload | "
      "with activation checkpointing GiB | without GiB | ours | paper |\n|---|---|---|---|---|\n",
      kTable3GpuMemoryGib);
  for (std::size_t i = 0; i < table3.size() && i < kPaperTable4.size(); ++i) {
    const Table3Outcome& o = table3[i];
    md += fmt::format("| {} | {:.1f} | {:.1f} | {} | {} |\n", o.workload.label(), o.peak_gib,
                      o.peak_gib_no_recompute, o.oom ? "OOM" : "fits",
                      kPaperTable4[i].oom ? "OOM" : "fits");
  }
  md += "\n";
  return md;
}

// Table 5: iso-time energy and iso-energy time reductions vs Megatron-LM + Perseus.
std::string table5_markdown(const std::vector<Table3Outcome>& table3) {
  std::string md;
  Tally tally;
  md +=
      "### Table 5: iso-time energy and iso-energy time reduction % vs Megatron-LM + Perseus\n\n"
      "| workload | iso-time N+P | iso-time Kareus | iso-energy N+P | iso-energy Kareus "
      "|\n|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < table3.size() && i < kPaperTable5.size(); ++i) {
    const Table3Outcome& o = table3[i];
    md += fmt::format("| {} ", o.workload.label());
    if (kPaperTable4[i].oom) md += "(paper: OOM) ";
    if (!o.result) {
      md += "|||||\n";
      continue;
    }
    const SystemsResult& r = *o.result;
    const auto np =
        frontier_improvement(r.systems[kMegatronPerseus], r.systems[kNanobatchingPerseus]);
    const auto ka = frontier_improvement(r.systems[kMegatronPerseus], r.systems[kKareus]);
    const auto& p = kPaperTable5[i];
    md += "| " + cell(np.iso_time_energy_reduction_pct, p[0], tally) + " | " +
          cell(ka.iso_time_energy_reduction_pct, p[1], tally) + " | " +
          cell(np.iso_energy_time_reduction_pct, p[2], tally) + " | " +
          cell(ka.iso_energy_time_reduction_pct, p[3], tally) + " |\n";
  }
  md += "\n";
  md += tally_line("Table 5", tally);
  return md;
}

// Tables 7 and 8: Llama 3.3 70B at 16 to 128 microbatches.
std::string tables78_markdown(const std::vector<SystemsResult>& table7) {
  std::string md;
  if (table7.empty()) return md;
  Tally t7, t8;
  md +=
      "### Table 7: Llama 3.3 70B (TP 8 × PP 10, microbatch 4 × 4096), max-throughput "
      "reduction % vs Megatron-LM\n\n| microbatches | time M+P | time Kareus | energy M+P | "
      "energy Kareus |\n|---|---|---|---|---|\n";
  std::string t8md =
      "### Table 8: Llama 3.3 70B, Kareus vs Megatron-LM + Perseus\n\n| microbatches | "
      "iso-time energy red. % | iso-energy time red. % |\n|---|---|---|\n";
  for (std::size_t i = 0; i < table7.size() && i < kPaperTable7.size(); ++i) {
    const SystemsResult& r = table7[i];
    const auto mp = max_throughput_reduction(r, kMegatronPerseus);
    const auto ka = max_throughput_reduction(r, kKareus);
    const auto& p = kPaperTable7[i];
    md += fmt::format("| {} | {} | {} | {} | {} |\n", kTable7Microbatches[i], cell(mp[0], p[0], t7),
                      cell(ka[0], p[1], t7), cell(mp[1], p[2], t7), cell(ka[1], p[3], t7));
    const auto fi = frontier_improvement(r.systems[kMegatronPerseus], r.systems[kKareus]);
    t8md += fmt::format("| {} | {} | {} |\n", kTable7Microbatches[i],
                        cell(fi.iso_time_energy_reduction_pct, kPaperTable8[i][0], t8),
                        cell(fi.iso_energy_time_reduction_pct, kPaperTable8[i][1], t8));
  }
  md += "\n";
  md += tally_line("Table 7", t7);
  md += t8md;
  md += "\n";
  md += tally_line("Table 8", t8);
  return md;
}

}  // namespace

std::string paper_tables_markdown(const std::vector<Table3Outcome>& table3,
                                  const std::vector<SystemsResult>& table7) {
  std::string md;
  md +=
      "Cells: ours / paper (ours − paper, percentage points; ✗ beyond 5 pp). n/a: the value is "
      "not in our text copy of the paper. All of ours are modelled.\n\n";

  md += table1_markdown(table3);
  md += table4_markdown(table3);
  md += table5_markdown(table3);
  md += tables78_markdown(table7);
  return md;
}

}  // namespace powertrain::kareus
