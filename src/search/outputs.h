// Files and console text of a search: trials.csv, frontier.csv/svg, summary.json, ranked table.
#pragma once

#include <string>

#include "search/search.h"

namespace powertrain::search {

/// One row per decided configuration, in proposal order.
std::string trials_csv(const SearchSpec& spec, const SearchResult& result);
/// The cross-configuration frontier, fastest first, each point labelled with its configuration
/// and its clock plan (the configuration's frontier point index, 0 = its T*).
std::string frontier_csv(const SearchSpec& spec, const SearchResult& result);
std::string frontier_svg(const SearchSpec& spec, const SearchResult& result);
std::string summary_json(const SearchSpec& spec, const SearchResult& result, int threads);
/// The best `rows` planned configurations by the objective, one line each.
std::string ranked_table(const SearchSpec& spec, const SearchResult& result, int rows);

}  // namespace powertrain::search
