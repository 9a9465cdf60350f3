#include "report/analysis_document.h"

#include <fmt/core.h>

#include <cmath>
#include <string_view>

#include "report/csv.h"

namespace powertrain::report {

// Every type here is the analysis vocabulary (analyze/) that this writer renders.
using namespace analyze;  // NOLINT(google-build-using-namespace)

namespace {

double s(std::int64_t ns) { return static_cast<double>(ns) * 1e-9; }
double s(double ns) { return ns * 1e-9; }
// Rounds a share to 1e-6 pp so the JSON stays readable; times stay exact.
double pct(double value) { return std::round(value * 1e6) / 1e6; }

nlohmann::json bound_json(const BoundBy& b) {
  const double total = static_cast<double>(b.total_ns());
  auto share = [&](std::int64_t ns) { return total > 0 ? pct(100.0 * double(ns) / total) : 0.0; };
  return {{"compute_s", s(b.compute_ns)},
          {"communication_s", s(b.communication_ns)},
          {"host_s", s(b.host_ns)},
          {"idle_gap_s", s(b.idle_gap_ns)},
          {"compute_pct", share(b.compute_ns)},
          {"communication_pct", share(b.communication_ns)},
          {"host_pct", share(b.host_ns)},
          {"idle_gap_pct", share(b.idle_gap_ns)}};
}

nlohmann::json path_json(const RankPath& p, const graph::ExecutionGraph& graph) {
  nlohmann::json j = {{"length_s", s(p.end_ns - p.start_ns)},
                      {"tasks", p.tasks},
                      {"tasks_on_other_ranks", p.other_rank_tasks},
                      {"bound_by", bound_json(p.bound)},
                      {"energy_j_modelled", p.energy_j},
                      {"static_power_w_modelled", p.static_power_w}};
  j["steps"] = nlohmann::json::array();
  for (const StepPath& st : p.steps) {
    nlohmann::json step = {
        {"step", st.step < 0 ? nlohmann::json("window") : nlohmann::json(st.step)},
        {"step_length_s", s(st.end_ns - st.start_ns)},
        {"on_path_s", s(st.bound.total_ns())},
        {"tasks", st.tasks},
        {"bound_by", bound_json(st.bound)},
        {"energy_j_modelled", st.energy_j}};
    j["steps"].push_back(step);
  }
  j["longest_tasks"] = nlohmann::json::array();
  for (const RankPath::Top& t : p.longest) {
    const graph::TaskKind kind = graph.kind[t.task];
    j["longest_tasks"].push_back({{"name", graph.task_name(t.task)},
                                  {"rank", graph.ranks[graph.rank_index_of(t.task)].rank},
                                  {"kind", kind == graph::TaskKind::kCpu      ? "cpu"
                                           : kind == graph::TaskKind::kKernel ? "kernel"
                                           : kind == graph::TaskKind::kMemcpy ? "memcpy"
                                                                              : "memset"},
                                  {"on_path_s", s(t.on_path_ns)}});
  }
  return j;
}

nlohmann::json delay_json(const DelayStats& d) {
  return {{"count", d.count},     {"mean_s", s(d.mean_ns)}, {"p50_s", s(d.p50_ns)},
          {"p95_s", s(d.p95_ns)}, {"max_s", s(d.max_ns)},   {"min_s", s(d.min_ns)}};
}

}  // namespace

nlohmann::json analysis_json(const std::vector<RankAnalysis>& ranks, const PathContext& paths,
                             int top_n) {
  nlohmann::json doc;
  doc["units"] = "seconds, percent (pct), bytes, GB/s; measured from the trace unless *_modelled";
  doc["ranks"] = nlohmann::json::array();
  for (const RankAnalysis& r : ranks) {
    nlohmann::json j;
    j["rank"] = r.rank;
    j["source"] = r.source;
    j["window"] = {{"requested", to_string(r.window.requested)},
                   {"used", to_string(r.window.used)},
                   {"start_ns", r.window.start_ns},
                   {"length_s", s(r.window.length_ns())},
                   {"profiler_steps", r.window.steps}};
    j["gpu_events"] = r.gpu_events;
    const TemporalBreakdown& t = r.temporal;
    j["temporal"] = {{"window_s", s(t.window_ns)},
                     {"idle_s", s(t.idle_ns)},
                     {"compute_s", s(t.compute_ns)},
                     {"non_compute_s", s(t.non_compute_ns)},
                     {"idle_pct", pct(t.pct(t.idle_ns))},
                     {"compute_pct", pct(t.pct(t.compute_ns))},
                     {"non_compute_pct", pct(t.pct(t.non_compute_ns))}};
    nlohmann::json types = nlohmann::json::object();
    for (int k = 0; k < kKernelTypes; ++k)
      types[std::string(to_string(static_cast<KernelType>(k)))] = {
          {"count", r.types.count[k]},
          {"sum_s", s(r.types.sum_ns[k])},
          {"union_s", s(r.types.union_ns[k])}};
    types["states"] = nlohmann::json::array();
    for (int m = 1; m < 8; ++m)
      types["states"].push_back({{"state", state_name(m)},
                                 {"time_s", s(r.types.state_ns[m])},
                                 {"pct", pct(r.types.state_pct(m))}});
    j["kernel_types"] = types;
    j["comm_comp_overlap"] = {{"communication_s", s(r.communication_ns)},
                              {"overlap_s", s(r.overlap_ns)},
                              {"pct", pct(r.comm_comp_overlap_pct())}};
    j["comm_libraries"] = nlohmann::json::array();
    for (const LibraryStat& l : r.libraries)
      j["comm_libraries"].push_back({{"library", to_string(l.library)},
                                     {"count", l.count},
                                     {"total_s", s(l.total_ns)},
                                     {"union_s", s(l.union_ns)}});
    j["kernel_names"] = r.kernels.size();
    j["top_kernels"] = nlohmann::json::array();
    for (std::size_t k = 0; k < r.kernels.size() && static_cast<int>(k) < top_n; ++k) {
      const KernelStat& ks = r.kernels[k];
      j["top_kernels"].push_back({{"name", ks.name},
                                  {"type", to_string(ks.type)},
                                  {"library", to_string(ks.library)},
                                  {"count", ks.count},
                                  {"total_s", s(ks.total_ns)},
                                  {"mean_s", s(ks.mean_ns())},
                                  {"min_s", s(ks.min_ns)},
                                  {"max_s", s(ks.max_ns)}});
    }
    j["streams"] = nlohmann::json::array();
    for (const StreamStats& st : r.streams)
      j["streams"].push_back({{"device", st.device},
                              {"stream", st.stream},
                              {"gpu_events", st.gpu_events},
                              {"busy_s", s(st.busy_ns)},
                              {"queue_length_max", st.max_queue_length},
                              {"queue_length_mean", st.mean_queue_length},
                              {"launch_delay", delay_json(st.launch_delay)},
                              {"without_launch", st.without_launch},
                              {"idle",
                               {{"host_wait_s", s(st.idle_host_wait_ns)},
                                {"kernel_wait_s", s(st.idle_kernel_wait_ns)},
                                {"other_s", s(st.idle_other_ns)},
                                {"host_wait_gaps", st.gaps[0]},
                                {"kernel_wait_gaps", st.gaps[1]},
                                {"other_gaps", st.gaps[2]}}}});
    j["memcpy"] = nlohmann::json::array();
    for (const MemcpyStat& m : r.memcpy)
      j["memcpy"].push_back({{"direction", m.direction},
                             {"count", m.count},
                             {"with_bytes", m.with_bytes},
                             {"bytes", m.bytes},
                             {"duration_s", s(m.duration_ns)},
                             {"bandwidth_gb_s", m.gb_s()}});
    j["steps"] = nlohmann::json::array();
    for (const auto& [a, b] : r.steps)
      j["steps"].push_back({{"offset_s", s(a - r.window.start_ns)}, {"length_s", s(b - a)}});
    nlohmann::json bins = {
        {"bin_s", r.bins.empty() ? 0.0 : s(r.window.length_ns()) / r.bins.size()}};
    for (int k = 0; k < kKernelTypes; ++k) {
      nlohmann::json series = nlohmann::json::array();
      for (const auto& bin : r.bins) series.push_back(std::round(bin[k] * 1000.0) / 1000.0);
      bins[std::string(to_string(static_cast<KernelType>(k)))] = series;
    }
    j["timeline"] = bins;
    if (paths.graph != nullptr && paths.paths != nullptr) {
      for (const RankPath& p : *paths.paths)
        if (p.rank == r.rank) j["critical_path"] = path_json(p, *paths.graph);
    }
    doc["ranks"].push_back(j);
  }
  if (paths.graph != nullptr && paths.paths != nullptr) {
    doc["critical_path_source"] = {
        {"what", "replay of the measured trace (sim::replay), critical_pred chain per rank"},
        {"energy_gpu", paths.gpu},
        {"energy_clock_mhz", paths.clock_mhz}};
  } else {
    doc["critical_path_source"] = {{"unavailable", paths.unavailable}};
  }
  return doc;
}

nlohmann::json diff_json(const TraceDiff& diff, int top_n) {
  nlohmann::json doc;
  doc["units"] = "seconds; durations measured, summed over ranks";
  doc["ranks_a"] = diff.ranks_a;
  doc["ranks_b"] = diff.ranks_b;
  doc["names"] = diff.rows.size();
  doc["added"] = diff.added;
  doc["removed"] = diff.removed;
  doc["gpu_total_a_s"] = s(diff.gpu_total_a_ns);
  doc["gpu_total_b_s"] = s(diff.gpu_total_b_ns);
  doc["op_total_a_s"] = s(diff.op_total_a_ns);
  doc["op_total_b_s"] = s(diff.op_total_b_ns);
  auto row_json = [](const DiffRow& r) {
    return nlohmann::json{{"name", r.name},
                          {"kind", r.kind},
                          {"status", to_string(r.status)},
                          {"count_a", r.count_a},
                          {"count_b", r.count_b},
                          {"total_a_s", s(r.total_a_ns)},
                          {"total_b_s", s(r.total_b_ns)},
                          {"mean_a_s", s(r.mean_a_ns())},
                          {"mean_b_s", s(r.mean_b_ns())},
                          {"delta_s", s(r.delta_ns())}};
  };
  doc["top_changes"] = nlohmann::json::array();
  for (std::size_t i = 0; i < diff.rows.size() && static_cast<int>(i) < top_n; ++i)
    doc["top_changes"].push_back(row_json(diff.rows[i]));
  doc["added_names"] = nlohmann::json::array();
  doc["removed_names"] = nlohmann::json::array();
  for (const DiffRow& r : diff.rows) {
    if (r.status == DiffStatus::kAdded) doc["added_names"].push_back(row_json(r));
    if (r.status == DiffStatus::kRemoved) doc["removed_names"].push_back(row_json(r));
  }
  return doc;
}

namespace {

// The page around the embedded summary: styles, then the script that draws it.
constexpr std::string_view kPageHead = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>powertrain analyze (rendering)</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222;max-width:1200px}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:right}
td.l,th.l{text-align:left;max-width:520px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.legend span{display:inline-block;margin-right:1em}.sw{display:inline-block;width:10px;height:10px;margin-right:4px}
.note{color:#666;font-size:.9em}
</style></head><body>
<h1>powertrain analyze</h1>
<p class="note">Measured from the Kineto trace (HTA definitions, see docs/analyze.md); the critical path comes from the replay, its energy from the GPU model (modelled).</p>
<div id="app"></div>
<script id="summary" type="application/json">)HTML";
constexpr std::string_view kPageTail = R"HTML(</script>
<script>
"use strict";
(function () {
  const NS = "http://www.w3.org/2000/svg";
  const COLORS = {computation: "#4c78a8", communication: "#f58518", memory: "#54a24b", idle: "#d0d0d0",
                  compute: "#4c78a8", non_compute: "#f58518", host: "#b279a2", idle_gap: "#d0d0d0"};
  const app = document.getElementById("app");
  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svg(tag, attrs) {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    return e;
  }
  function fmtS(x) {
    if (x === 0) return "0";
    const a = Math.abs(x);
    if (a >= 1) return x.toFixed(3) + " s";
    if (a >= 1e-3) return (x * 1e3).toFixed(3) + " ms";
    return (x * 1e6).toFixed(2) + " us";
  }
  function legend(keys) {
    const d = el("div", {class: "legend"});
    for (const k of keys) {
      const s = el("span");
      s.appendChild(el("span", {class: "sw", style: "background:" + COLORS[k]}));
      s.appendChild(document.createTextNode(k.replace("_", " ")));
      d.appendChild(s);
    }
    return d;
  }
  // One stacked horizontal bar per row: parts = [[key, value], ...], values in percent.
  function stacked(rows, keys, title) {
    const W = 760, H = 22, L = 90;
    const g = svg("svg", {width: W + L + 10, height: rows.length * (H + 6) + 6, role: "img"});
    rows.forEach(function (row, i) {
      const y = 4 + i * (H + 6);
      const label = svg("text", {x: 0, y: y + 15, "font-size": 12});
      label.textContent = row.label;
      g.appendChild(label);
      let x = L;
      for (const k of keys) {
        const v = Math.max(0, row.values[k] || 0);
        const w = W * v / 100;
        if (w <= 0) continue;
        const r = svg("rect", {x: x, y: y, width: w, height: H, fill: COLORS[k]});
        const t = svg("title");
        t.textContent = row.label + " " + k + ": " + v.toFixed(2) + " %";
        r.appendChild(t);
        g.appendChild(r);
        x += w;
      }
    });
    const box = el("div");
    if (title) box.appendChild(el("h3", {}, title));
    box.appendChild(legend(keys));
    box.appendChild(g);
    return box;
  }
  function table(headers, rows, leftCols) {
    const t = el("table");
    const tr = el("tr");
    headers.forEach(function (h, i) { tr.appendChild(el("th", leftCols.includes(i) ? {class: "l"} : {}, h)); });
    t.appendChild(tr);
    for (const row of rows) {
      const r = el("tr");
      row.forEach(function (c, i) {
        const td = el("td", leftCols.includes(i) ? {class: "l", title: String(c)} : {}, String(c));
        r.appendChild(td);
      });
      t.appendChild(r);
    }
    return t;
  }
  function timeline(rank) {
    const tl = rank.timeline, W = 860, H = 60;
    const n = (tl.computation || []).length;
    const g = svg("svg", {width: W + 10, height: H + 24, role: "img"});
    if (n === 0) return g;
    const bw = W / n;
    const keys = ["computation", "communication", "memory"];
    for (let i = 0; i < n; ++i) {
      let y = H;
      for (const k of keys) {
        const h = H / 3 * Math.min(1, tl[k][i]);
        if (h <= 0) continue;
        g.appendChild(svg("rect", {x: i * bw, y: y - h, width: Math.max(bw, 0.5), height: h, fill: COLORS[k]}));
        y -= h;
      }
    }
    const L = rank.window.length_s;
    for (const st of rank.steps) {
      const x = L > 0 ? W * st.offset_s / L : 0;
      g.appendChild(svg("line", {x1: x, x2: x, y1: 0, y2: H, stroke: "#000", "stroke-dasharray": "3,3"}));
    }
    const axis = svg("text", {x: 0, y: H + 16, "font-size": 11});
    axis.textContent = "window " + rank.window.used + ": " + fmtS(L) + " (" + n + " bins; bar height = busy share per type; dashed = ProfilerStep starts)";
    g.appendChild(axis);
    return g;
  }
  const d = JSON.parse(document.getElementById("summary").textContent);
  const ranks = d.ranks || [];
  app.appendChild(el("h2", {}, "Temporal breakdown per rank (HTA: idle / compute / non-compute, % of window)"));
  app.appendChild(stacked(ranks.map(function (r) {
    return {label: "rank " + r.rank, values: {compute: r.temporal.compute_pct, non_compute: r.temporal.non_compute_pct, idle: r.temporal.idle_pct}};
  }), ["compute", "non_compute", "idle"]));
  app.appendChild(table(["rank", "window", "length", "idle %", "compute %", "non-compute %", "comm-comp overlap %", "GPU events"],
    ranks.map(function (r) {
      return [r.rank, r.window.used, fmtS(r.window.length_s), r.temporal.idle_pct.toFixed(2), r.temporal.compute_pct.toFixed(2),
              r.temporal.non_compute_pct.toFixed(2), r.comm_comp_overlap.pct.toFixed(2), r.gpu_events];
    }), []));
  app.appendChild(el("h2", {}, "Kernel-type breakdown (% of GPU busy time, HTA states)"));
  app.appendChild(stacked(ranks.map(function (r) {
    const v = {computation: 0, communication: 0, memory: 0};
    for (const s of r.kernel_types.states) {
      const parts = s.state.split("+");
      for (const p of parts) v[p] += s.pct / parts.length;
    }
    return {label: "rank " + r.rank, values: v};
  }), ["computation", "communication", "memory"]));
  app.appendChild(el("h2", {}, "Timeline summary"));
  for (const r of ranks) {
    app.appendChild(el("h3", {}, "rank " + r.rank + " - " + r.source));
    app.appendChild(legend(["computation", "communication", "memory"]));
    app.appendChild(timeline(r));
  }
  app.appendChild(el("h2", {}, "Top kernels"));
  for (const r of ranks) {
    app.appendChild(el("h3", {}, "rank " + r.rank + " (" + r.kernel_names + " names)"));
    app.appendChild(table(["name", "type", "library", "count", "total", "mean"],
      r.top_kernels.map(function (k) { return [k.name, k.type, k.library, k.count, fmtS(k.total_s), fmtS(k.mean_s)]; }), [0, 1, 2]));
    if (r.comm_libraries.length > 0)
      app.appendChild(table(["communication library", "kernels", "total", "busy (union)"],
        r.comm_libraries.map(function (l) { return [l.library, l.count, fmtS(l.total_s), fmtS(l.union_s)]; }), [0]));
  }
  app.appendChild(el("h2", {}, "Streams: queue length, launch delay, idle time"));
  for (const r of ranks) {
    app.appendChild(el("h3", {}, "rank " + r.rank));
    app.appendChild(table(["device", "stream", "events", "busy", "queue max", "queue mean", "launch delay mean", "p50", "p95", "max", "idle host wait", "idle kernel wait", "idle other"],
      r.streams.map(function (s) {
        return [s.device, s.stream, s.gpu_events, fmtS(s.busy_s), s.queue_length_max, s.queue_length_mean.toFixed(2),
                fmtS(s.launch_delay.mean_s), fmtS(s.launch_delay.p50_s), fmtS(s.launch_delay.p95_s), fmtS(s.launch_delay.max_s),
                fmtS(s.idle.host_wait_s), fmtS(s.idle.kernel_wait_s), fmtS(s.idle.other_s)];
      }), []));
  }
  app.appendChild(el("h2", {}, "Critical path (replay), bound by"));
  if (d.critical_path_source && d.critical_path_source.unavailable !== undefined) {
    app.appendChild(el("p", {}, "not available: " + d.critical_path_source.unavailable));
  } else {
    const withPath = ranks.filter(function (r) { return r.critical_path; });
    app.appendChild(stacked(withPath.map(function (r) {
      const b = r.critical_path.bound_by;
      return {label: "rank " + r.rank, values: {compute: b.compute_pct, communication: b.communication_pct, host: b.host_pct, idle_gap: b.idle_gap_pct}};
    }), ["compute", "communication", "host", "idle_gap"]));
    for (const r of withPath) {
      const p = r.critical_path;
      app.appendChild(el("h3", {}, "rank " + r.rank + ": " + fmtS(p.length_s) + ", " + p.tasks + " tasks, " + p.energy_j_modelled.toFixed(3) + " J (modelled)"));
      app.appendChild(table(["step", "step length", "on path", "compute", "communication", "host", "idle gap", "energy J (modelled)"],
        p.steps.map(function (s) {
          const b = s.bound_by;
          return [s.step, fmtS(s.step_length_s), fmtS(s.on_path_s), fmtS(b.compute_s), fmtS(b.communication_s), fmtS(b.host_s), fmtS(b.idle_gap_s), s.energy_j_modelled.toFixed(4)];
        }), []));
      app.appendChild(table(["longest on the path", "rank", "kind", "time on path"],
        p.longest_tasks.map(function (t) { return [t.name, t.rank, t.kind, fmtS(t.on_path_s)]; }), [0, 2]));
    }
  }
  document.title = "powertrain analyze: ok";
})();
</script>
</body></html>
)HTML";

}  // namespace

