// CLI tests that run the nvcc-built emulation test programs under `powertrain emulate`: the
// programs' directory and the interposer, and a skip (with the reason) where emulation was not
// built or a program a test needs is missing.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>

#include "cli_runner.h"

namespace powertrain::testing_cli {

class EmulationCliTest : public CliTest {
 protected:
  // A program every test of the fixture runs; empty: none in particular.
  virtual const char* required_program() const { return ""; }

  void SetUp() override {
    CliTest::SetUp();
#ifndef POWERTRAIN_HAVE_EMULATION
    GTEST_SKIP() << "GPU emulation not built (no CUDA headers or nvcc at configure time)";
#else
    programs_ = POWERTRAIN_EMU_PROGRAM_DIR;
    interposer_ = POWERTRAIN_INTERPOSER_PATH;
    const std::string program = required_program();
    if (!program.empty() && !std::filesystem::exists(programs_ / program))
      GTEST_SKIP() << "emulation test program " << program << " not built in " << programs_;
#endif
  }

  std::filesystem::path programs_;
  std::filesystem::path interposer_;
};

}  // namespace powertrain::testing_cli
