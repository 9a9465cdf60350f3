// Shared JSON pieces.
#include "report/json.h"

namespace powertrain::report {

nlohmann::json breakdown_json(const sim::Breakdown& b) {
  return {{"exposed_compute", b.exposed_compute},
          {"exposed_communication", b.exposed_communication},
          {"overlapped", b.overlapped},
          {"other", b.other}};
}

}  // namespace powertrain::report
