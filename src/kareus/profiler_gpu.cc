// The GPU profiler: CUDA driver API and NVML, both loaded at run time (profiler_gpu.h).
#include "kareus/profiler_gpu.h"

#include <dlfcn.h>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <thread>
#include <utility>

namespace powertrain::kareus {

namespace {

// Generated once with `nvcc -ptx -arch=compute_75` from
//   kareus_fma(float* out, int iters): 4 independent FP32 FMA chains per thread, `iters` times;
//   kareus_copy(const float4* src, float4* dst, long long n, int passes): grid-stride copy;
// (loops kept rolled), then lowered to .version 7.0 / .target sm_70 so that CUDA 11+ drivers
// JIT it; checked with ptxas for sm_75 and sm_90. Comments stripped.
constexpr const char* kPtx = R"PTX(.version 7.0
.target sm_70
.address_size 64
.visible .entry kareus_fma(
	.param .u64 kareus_fma_param_0,
	.param .u32 kareus_fma_param_1
)
{
	.reg .pred 	%p<4>;
	.reg .f32 	%f<34>;
	.reg .b32 	%r<10>;
	.reg .b64 	%rd<5>;
	ld.param.u64 	%rd1, [kareus_fma_param_0];
	ld.param.u32 	%r5, [kareus_fma_param_1];
	mov.u32 	%r1, %tid.x;
	cvt.rn.f32.u32 	%f17, %r1;
	mul.f32 	%f32, %f17, 0f3A83126F;
	mov.u32 	%r2, %ctaid.x;
	cvt.rn.f32.u32 	%f18, %r2;
	mul.f32 	%f31, %f18, 0f3A83126F;
	setp.lt.s32 	%p1, %r5, 1;
	mov.f32 	%f33, 0f3E800000;
	mov.f32 	%f30, 0f3F000000;
	@%p1 bra 	$L__BB0_3;
	mov.f32 	%f30, 0f3F000000;
	mov.f32 	%f33, 0f3E800000;
	mov.u32 	%r9, 0;
$L__BB0_2:
	.pragma "nounroll";
	mov.f32 	%f21, 0f38D1B717;
	mov.f32 	%f22, 0f3F7FF972;
	fma.rn.f32 	%f32, %f32, %f22, %f21;
	fma.rn.f32 	%f31, %f31, %f22, %f21;
	fma.rn.f32 	%f30, %f30, %f22, %f21;
	fma.rn.f32 	%f33, %f33, %f22, %f21;
	add.s32 	%r9, %r9, 1;
	setp.lt.s32 	%p2, %r9, %r5;
	@%p2 bra 	$L__BB0_2;
$L__BB0_3:
	add.f32 	%f23, %f31, %f32;
	add.f32 	%f24, %f30, %f23;
	add.f32 	%f25, %f33, %f24;
	setp.neu.f32 	%p3, %f25, 0fBF800000;
	@%p3 bra 	$L__BB0_5;
	mov.u32 	%r7, %ntid.x;
	mad.lo.s32 	%r8, %r2, %r7, %r1;
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.u32 	%rd3, %r8, 4;
	add.s64 	%rd4, %rd2, %rd3;
	st.global.f32 	[%rd4], %f32;
$L__BB0_5:
	ret;
}
.visible .entry kareus_copy(
	.param .u64 kareus_copy_param_0,
	.param .u64 kareus_copy_param_1,
	.param .u64 kareus_copy_param_2,
	.param .u32 kareus_copy_param_3
)
{
	.reg .pred 	%p<5>;
	.reg .b32 	%r<18>;
	.reg .b64 	%rd<25>;
	ld.param.u64 	%rd13, [kareus_copy_param_0];
	ld.param.u64 	%rd14, [kareus_copy_param_1];
	ld.param.u64 	%rd15, [kareus_copy_param_2];
	ld.param.u32 	%r3, [kareus_copy_param_3];
	mov.u32 	%r4, %nctaid.x;
	mov.u32 	%r5, %ntid.x;
	cvt.u64.u32 	%rd1, %r5;
	mul.wide.u32 	%rd2, %r4, %r5;
	setp.lt.s32 	%p1, %r3, 1;
	@%p1 bra 	$L__BB1_6;
	mov.u32 	%r7, %ctaid.x;
	cvt.u64.u32 	%rd16, %r7;
	mul.lo.s64 	%rd17, %rd16, %rd1;
	mov.u32 	%r8, %tid.x;
	cvt.u64.u32 	%rd18, %r8;
	add.s64 	%rd3, %rd17, %rd18;
	cvta.to.global.u64 	%rd19, %rd13;
	shl.b64 	%rd20, %rd3, 4;
	add.s64 	%rd4, %rd19, %rd20;
	shl.b64 	%rd5, %rd2, 4;
	cvta.to.global.u64 	%rd21, %rd14;
	add.s64 	%rd6, %rd21, %rd20;
	mov.u32 	%r17, 0;
$L__BB1_2:
	.pragma "nounroll";
	setp.ge.s64 	%p2, %rd3, %rd15;
	@%p2 bra 	$L__BB1_5;
	mov.u64 	%rd22, %rd6;
	mov.u64 	%rd23, %rd4;
	mov.u64 	%rd24, %rd3;
$L__BB1_4:
	.pragma "nounroll";
	ld.global.v4.u32 	{%r9, %r10, %r11, %r12}, [%rd23];
	st.global.v4.u32 	[%rd22], {%r9, %r10, %r11, %r12};
	add.s64 	%rd23, %rd23, %rd5;
	add.s64 	%rd22, %rd22, %rd5;
	add.s64 	%rd24, %rd24, %rd2;
	setp.lt.s64 	%p3, %rd24, %rd15;
	@%p3 bra 	$L__BB1_4;
$L__BB1_5:
	add.s32 	%r17, %r17, 1;
	setp.lt.s32 	%p4, %r17, %r3;
	@%p4 bra 	$L__BB1_2;
$L__BB1_6:
	ret;
}
)PTX";

// CUDA driver API types and constants (cuda.h), declared here: no CUDA headers at build time.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
constexpr CUresult kCudaSuccess = 0;
constexpr int kAttrMultiprocessorCount = 16;
constexpr int kAttrMaxSharedPerSm = 81;
constexpr int kAttrMaxSharedPerBlockOptin = 97;
constexpr int kFuncAttrMaxDynamicShared = 8;
constexpr unsigned kStreamNonBlocking = 1;
constexpr unsigned kEventDisableTiming = 2;

}  // namespace