std::string html_report(const nlohmann::json& summary) {
  // '<' is escaped inside the embedded JSON, so no string in it can close the script element.
  std::string data = summary.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string escaped;
  escaped.reserve(data.size());
  for (char c : data) {
    if (c == '<') {
      escaped += "\\u003c";
    } else {
      escaped += c;
    }
  }
  std::string html(kPageHead);
  html += escaped;
  html += kPageTail;
  return html;
}

std::string diff_summary_json(const TraceDiff& diff, const std::string& a, const std::string& b,
                              int top_n) {
  nlohmann::json doc = diff_json(diff, top_n);
  doc["a"] = a;
  doc["b"] = b;
  return doc.dump(2) + "\n";
}

std::string diff_csv(const TraceDiff& diff) {
  std::string csv =
      "kind,name,status,count_a,count_b,total_a_s,total_b_s,mean_a_s,mean_b_s,delta_s\n";
  for (const auto& r : diff.rows)
    csv += fmt::format("{},{},{},{},{},{:.9f},{:.9f},{:.9f},{:.9f},{:.9f}\n", r.kind,
                       csv_field(r.name), analyze::to_string(r.status), r.count_a, r.count_b,
                       r.total_a_ns * 1e-9, r.total_b_ns * 1e-9, r.mean_a_ns() * 1e-9,
                       r.mean_b_ns() * 1e-9, r.delta_ns() * 1e-9);
  return csv;
}

