// Which CUDA runtime ABI this library build presents: compiled once per library target with
// POWERTRAIN_CUDART_ABI=12 or 13 (see CMakeLists.txt); everything else is shared.
#include "interposer/cudart_internal.h"

#ifndef POWERTRAIN_CUDART_ABI
#error "POWERTRAIN_CUDART_ABI must be defined (12 or 13)"
#endif

namespace powertrain::emu::detail {

int cudart_abi() { return POWERTRAIN_CUDART_ABI; }

}  // namespace powertrain::emu::detail
