// driver/libcuda.so.1: an empty library whose only job is its DT_NEEDED on libpowertrain_cuda.so
// (see src/interposer/CMakeLists.txt). The driver API itself is in cuda_driver.cc.
extern "C" __attribute__((visibility("default"))) int powertrain_emu_libcuda_shim() { return 1; }
