#include "emulate/two_pass.h"

#include <fmt/core.h>

#include <fstream>

namespace powertrain::emulate {

core::Status write_predicted_events(const EmulationResult& result,
                                    const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return core::Error{fmt::format("{}: cannot create: {}", dir.string(), ec.message())};
  for (const RankReport& rank : result.ranks) {
    const std::filesystem::path path = dir / fmt::format("rank-{}.tsv", rank.rank);
    std::ofstream out(path);
    out << "# powertrain emulate: predicted cudaEventRecord completions (modelled): event\t"
           "occurrence\tdevice_ns\thost_ns\n";
    for (const PredictedEvent& e : rank.predicted_events) {
      out << e.event << '\t' << e.occurrence << '\t' << e.device_ns << '\t' << e.host_ns << '\n';
    }
    out.flush();
    if (!out) return core::Error{fmt::format("{}: cannot write", path.string())};
    const std::filesystem::path syncs = dir / fmt::format("syncs-rank-{}.tsv", rank.rank);
    std::ofstream sync_out(syncs);
    sync_out << "# powertrain emulate: modelled returns of stream/device synchronizations "
                "(stream -1: cudaDeviceSynchronize, -2: blocking copy, -3: cudaEventSynchronize): "
                "device\tstream\toccurrence\treturn_ns\n";
    for (const PredictedSync& s : rank.predicted_syncs) {
      sync_out << s.device << '\t' << s.stream << '\t' << s.occurrence << '\t' << s.return_ns
               << '\n';
    }
    sync_out.flush();
    if (!sync_out) return core::Error{fmt::format("{}: cannot write", syncs.string())};
  }
  return core::Ok{};
}

}  // namespace powertrain::emulate