struct GpuProfiler::Impl {
  struct Api {
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDeviceGet)(CUdevice*, int);
    CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
    CUresult (*cuDeviceGetName)(char*, int, CUdevice);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
    CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuCtxSynchronize)();
    CUresult (*cuModuleLoadData)(CUmodule*, const void*);
    CUresult (*cuModuleUnload)(CUmodule);
    CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
    CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
    CUresult (*cuMemAlloc_v2)(CUdeviceptr*, std::size_t);
    CUresult (*cuMemFree_v2)(CUdeviceptr);
    CUresult (*cuStreamCreate)(CUstream*, unsigned);
    CUresult (*cuStreamDestroy_v2)(CUstream);
    CUresult (*cuEventCreate)(CUevent*, unsigned);
    CUresult (*cuEventDestroy_v2)(CUevent);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void**, void**);
    CUresult (*cuGetErrorName)(CUresult, const char**);
  };

  // A device buffer pair that grows to the largest request (capped).
  struct Buffers {
    CUdeviceptr src = 0, dst = 0;
    std::size_t bytes = 0;
  };

  GpuProfilerOptions options;
  void* dl = nullptr;
  std::string library;
  Api api{};
  std::shared_ptr<nvml::Nvml> nvml;
  CUdevice device = 0;
  CUcontext context = nullptr;
  bool context_retained = false;
  CUmodule module = nullptr;
  CUfunction fma = nullptr, copy = nullptr, comm = nullptr;
  CUstream compute_stream = nullptr, comm_stream = nullptr;
  CUevent launch_event = nullptr;
  Buffers compute_buffers, comm_buffers;
  CUdeviceptr sink = 0;  // kareus_fma's (never written) output
  int sm_count = 0;
  int comm_shared_bytes = 0;  // dynamic shared memory that keeps the comm kernel at 1 block/SM
  std::string device_name;

  ~Impl() {
    if (api.cuCtxSetCurrent != nullptr && context != nullptr) {
      api.cuCtxSetCurrent(context);
      api.cuCtxSynchronize();
      for (CUdeviceptr p :
           {compute_buffers.src, compute_buffers.dst, comm_buffers.src, comm_buffers.dst, sink})
        if (p != 0) api.cuMemFree_v2(p);
      if (launch_event != nullptr) api.cuEventDestroy_v2(launch_event);
      if (compute_stream != nullptr) api.cuStreamDestroy_v2(compute_stream);
      if (comm_stream != nullptr) api.cuStreamDestroy_v2(comm_stream);
      if (module != nullptr) api.cuModuleUnload(module);
    }
    if (context_retained) api.cuDevicePrimaryCtxRelease_v2(device);
    if (dl != nullptr) ::dlclose(dl);
  }

  std::string error(const char* call, CUresult status) const {
    const char* name = nullptr;
    if (api.cuGetErrorName == nullptr || api.cuGetErrorName(status, &name) != kCudaSuccess ||
        name == nullptr)
      name = "unknown CUDA error";
    return fmt::format("GPU profiler: {}: {} (code {})", call, name, status);
  }
  core::Status check(const char* call, CUresult status) const {
    if (status == kCudaSuccess) return core::Ok{};
    return core::Error{error(call, status)};
  }

  core::Status load_symbols() {
    std::string missing;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(dl, name));
      if (fn == nullptr && missing.empty()) missing = name;
    };
