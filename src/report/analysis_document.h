// The documents of `powertrain analyze` (summary.json, report.html) and the JSON of
// `powertrain diff`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyze/analysis_run.h"
#include "analyze/analyze.h"
#include "analyze/diff.h"

namespace powertrain::report {

/// The summary document: per rank, every quantity of analyze_rank (times in seconds, shares in
/// percent) with the top `top_n` kernels, and the per-step critical path when given.
nlohmann::json analysis_json(const std::vector<analyze::RankAnalysis>& ranks,
                             const analyze::PathContext& paths, int top_n);

/// A single self-contained HTML page (inline CSS, SVG built by inline JS, no network) drawing the
/// summary: timeline per rank, breakdown bars, top kernels, streams, critical path. The script
/// sets document.title to "powertrain analyze: ok" once everything rendered.
std::string html_report(const nlohmann::json& summary);

nlohmann::json diff_json(const analyze::TraceDiff& diff, int top_n);

/// summary.json of `powertrain diff`: diff_json plus the two inputs as given.
std::string diff_summary_json(const analyze::TraceDiff& diff, const std::string& a,
                              const std::string& b, int top_n);

/// diff.csv: one row per (kind, name), counts and times in seconds (measured).
std::string diff_csv(const analyze::TraceDiff& diff);

/// The console report of `powertrain diff`: totals and the `top_n` largest changes (ms).
std::string diff_console(const analyze::TraceDiff& diff, int top_n, const std::string& directory);

}  // namespace powertrain::report