std::string diff_console(const TraceDiff& diff, int top_n, const std::string& directory) {
  std::string out = fmt::format(
      "powertrain diff: A {} rank(s), B {} rank(s); {} names, {} added in B, {} removed "
      "(measured)\n",
      diff.ranks_a, diff.ranks_b, diff.rows.size(), diff.added, diff.removed);
  out += fmt::format("  GPU time A {:.3f} ms, B {:.3f} ms; op time A {:.3f} ms, B {:.3f} ms\n",
                     diff.gpu_total_a_ns * 1e-6, diff.gpu_total_b_ns * 1e-6,
                     diff.op_total_a_ns * 1e-6, diff.op_total_b_ns * 1e-6);
  out += fmt::format("  {:<4} {:<8} {:<56} {:>8} {:>8} {:>11} {:>11} {:>11}\n", "kind", "status",
                     "name", "count A", "count B", "total A ms", "total B ms", "delta ms");
  for (std::size_t i = 0; i < diff.rows.size() && static_cast<int>(i) < top_n; ++i) {
    const auto& r = diff.rows[i];
    std::string name = r.name.size() > 56 ? r.name.substr(0, 53) + "..." : r.name;
    out += fmt::format("  {:<4} {:<8} {:<56} {:>8} {:>8} {:>11.3f} {:>11.3f} {:>+11.3f}\n", r.kind,
                       analyze::to_string(r.status), name, r.count_a, r.count_b,
                       r.total_a_ns * 1e-6, r.total_b_ns * 1e-6, r.delta_ns() * 1e-6);
  }
  out += fmt::format("  files         {}/: summary.json diff.csv\n", directory);
  return out;
}

}  // namespace powertrain::report