#define POWERTRAIN_CU_SYMBOL(name) get(api.name, #name)
    POWERTRAIN_CU_SYMBOL(cuInit);
    POWERTRAIN_CU_SYMBOL(cuDeviceGet);
    POWERTRAIN_CU_SYMBOL(cuDeviceGetAttribute);
    POWERTRAIN_CU_SYMBOL(cuDeviceGetName);
    POWERTRAIN_CU_SYMBOL(cuDevicePrimaryCtxRetain);
    POWERTRAIN_CU_SYMBOL(cuDevicePrimaryCtxRelease_v2);
    POWERTRAIN_CU_SYMBOL(cuCtxSetCurrent);
    POWERTRAIN_CU_SYMBOL(cuCtxSynchronize);
    POWERTRAIN_CU_SYMBOL(cuModuleLoadData);
    POWERTRAIN_CU_SYMBOL(cuModuleUnload);
    POWERTRAIN_CU_SYMBOL(cuModuleGetFunction);
    POWERTRAIN_CU_SYMBOL(cuFuncSetAttribute);
    POWERTRAIN_CU_SYMBOL(cuMemAlloc_v2);
    POWERTRAIN_CU_SYMBOL(cuMemFree_v2);
    POWERTRAIN_CU_SYMBOL(cuStreamCreate);
    POWERTRAIN_CU_SYMBOL(cuStreamDestroy_v2);
    POWERTRAIN_CU_SYMBOL(cuEventCreate);
    POWERTRAIN_CU_SYMBOL(cuEventDestroy_v2);
    POWERTRAIN_CU_SYMBOL(cuEventRecord);
    POWERTRAIN_CU_SYMBOL(cuStreamWaitEvent);
    POWERTRAIN_CU_SYMBOL(cuLaunchKernel);
    POWERTRAIN_CU_SYMBOL(cuGetErrorName);
