// libFuzzer target for the profile reader: CSV parsing + profile validation must never crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/csv.h"
#include "profile/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto table = powertrain::core::parse_csv(text, "fuzz.csv");
  if (!table) return 0;
  auto profile = powertrain::profile::parse_profile(*table);
  if (!profile) return 0;
  const int stages = profile->num_stages();
  if (stages > 0 && stages < 64) {
    (void)powertrain::profile::validate_profile_for_pipeline(*profile, stages, false);
  }
  return 0;
}
