// Sanitizer settings of powertrain_sanitized_tests, built in so that ctest's discovery run and
// every test run use them without an environment (ASAN_OPTIONS/UBSAN_OPTIONS still override).
//
// Leak detection is off: tests end child processes and servers on purpose. ASan's own
// fatal-signal handlers are off: memory errors are caught by the instrumentation, and the output
// tests raise SIGSEGV/SIGBUS/SIGFPE/SIGILL/SIGABRT at a child to check that powertrain's handler
// removes its staging directory.

extern "C" const char* __asan_default_options() {
  return "detect_leaks=0:abort_on_error=1:detect_stack_use_after_return=0:handle_segv=0:"
         "handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0";
}

extern "C" const char* __ubsan_default_options() { return "print_stacktrace=1:halt_on_error=1"; }