#undef POWERTRAIN_CU_SYMBOL
    if (!missing.empty())
      return core::Error{
          fmt::format("GPU profiler: CUDA driver {}: symbol {} missing (driver too "
                      "old?)",
                      library, missing)};
    return core::Ok{};
  }

  core::Status init() {
    if (auto s = check("cuInit", api.cuInit(0)); !s) return s;
    if (auto s = check("cuDeviceGet", api.cuDeviceGet(&device, options.device)); !s) return s;
    if (auto s = check("cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)",
                       api.cuDeviceGetAttribute(&sm_count, kAttrMultiprocessorCount, device));
        !s)
      return s;
    char name[256] = {};
    if (auto s = check("cuDeviceGetName", api.cuDeviceGetName(name, sizeof name - 1, device)); !s)
      return s;
    device_name = name;
    int per_sm = 0, optin = 0;
    if (auto s = check("cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)",
                       api.cuDeviceGetAttribute(&per_sm, kAttrMaxSharedPerSm, device));
        !s)
      return s;
    if (auto s = check("cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)",
                       api.cuDeviceGetAttribute(&optin, kAttrMaxSharedPerBlockOptin, device));
        !s)
      return s;
    if (auto s = check("cuDevicePrimaryCtxRetain", api.cuDevicePrimaryCtxRetain(&context, device));
        !s)
      return s;
    context_retained = true;
    if (auto s = check("cuCtxSetCurrent", api.cuCtxSetCurrent(context)); !s) return s;
    if (auto s = check("cuModuleLoadData", api.cuModuleLoadData(&module, kPtx)); !s) return s;
    if (auto s = check("cuModuleGetFunction(kareus_fma)",
                       api.cuModuleGetFunction(&fma, module, "kareus_fma"));
        !s)
      return s;
    if (auto s = check("cuModuleGetFunction(kareus_copy)",
                       api.cuModuleGetFunction(&copy, module, "kareus_copy"));
        !s)
      return s;
    // The comm kernel is kareus_copy with more than half an SM's shared memory per block, so two
    // of its blocks never share an SM: grid = k blocks occupies exactly k SMs.
    comm = copy;
    comm_shared_bytes = std::min(optin, per_sm / 2 + 1024);
    if (comm_shared_bytes > 48 * 1024) {
      if (auto s =
              check("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                    api.cuFuncSetAttribute(comm, kFuncAttrMaxDynamicShared, comm_shared_bytes));
          !s)
        return s;
    }
    if (auto s = check("cuStreamCreate", api.cuStreamCreate(&compute_stream, kStreamNonBlocking));
        !s)
      return s;
    if (auto s = check("cuStreamCreate", api.cuStreamCreate(&comm_stream, kStreamNonBlocking)); !s)
      return s;
    if (auto s = check("cuEventCreate", api.cuEventCreate(&launch_event, kEventDisableTiming)); !s)
      return s;
    return check("cuMemAlloc_v2", api.cuMemAlloc_v2(&sink, 16));
  }

  core::Status ensure(Buffers& b, std::size_t bytes) {
    if (b.bytes >= bytes) return core::Ok{};
    for (CUdeviceptr* p : {&b.src, &b.dst}) {
      if (*p != 0) {
        if (auto s = check("cuMemFree_v2", api.cuMemFree_v2(*p)); !s) return s;
        *p = 0;
      }
      if (auto s = check("cuMemAlloc_v2", api.cuMemAlloc_v2(p, bytes)); !s) return s;
    }
    b.bytes = bytes;
    return core::Ok{};
  }

  // A copy of `bytes` (each byte read once and written once) with the given grid, looping over a
  // buffer of at most max_buffer_bytes.
  core::Status launch_copy(CUfunction fn, Buffers& buffers, double bytes, unsigned grid,
                           unsigned block, unsigned shared, CUstream stream) {
    const double cap = double(std::max<long long>(16, options.max_buffer_bytes));
    const double chunk = std::min(cap, std::max(16.0, bytes));
    if (auto s = ensure(buffers, static_cast<std::size_t>(chunk)); !s) return s;
    long long n = static_cast<long long>(chunk / 16.0);
    int passes = static_cast<int>(std::clamp(std::ceil(bytes / chunk), 1.0, double(INT_MAX)));
    void* args[] = {&buffers.src, &buffers.dst, &n, &passes};
    return check("cuLaunchKernel",
                 api.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, shared, stream, args, nullptr));
  }

  core::Status launch_compute(const Kernel& kernel) {
    const device::Work& w = kernel.work;
    const bool tensor =
        w.kind == device::WorkKind::kMatmul || w.kind == device::WorkKind::kAttention;
    const unsigned grid = static_cast<unsigned>(std::max(1, sm_count) * 8), block = 256;
    if (!tensor)
      return launch_copy(copy, compute_buffers, w.memory_bytes / 2.0, grid, block, 0,
                         compute_stream);
    // FP32 FMAs stand in for tensor-core FLOPs: scaled by the catalog's FP32 / tensor peak so the
    // synthetic kernel takes about as long as the GEMM would at the same clock.
    const double tensor_peak = options.gpu.peak_tflops(w.precision);
    const double scale = tensor_peak > 0.0 && options.gpu.peak_tflops_fp32 > 0.0
                             ? options.gpu.peak_tflops_fp32 / tensor_peak
                             : 1.0;
    const double per_iteration = 8.0 * double(grid) * double(block);  // 4 FMAs × 2 FLOPs
    int iters = static_cast<int>(std::clamp(std::round(w.flops * scale / per_iteration), 1.0, 1e9));
    void* args[] = {&sink, &iters};
    return check("cuLaunchKernel", api.cuLaunchKernel(fma, grid, 1, 1, block, 1, 1, 0,
                                                      compute_stream, args, nullptr));
  }

  core::Status launch_comm(const Kernel& kernel, int sms) {
    return launch_copy(comm, comm_buffers, kernel.work.link_bytes, static_cast<unsigned>(sms), 1024,
                       static_cast<unsigned>(comm_shared_bytes), comm_stream);
  }

  // One execution: compute kernels in order on one stream; the comm kernel on the other, held by
  // an event until compute kernel launch_slot − 1 has finished, so it starts with kernel
  // launch_slot. Synchronized at the end.
  core::Status run(const PartitionType& p, const Schedule& s) {
    const std::size_t n = p.compute.size();
    const std::size_t slot = static_cast<std::size_t>(std::max(0, s.launch_slot));
    bool comm_launched = false;
    for (std::size_t i = 0; i <= n; ++i) {
      if (!comm_launched && (i == slot || i == n)) {
        if (auto st = check("cuEventRecord", api.cuEventRecord(launch_event, compute_stream)); !st)
          return st;
        if (auto st =
                check("cuStreamWaitEvent", api.cuStreamWaitEvent(comm_stream, launch_event, 0));
            !st)
          return st;
        if (auto st = launch_comm(p.comm, s.comm_sms); !st) return st;
        comm_launched = true;
      }
      if (i < n)
        if (auto st = launch_compute(p.compute[i]); !st) return st;
    }
    return check("cuCtxSynchronize", api.cuCtxSynchronize());
  }
};

