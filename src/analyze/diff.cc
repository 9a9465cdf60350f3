#include "analyze/diff.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <utility>

namespace powertrain::analyze {

std::string_view to_string(DiffStatus status) {
  switch (status) {
    case DiffStatus::kChanged:
      return "both";
    case DiffStatus::kAdded:
      return "added";
    case DiffStatus::kRemoved:
      return "removed";
  }
  return "?";
}

TraceDiff diff_traces(const std::vector<trace::RankTrace>& a,
                      const std::vector<trace::RankTrace>& b) {
  TraceDiff diff;
  diff.ranks_a = static_cast<std::int64_t>(a.size());
  diff.ranks_b = static_cast<std::int64_t>(b.size());
  std::map<std::pair<std::string, std::string>, DiffRow> rows;
  auto collect = [&](const std::vector<trace::RankTrace>& traces, bool side_b) {
    for (const trace::RankTrace& t : traces) {
      for (const trace::TraceEvent& e : t.events) {
        const bool gpu = trace::is_gpu_work(e.kind);
        if (!gpu && e.kind != trace::EventKind::kCpuOp) continue;
        const std::string kind = gpu ? "gpu" : "op";
        DiffRow& row = rows[{kind, t.name_of(e)}];
        if (row.name.empty()) {
          row.name = t.name_of(e);
          row.kind = kind;
        }
        (side_b ? row.count_b : row.count_a) += 1;
        (side_b ? row.total_b_ns : row.total_a_ns) += e.duration_ns;
        if (gpu) {
          (side_b ? diff.gpu_total_b_ns : diff.gpu_total_a_ns) += e.duration_ns;
        } else {
          (side_b ? diff.op_total_b_ns : diff.op_total_a_ns) += e.duration_ns;
        }
      }
    }
  };
  collect(a, false);
  collect(b, true);
  for (auto& [key, row] : rows) {
    if (row.count_a == 0) {
      row.status = DiffStatus::kAdded;
      ++diff.added;
    } else if (row.count_b == 0) {
      row.status = DiffStatus::kRemoved;
      ++diff.removed;
    }
    diff.rows.push_back(std::move(row));
  }
  // rows come from the map in (kind, name) order; a stable sort keeps it for equal deltas.
  std::stable_sort(diff.rows.begin(), diff.rows.end(), [](const DiffRow& x, const DiffRow& y) {
    return std::llabs(x.delta_ns()) > std::llabs(y.delta_ns());
  });
  return diff;
}

}  // namespace powertrain::analyze