const char* gpu_profiler_ptx() { return kPtx; }

GpuProfiler::GpuProfiler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuProfiler::~GpuProfiler() = default;

core::Result<std::unique_ptr<GpuProfiler>> GpuProfiler::open(GpuProfilerOptions options) {
  if (!options.now_s)
    options.now_s = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
  if (!options.sleep_s)
    options.sleep_s = [](double s) {
      if (s > 0.0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
    };
  if (!(options.window_s > 0.0) || !(options.cooldown_s >= 0.0) || options.warmup_runs < 0)
    return core::Error{"GPU profiler: window must be > 0 s, cooldown ≥ 0 s, warm-up runs ≥ 0"};
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->library = options.cuda_library;
  if (impl->library.empty()) {
    const char* env = std::getenv("POWERTRAIN_CUDA_LIBRARY");
    impl->library = env != nullptr && *env != '\0' ? env : kDefaultCudaLibrary;
  }
  impl->dl = ::dlopen(impl->library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (impl->dl == nullptr) {
    const char* why = ::dlerror();
    return core::Error{fmt::format("GPU profiler: CUDA driver not found ({}): {}", impl->library,
                                   why != nullptr ? why : "dlopen failed")};
  }
  if (auto s = impl->load_symbols(); !s) return s.error();
  auto nvml = nvml::Nvml::load(options.nvml_library);
  if (!nvml) return core::Error{"GPU profiler: " + nvml.error().message};
  impl->nvml = std::move(*nvml);
  if (auto s = impl->init(); !s) return s.error();

  std::unique_ptr<GpuProfiler> profiler(new GpuProfiler(std::move(impl)));
  const GpuProfilerOptions& o = profiler->impl_->options;
  if (o.static_power == StaticPowerSource::kCatalog) {
    profiler->static_power_w_ = o.gpu.dvfs.static_power_w;
    profiler->static_source_ = fmt::format("catalog {:.1f} W ({})", profiler->static_power_w_,
                                           o.gpu.name.empty() ? "no GPU given" : o.gpu.name);
  } else {
    // Idle board power over a counter window, after a cooldown (the GPU at its idle clock).
    o.sleep_s(o.cooldown_s);
    const nvml::Nvml& n = *profiler->impl_->nvml;
    const double t0 = o.now_s();
    auto e0 = n.total_energy_mj(o.device);
    if (!e0) return core::Error{"GPU profiler: " + e0.error().message};
    o.sleep_s(o.idle_sample_s);
    auto e1 = n.total_energy_mj(o.device);
    if (!e1) return core::Error{"GPU profiler: " + e1.error().message};
    const double dt = o.now_s() - t0;
    if (!(dt > 0.0) || *e1 < *e0)
      return core::Error{"GPU profiler: idle power: the energy counter did not advance"};
    profiler->static_power_w_ = double(*e1 - *e0) / 1000.0 / dt;
    profiler->static_source_ = fmt::format("measured idle {:.1f} W (NVML energy over {:.2f} s)",
                                           profiler->static_power_w_, dt);
  }
  return profiler;
}

std::string GpuProfiler::name() const {
  return fmt::format("gpu ({}, {} SMs, {:g} s window, {:g} s cooldown, P_static {})",
                     impl_->device_name, impl_->sm_count, impl_->options.window_s,
                     impl_->options.cooldown_s, static_source_);
}

core::Result<Cost> GpuProfiler::measure(const PartitionType& partition, const Schedule& schedule) {
  Impl& m = *impl_;
  const GpuProfilerOptions& o = m.options;
  if (schedule.comm_sms <= 0 || schedule.comm_sms >= m.sm_count)
    return core::Error{
        fmt::format("GPU profiler: comm SMs {} outside 1..{}", schedule.comm_sms, m.sm_count - 1)};
  if (schedule.launch_slot < 0 ||
      (!partition.compute.empty() &&
       schedule.launch_slot >= static_cast<int>(partition.compute.size())))
    return core::Error{
        fmt::format("GPU profiler: launch slot {} outside the partition's {} "
                    "compute kernels",
                    schedule.launch_slot, partition.compute.size())};
  if (auto s = m.check("cuCtxSetCurrent", m.api.cuCtxSetCurrent(m.context)); !s) return s.error();
  if (auto s = m.nvml->set_locked_clocks_mhz(o.device, schedule.clock_mhz, schedule.clock_mhz); !s)
    return core::Error{"GPU profiler: " + s.error().message};
  GpuReading reading;
  // Measures with the clock locked; the clock is reset whatever happens.
  auto measured = [&]() -> core::Status {
    for (int i = 0; i < o.warmup_runs; ++i)
      if (auto s = m.run(partition, schedule); !s) return s;
    auto e0 = m.nvml->total_energy_mj(o.device);
    if (!e0) return core::Error{"GPU profiler: " + e0.error().message};
    const double t0 = o.now_s();
    double elapsed = 0.0;
    do {
      if (auto s = m.run(partition, schedule); !s) return s;
      ++reading.runs;
      elapsed = o.now_s() - t0;
    } while (elapsed < o.window_s);
    auto e1 = m.nvml->total_energy_mj(o.device);
    if (!e1) return core::Error{"GPU profiler: " + e1.error().message};
    reading.window_s = elapsed;
    reading.energy_start_mj = *e0;
    reading.energy_end_mj = *e1;
    if (*e1 < *e0) return core::Error{"GPU profiler: the NVML energy counter went backwards"};
    return core::Ok{};
  }();
  auto reset = m.nvml->reset_locked_clocks(o.device);
  o.sleep_s(o.cooldown_s);  // §5.3: the next candidate starts from a cooled GPU
  reading.cooldown_s = o.cooldown_s;
  last_ = reading;
  if (!measured) return measured.error();
  if (!reset) return core::Error{"GPU profiler: " + reset.error().message};
  Cost cost;
  cost.time_s = reading.window_s / reading.runs;
  cost.energy_j = double(reading.energy_end_mj - reading.energy_start_mj) / 1000.0 / reading.runs;
  cost.static_j = static_power_w_ * cost.time_s;
  cost.dynamic_j = cost.energy_j - cost.static_j;
  cost.effective_clock_mhz = schedule.clock_mhz;  // requested; NVML's clock is not read back
  return cost;
}

}  // namespace powertrain::kareus

namespace powertrain::kareus {

core::Result<std::unique_ptr<Profiler>> make_profiler(const std::string& kind,
                                                      const device::GpuSpec& gpu,
                                                      const ConcurrencyParams& params) {
  if (kind == "model")
    return std::unique_ptr<Profiler>(std::make_unique<ModelProfiler>(gpu, params));
  if (kind != "gpu")
    return core::Error{fmt::format("profiler: expected model or gpu, got '{}'", kind)};
  GpuProfilerOptions options;
  options.gpu = gpu;
  auto opened = GpuProfiler::open(std::move(options));
  if (!opened) return opened.error();
  return std::unique_ptr<Profiler>(std::move(*opened));
}

}  // namespace powertrain::kareus
