// Test-only generator of synthetic Kineto traces, one per real-world quirk ("shape") seen in
// traces from clusters we do not have: a small ground-truth model of a data-parallel training step
// (host thread issuing launches, FIFO streams, events, blocking copies, collectives joined across
// ranks) is executed, then written the way a given profiler version or site writes it. The model
// knows the true step time, so a replay can be checked against it. Header-only so that it is
// compiled into the test binary only (never into the product).
#pragma once

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace powertrain::test_support {

enum class Shape {
  kBaseline,                     // 2024 layout: relative ts, flows and args, records, metadata
  kEpochTimestamps,              // no baseTimeNanoseconds: integer epoch µs, gzip
  kTwoProcessesInOneFile,        // two host processes and two devices in one file
  kOneRankOfEight,               // distributedInfo world_size 8, only rank 3 present
  kTwoRanksDdp,                  // two files, collectives joined across ranks
  kCopiesWithoutLaunch,          // memcpy/memset whose correlation no runtime call carries
  kNoEventRecord,                // cudaStreamWaitEvent present, cudaEventRecord never written
  kContradictingWaits,           // waits on a stream the thread launches to only later
  kWindowCut,                    // work launched before the window running at its start; cut at end
  kCudaGraphs,                   // cudaGraphLaunch: one call, many kernels with its correlation
  kNcclWithoutMetadata,          // bare NCCL kernels, no record_param_comms args
  kRocm,                         // hipLaunchKernel, hipExtModuleLaunchKernel, hip* calls
  kStringAndNegativeIds,         // string host pid, negative tid, pid -1 overhead events
  kFlowsOnly,                    // correlation only in ac2g flows
  kNoFlows,                      // correlation only in args
  kInvalidRuntimeNames,          // some launches recorded as "INVALID"
  kOldPytorchV100,               // epoch ts, no records, no flows, launchless copies, INVALID, cut
  kSyncRecordsWithoutCalls,      // host syncs only as cuda_sync records, their calls not written
  kSyncCallsWithoutCorrelation,  // sync calls without args.correlation; records carry it
  kGpuCorrelationsRenumbered,    // no GPU record's correlation matches its launch call
  kPytorch18Names,               // Kernel/Runtime/Memcpy/Memset, cuLaunchKernel, gpu annotations
  kDisplayTimeUnitNs,            // "displayTimeUnit": "ns" with fractional-µs timestamps
  kTwoDevicesOneProcess,         // one process launching kernels on two devices
  kDeepPythonStack,              // a python_function chain thousands deep around the steps
  kFullNcclMetadata,             // NCCL args on kernels, graph node ids, pg_config, nccl_version
  kNestedProfilerSteps,          // ProfilerStep#N again inside a compiled region inside itself
  kOverlappingProfilerSchedules,  // a second profiler's ProfilerStep series, shifted, renumbered
  kMissingStepAnnotation,         // one step's ProfilerStep span not written
  kStepsFromArbitraryStart,       // ProfilerStep#1037, #1038, ...
  kLastStepCut,                   // the profiler stopped 40 % into one more step
  kSyncCallsWithoutRecords,       // stream/event/device syncs, no cuda_sync records (older PyTorch)
  kSyncMemcpyMidStep,             // a synchronous cudaMemcpy DtoH between forward and backward
  kRocmModuleLaunches,            // hipModuleLaunchKernel, hipExtLaunchKernel, hipMemcpyWithStream
  kHugeStreamIds,                 // stream ids above 2^31, the same ids on two devices
  kPytorch24,                     // cudaLaunchKernelExC, Triton via cuLaunchKernel(Ex), M/C/i rows
  kShortLastStep,                 // the epoch's last, smaller batch: a whole step at 1/5 the work
  kOneStep,                       // the profiler's schedule recorded a single step, 2 ranks
  kNcclDevKernels,                // NCCL ≥ 2.19 names (ncclDevKernel_*), no metadata, 2 ranks
  kLaunchVariants,                // cooperative launch, 2D/peer copies, a graph over two streams
  kFsdpTwoNcclStreams,   // all-gather and all-reduce on two NCCL streams, no metadata, 2 ranks
  kCpuActivitiesOnly,    // profiled with activities=[CPU]: host ops and steps, no CUDA events
  kChromeDurationPairs,  // other exporters: "B"/"E" pairs instead of "X", "i"/"C"/"b"/"e" rows
  kNumberForms,          // ts/dur as strings and exponents, 0 µs events, kernels 2 ns into their
                         // predecessor
  kShortLastStepVaryingEnds,  // short last step; each step closes with a different op (no majority)
  kIntelXpu,  // PyTorch on Intel XPU: xpu_runtime ur* calls, kernels on queues (args.queue), 1 rank
  kGraphKernelsUncorrelated,  // kernels of a cudaGraphLaunch written with correlation 0, no flows
  kNcclInGraph,               // the all-reduce captured in a CUDA graph: no record_param_comms
  kP2pMissingPeer,            // pipeline stage: recv/send (ncclKernel_SendRecv), its peer absent
  kTensorAndDataParallel,     // 4 ranks, TP 2 x DP 2: two TP all-reduces per forward, DP groups
  kTensorAndDataParallelNoMetadata,  // the same without record_param_comms metadata
  kPipelineFourStages,            // 4 ranks, GPipe over 4 stages, 2 microbatches: send/recv kernels
  kPipelineFourStagesNoMetadata,  // the same without record_param_comms metadata
  kPipelineOneFOneB,  // Megatron 1F1B, 4 stages x 4 microbatches, batched send/recv kernels
  // Two pipelines side by side (PP 2 x DP 2, no metadata): pipelines {0,1} and {2,3}, gradient
  // all-reduces in the data-parallel groups {0,2} and {1,3}, which never include rank 1 and 0.
  kPipelineDataParallelNoMetadata,
  // Megatron 1F1B over 4 stages × 4 microbatches, two pipelines side by side (PP 4 x DP 2, 8
  // ranks, no metadata): batched SendRecv kernels, data-parallel groups {s, 4 + s}.
  kPipeline1f1bDataParallel,
  // Megatron's 3-D layout without metadata: TP 2 × PP 4 × DP 2 (16 ranks, tensor-parallel ranks
  // adjacent), a tensor-parallel all-reduce on its own stream after each forward and backward,
  // transfers between the stages' matching tensor-parallel ranks, gradient all-reduces across
  // the pipelines.
  kPipeline3dNoMetadata,
};

inline const char* shape_name(Shape s) {
  switch (s) {
    case Shape::kBaseline:
      return "baseline";
    case Shape::kEpochTimestamps:
      return "epoch_timestamps";
    case Shape::kTwoProcessesInOneFile:
      return "two_processes_in_one_file";
    case Shape::kOneRankOfEight:
      return "one_rank_of_eight";
    case Shape::kTwoRanksDdp:
      return "two_ranks_ddp";
    case Shape::kCopiesWithoutLaunch:
      return "copies_without_launch";
    case Shape::kNoEventRecord:
      return "no_event_record";
    case Shape::kContradictingWaits:
      return "contradicting_waits";
    case Shape::kWindowCut:
      return "window_cut";
    case Shape::kCudaGraphs:
      return "cuda_graphs";
    case Shape::kNcclWithoutMetadata:
      return "nccl_without_metadata";
    case Shape::kRocm:
      return "rocm";
    case Shape::kStringAndNegativeIds:
      return "string_and_negative_ids";
    case Shape::kFlowsOnly:
      return "flows_only";
    case Shape::kNoFlows:
      return "no_flows";
    case Shape::kInvalidRuntimeNames:
      return "invalid_runtime_names";
    case Shape::kOldPytorchV100:
      return "old_pytorch_v100";
    case Shape::kSyncRecordsWithoutCalls:
      return "sync_records_without_calls";
    case Shape::kSyncCallsWithoutCorrelation:
      return "sync_calls_without_correlation";
    case Shape::kGpuCorrelationsRenumbered:
      return "gpu_correlations_renumbered";
    case Shape::kPytorch18Names:
      return "pytorch_1_8_names";
    case Shape::kDisplayTimeUnitNs:
      return "display_time_unit_ns";
    case Shape::kTwoDevicesOneProcess:
      return "two_devices_one_process";
    case Shape::kDeepPythonStack:
      return "deep_python_stack";
    case Shape::kFullNcclMetadata:
      return "full_nccl_metadata";
    case Shape::kNestedProfilerSteps:
      return "nested_profiler_steps";
    case Shape::kOverlappingProfilerSchedules:
      return "overlapping_profiler_schedules";
    case Shape::kMissingStepAnnotation:
      return "missing_step_annotation";
    case Shape::kStepsFromArbitraryStart:
      return "steps_from_arbitrary_start";
    case Shape::kLastStepCut:
      return "last_step_cut";
    case Shape::kSyncCallsWithoutRecords:
      return "sync_calls_without_records";
    case Shape::kSyncMemcpyMidStep:
      return "sync_memcpy_mid_step";
    case Shape::kRocmModuleLaunches:
      return "rocm_module_launches";
    case Shape::kHugeStreamIds:
      return "huge_stream_ids";
    case Shape::kPytorch24:
      return "pytorch_2_4";
    case Shape::kShortLastStep:
      return "short_last_step";
    case Shape::kOneStep:
      return "one_step";
    case Shape::kNcclDevKernels:
      return "nccl_dev_kernels";
    case Shape::kLaunchVariants:
      return "launch_variants";
    case Shape::kFsdpTwoNcclStreams:
      return "fsdp_two_nccl_streams";
    case Shape::kCpuActivitiesOnly:
      return "cpu_activities_only";
    case Shape::kChromeDurationPairs:
      return "chrome_duration_pairs";
    case Shape::kNumberForms:
      return "number_forms";
    case Shape::kShortLastStepVaryingEnds:
      return "short_last_step_varying_ends";
    case Shape::kIntelXpu:
      return "intel_xpu";
    case Shape::kGraphKernelsUncorrelated:
      return "graph_kernels_uncorrelated";
    case Shape::kNcclInGraph:
      return "nccl_in_graph";
    case Shape::kP2pMissingPeer:
      return "p2p_missing_peer";
    case Shape::kTensorAndDataParallel:
      return "tensor_and_data_parallel";
    case Shape::kTensorAndDataParallelNoMetadata:
      return "tensor_and_data_parallel_no_metadata";
    case Shape::kPipelineFourStages:
      return "pipeline_four_stages";
    case Shape::kPipelineFourStagesNoMetadata:
      return "pipeline_four_stages_no_metadata";
    case Shape::kPipelineOneFOneB:
      return "pipeline_1f1b";
    case Shape::kPipelineDataParallelNoMetadata:
      return "pipeline_data_parallel_no_metadata";
    case Shape::kPipeline3dNoMetadata:
      return "pipeline_3d_no_metadata";
    case Shape::kPipeline1f1bDataParallel:
      return "pipeline_1f1b_data_parallel";
  }
  return "?";
}

inline std::vector<Shape> all_shapes() {
  std::vector<Shape> shapes;
  for (int s = 0; s <= static_cast<int>(Shape::kPipeline3dNoMetadata); ++s) {
    shapes.push_back(static_cast<Shape>(s));
  }
  return shapes;
}

/// What the writer does differently (several quirks combine in kOldPytorchV100).
struct Quirks {
  bool relative_time = true;
  bool gzip = false;
  int processes_in_file = 1;  // >1: several host processes / devices in one file, no rank info
  int ranks = 1;              // ranks modelled (one file each unless processes_in_file > 1)
  int world_size = 1;         // written distributedInfo.world_size
  int first_rank = 0;
  bool copies_without_launch = false;
  bool write_event_records = true;
  bool contradicting_waits = false;
  bool window_cut = false;
  bool cuda_graphs = false;
  bool nccl_metadata = true;
  bool rocm = false;
  bool string_ids = false;
  bool args_correlation = true;
  bool flows = true;
  bool invalid_names = false;
  // Host syncs (cudaStreamSynchronize in item(), cudaDeviceSynchronize at the step end) with
  // their cuda_sync records; how their calls are written.
  bool host_syncs = false;
  bool sync_records = true;
  bool sync_calls_written = true;
  bool sync_call_correlation = true;
  bool renumber_gpu_correlations = false;  // every GPU record's correlation shifted
  bool old_names = false;                  // PyTorch 1.8: Kernel/Runtime/Memcpy/Memset, Operator
  bool driver_launches = false;            // kernels launched by cuLaunchKernel (cuda_driver)
  bool gpu_annotations = false;            // gpu_user_annotation spans on the compute stream
  bool display_ns = false;     // "displayTimeUnit": "ns" (ts stay µs, the format's rule)
  bool second_device = false;  // every other kernel on device 1 of the same process
  int python_depth = 0;        // python_function chain around all steps
  bool full_nccl = false;      // kernel NCCL args, graph node ids, pg_config in distributedInfo
  // ProfilerStep windows.
  int first_step_number = 0;           // ProfilerStep#N numbering starts here
  int missing_step = -1;               // this step's ProfilerStep span is not written
  bool nested_step_spans = false;      // ProfilerStep#N again inside a compiled region inside it
  bool overlapping_schedules = false;  // a second profiler's series from step 1, 3 µs later
  bool cut_last_step = false;          // one more step, its span cut 40 % in (profiler stopped)
  // The last step is a whole step with a fifth of the GPU work (an epoch's last, smaller batch):
  // shorter than half the others, yet a step.
  bool short_last_step = false;
  int steps = 0;                  // steps written (0: the caller's count)
  bool nccl_dev_kernels = false;  // ncclDevKernel_AllReduce_Sum_f32_RING_LL (NCCL ≥ 2.19)
  // cudaLaunchCooperativeKernel for one forward kernel, cudaMemcpy2DAsync for the H2D copy and
  // the blocking loss.item() D2H copy, cudaMemcpyPeerAsync for the D2D copy.
  bool launch_variants = false;
  bool cpu_activities_only = false;    // profiled with activities=[CPU]: no CUPTI events at all
  bool fsdp_two_nccl_streams = false;  // an all-gather per step on a second NCCL stream
  bool graph_two_streams = false;      // a CUDA graph's odd kernels on a second stream (fork/join)
  bool event_sync = false;             // cudaEventSynchronize on the bucket's event (host_syncs)
  bool event_sync_names_stream = false;  // its Event Sync record carries wait_on_stream
  bool sync_memcpy = false;              // a blocking cudaMemcpy DtoH between forward and backward
  bool rocm_variants = false;    // hipModuleLaunchKernel, hipExtLaunchKernel, hipMemcpyWithStream
  bool huge_stream_ids = false;  // stream ids written + 2^32 (CUPTI/ROCm ids are not small)
  bool pytorch24 = false;        // cudaLaunchKernelExC, Triton via cuLaunchKernel(Ex), M/C/i rows
  // Chrome-trace "B"/"E" pairs for every duration event (other exporters), with instant, counter
  // and async ("b"/"e") rows mixed in.
  bool duration_pairs = false;
  // ts/dur written as JSON strings and in exponent form, a 0 µs runtime call, and
  // queued kernels written 2 ns before their predecessor ends (clock rounding).
  bool number_forms = false;
  bool varying_step_ends = false;  // each step's last host op is named after the step
  // Intel XPU (Kineto's XPU plugin): calls in cat "xpu_runtime" named ur*, GPU work on SYCL
  // queues (tid and args.queue, no args.stream), an Intel device.
  bool xpu = false;
  // A CUDA graph's kernels written with correlation 0 (no runtime call carries it) and no flows:
  // only the stream, the time and the host span around them tie them to their cudaGraphLaunch.
  bool graph_kernels_uncorrelated = false;
  // The gradient all-reduce captured in a CUDA graph and replayed by cudaGraphLaunch on the NCCL
  // stream: no record_param_comms around it, the NCCL kernel correlated with the graph launch.
  bool nccl_in_graph = false;
  // Pipeline parallelism: each step receives activations from the previous stage and sends its
  // own to the next (SendRecv kernels on a P2P stream, ordered by events with compute).
  bool p2p = false;
  // Tensor parallelism of this degree (ranks in consecutive blocks): an all-reduce in each TP
  // group after the 3rd and 6th forward op on its own NCCL stream; the gradient all-reduce runs
  // in the data-parallel groups.
  int tensor_parallel = 1;
  // Megatron's interleaved pipeline with 1F1B: each rank holds this many model chunks, virtual
  // stage k on stage k mod PP, so the last stage sends on to the first (a ring of transfers).
  int virtual_stages = 1;
  // Expert parallelism: the tensor-parallel groups' collective is an all-to-all (MoE token
  // dispatch), which NCCL runs as grouped sends and receives: SendRecv kernels.
  bool expert_all_to_all = false;
  // Megatron's tied embeddings: each pipeline's first and last stage all-reduce the embedding
  // gradients (a communicator of their own, one group per pipeline and tensor-parallel rank) before
  // the data-parallel all-reduce, or after it with `embeddings_after_gradients` (Megatron-core's
  // finalize_model_grads order).
  bool tied_embeddings = false;
  bool embeddings_after_gradients = false;
  // Megatron's gradient clipping: after the data-parallel all-reduce, each pipeline replica
  // all-reduces the gradient norm over its model-parallel group (all its stages and tensor-parallel
  // ranks: a communicator of its own, one group per replica).
  bool model_parallel_norm = false;
  // Run-to-run noise: each compute kernel's duration and each collective's wire time off by up to
  // this many ns either way (seeded per rank and per collective; 0: the model's exact times).
  std::int64_t jitter_ns = 0;
  // Members of one collective end up to this many ns after its end (seeded per member): a ring's
  // last step finishes on the ranks one after another (0: all at one instant).
  std::int64_t member_end_spread_ns = 0;
  // Pipeline parallelism over all ranks (rank = stage), GPipe: every microbatch's forward passes
  // the stages (recv, forward, send), then every backward returns (recv, backward, send); each
  // transfer is a send kernel and a recv kernel that end together on the two ranks.
  int pipeline_microbatches = 0;
  // Megatron's 1F1B order instead of GPipe: warm-up forwards, then one forward and one backward
  // in turn, then the remaining backwards; a forward's send and the next backward's receive
  // (and the other way round) batched into one SendRecv kernel with the same peer.
  bool one_f_one_b = false;
  // Data-parallel replicas of the pipeline: replica p runs its stages on ranks
  // p × stages …; after the backward each stage's ranks all-reduce the gradients.
  int pipelines = 1;
};

inline Quirks quirks_of(Shape s) {
  Quirks q;
  switch (s) {
    case Shape::kBaseline:
      q.cuda_graphs = true;
      break;
    case Shape::kEpochTimestamps:
      q.relative_time = false;
      q.gzip = true;
      break;
    case Shape::kTwoProcessesInOneFile:
      q.processes_in_file = 2;
      q.ranks = 2;
      q.world_size = 2;
      break;
    case Shape::kOneRankOfEight:
      q.world_size = 8;
      q.first_rank = 3;
      break;
    case Shape::kTwoRanksDdp:
      q.ranks = 2;
      q.world_size = 2;
      break;
    case Shape::kCopiesWithoutLaunch:
      q.copies_without_launch = true;
      break;
    case Shape::kNoEventRecord:
      q.write_event_records = false;
      break;
    case Shape::kContradictingWaits:
      q.contradicting_waits = true;
      q.write_event_records = false;
      break;
    case Shape::kWindowCut:
      q.window_cut = true;
      break;
    case Shape::kCudaGraphs:
      q.cuda_graphs = true;
      break;
    case Shape::kNcclWithoutMetadata:
      q.nccl_metadata = false;
      q.ranks = 2;
      q.world_size = 2;
      break;
    case Shape::kRocm:
      q.rocm = true;
      q.cuda_graphs = true;
      break;
    case Shape::kStringAndNegativeIds:
      q.string_ids = true;
      break;
    case Shape::kFlowsOnly:
      q.args_correlation = false;
      break;
    case Shape::kNoFlows:
      q.flows = false;
      break;
    case Shape::kInvalidRuntimeNames:
      q.invalid_names = true;
      break;
    case Shape::kOldPytorchV100:
      q.relative_time = false;
      q.gzip = true;
      q.ranks = 2;
      q.world_size = 2;
      q.copies_without_launch = true;
      q.write_event_records = false;
      q.contradicting_waits = true;
      q.window_cut = true;
      q.flows = false;
      q.invalid_names = true;
      q.nccl_metadata = false;
      break;
    case Shape::kSyncRecordsWithoutCalls:
      q.host_syncs = true;
      q.sync_calls_written = false;
      break;
    case Shape::kSyncCallsWithoutCorrelation:
      q.host_syncs = true;
      q.sync_call_correlation = false;
      q.flows = false;
      break;
    case Shape::kGpuCorrelationsRenumbered:
      q.renumber_gpu_correlations = true;
      q.cuda_graphs = true;
      q.flows = false;
      q.host_syncs = true;
      break;
    case Shape::kPytorch18Names:
      q.old_names = true;
      q.driver_launches = true;
      q.gpu_annotations = true;
      q.relative_time = false;
      break;
    case Shape::kDisplayTimeUnitNs:
      q.display_ns = true;
      break;
    case Shape::kTwoDevicesOneProcess:
      q.second_device = true;
      break;
    case Shape::kDeepPythonStack:
      q.python_depth = 2000;
      break;
    case Shape::kFullNcclMetadata:
      q.full_nccl = true;
      q.cuda_graphs = true;
      q.ranks = 2;
      q.world_size = 2;
      break;
    case Shape::kNestedProfilerSteps:
      q.nested_step_spans = true;
      break;
    case Shape::kOverlappingProfilerSchedules:
      q.overlapping_schedules = true;
      break;
    case Shape::kMissingStepAnnotation:
      q.missing_step = 1;
      q.first_step_number = 5;
      break;
    case Shape::kStepsFromArbitraryStart:
      q.first_step_number = 1037;
      q.ranks = 2;
      q.world_size = 2;
      break;
    case Shape::kLastStepCut:
      q.cut_last_step = true;
      q.ranks = 2;
      q.world_size = 2;
      break;
    case Shape::kSyncCallsWithoutRecords:
      q.host_syncs = true;
      q.event_sync = true;
      q.sync_records = false;
      q.write_event_records = true;
      break;
    case Shape::kSyncMemcpyMidStep:
      q.sync_memcpy = true;
      q.flows = false;
      break;
    case Shape::kRocmModuleLaunches:
      q.rocm = true;
      q.rocm_variants = true;
      q.sync_memcpy = true;
      q.host_syncs = true;
      q.event_sync = true;
      break;
    case Shape::kHugeStreamIds:
      q.huge_stream_ids = true;
      q.second_device = true;
      q.host_syncs = true;
      break;
    case Shape::kPytorch24:
      q.pytorch24 = true;
      q.gpu_annotations = true;
      q.string_ids = true;
      q.cuda_graphs = true;
      break;
    case Shape::kShortLastStep:
      q.short_last_step = true;
      q.ranks = 2;
      q.world_size = 2;
      break;
    case Shape::kOneStep:
      q.steps = 1;
      q.ranks = 2;
      q.world_size = 2;
      break;
    case Shape::kNcclDevKernels:
      q.nccl_dev_kernels = true;
      q.nccl_metadata = false;
      q.ranks = 2;
      q.world_size = 2;
      break;
    case Shape::kLaunchVariants:
      q.launch_variants = true;
      q.cuda_graphs = true;
      q.graph_two_streams = true;
      break;
    case Shape::kCpuActivitiesOnly:
      q.cpu_activities_only = true;
      q.host_syncs = true;
      break;
    case Shape::kChromeDurationPairs:
      q.duration_pairs = true;
      q.cuda_graphs = true;
      q.host_syncs = true;
      q.python_depth = 3;
      q.ranks = 2;
      q.world_size = 2;
      break;
    case Shape::kNumberForms:
      q.number_forms = true;
      q.cuda_graphs = true;
      q.ranks = 2;
      q.world_size = 2;
      break;
    case Shape::kGraphKernelsUncorrelated:
      q.cuda_graphs = true;
      q.graph_kernels_uncorrelated = true;
      q.graph_two_streams = true;
      q.ranks = 2;
      q.world_size = 2;
      break;
    case Shape::kNcclInGraph:
      q.nccl_in_graph = true;
      q.ranks = 2;
      q.world_size = 2;
      break;
    case Shape::kTensorAndDataParallel:
      q.tensor_parallel = 2;
      q.ranks = 4;
      q.world_size = 4;
      break;
    case Shape::kTensorAndDataParallelNoMetadata:
      q = quirks_of(Shape::kTensorAndDataParallel);
      q.nccl_metadata = false;
      break;
    case Shape::kPipelineFourStages:
      q.pipeline_microbatches = 2;
      q.ranks = 4;
      q.world_size = 4;
      break;
    case Shape::kPipelineFourStagesNoMetadata:
      q = quirks_of(Shape::kPipelineFourStages);
      q.nccl_metadata = false;
      break;
    case Shape::kPipelineOneFOneB:
      q.pipeline_microbatches = 4;
      q.one_f_one_b = true;
      q.ranks = 4;
      q.world_size = 4;
      q.nccl_metadata = false;
      break;
    case Shape::kPipeline1f1bDataParallel:
      q = quirks_of(Shape::kPipelineOneFOneB);
      q.pipelines = 2;
      q.ranks = 8;
      q.world_size = 8;
      break;
    case Shape::kPipeline3dNoMetadata:
      q = quirks_of(Shape::kPipeline1f1bDataParallel);
      q.tensor_parallel = 2;
      q.ranks = 16;
      q.world_size = 16;
      break;
    case Shape::kPipelineDataParallelNoMetadata:
      q.pipeline_microbatches = 2;
      q.pipelines = 2;
      q.ranks = 4;
      q.world_size = 4;
      q.nccl_metadata = false;
      break;
    case Shape::kP2pMissingPeer:
      q.p2p = true;
      q.world_size = 2;
      q.first_rank = 1;
      q.nccl_metadata = false;
      break;
    case Shape::kIntelXpu:
      q.xpu = true;
      q.nccl_metadata = false;  // oneCCL kernels carry no collective args
      break;
    case Shape::kShortLastStepVaryingEnds:
      q.short_last_step = true;
      q.varying_step_ends = true;
      q.ranks = 2;
      q.world_size = 2;
      break;
    case Shape::kFsdpTwoNcclStreams:
      q.fsdp_two_nccl_streams = true;
      q.nccl_metadata = false;
      q.ranks = 2;
      q.world_size = 2;
      break;
  }
  return q;
}

struct GeneratedTraces {
  std::vector<std::string> files;  // one document per file (gzip bytes when Quirks::gzip)
  std::vector<std::string> names;
  bool gzip = false;
  int steps = 0;
  // Ground truth per file: first step start to last step end over the steps run (processes in
  // one file run theirs at the same time: each step counts once).
  std::vector<std::int64_t> step_time_ns;
};

namespace detail {

constexpr std::int64_t kUs = 1000;

struct HostEvent {
  const char* cat;
  std::string name;
  int process;
  std::int64_t tid;
  std::int64_t start, dur;
  std::int64_t correlation = -1;
  std::int64_t cuda_event = -1;
  std::string args{};  // extra args, ", "-joined JSON members
  bool write_correlation = true;
};

// A cuda_sync record: the host's wait in a synchronizing call (on the device's row; stream −1
// for a context sync).
struct SyncRecord {
  const char* kind;
  std::int64_t stream;
  std::int64_t start, dur;
  std::int64_t correlation;
  std::int64_t wait_on_stream = -1;  // written when ≥ 0 (the stream an Event Sync waited for)
};

struct GpuEvent {
  const char* cat;
  std::string name;
  int device;
  std::int64_t stream;
  std::int64_t start, dur;
  std::int64_t correlation;
  bool linked = true;  // written with a correlation some runtime call carries
  std::string args;
  bool zero_correlation = false;  // written with correlation 0 (and so no flow)
};

// One rank's ground truth: a host thread that issues calls and FIFO streams with event waits.
struct RankModel {
  int rank = 0;
  int process = 0;
  int device = 0;
  double host_scale = 1.0;
  std::int64_t host_ns = 0;
  std::map<std::int64_t, std::int64_t> stream_free;  // end of the last task per stream
  std::map<std::int64_t, std::int64_t> event_time;   // CUDA event → time its work ended
  std::vector<HostEvent> host;
  std::vector<GpuEvent> gpu;
  std::vector<SyncRecord> syncs;
  std::vector<std::size_t> step_gpu_begin;  // index into gpu where each step's work starts
  std::int64_t correlation = 0;
  std::int64_t window_start = 0, window_end = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> steps;
  std::pair<std::int64_t, std::int64_t> cut_step{0, 0};  // a step the window cut (not in steps)

  std::int64_t free(std::int64_t stream) {
    auto it = stream_free.find(stream);
    return it == stream_free.end() ? 0 : it->second;
  }
  std::int64_t host_dur(std::int64_t ns) const {
    return static_cast<std::int64_t>(static_cast<double>(ns / kUs) * host_scale + 0.5) * kUs;
  }
  // A runtime call of `dur` on the host thread; returns (start, correlation).
  std::pair<std::int64_t, std::int64_t> call(const std::string& name, std::int64_t dur,
                                             std::int64_t cuda_event = -1) {
    const std::int64_t start = host_ns;
    host.push_back(
        {"cuda_runtime", name, process, 1, start, host_dur(dur), ++correlation, cuda_event, ""});
    host_ns = start + host_dur(dur) + kUs;
    return {start, correlation};
  }
  // GPU work enqueued by the call at `call_start`: FIFO on its stream, 3 µs launch latency.
  // Streams of another device are keyed 1000 × device + stream.
  std::int64_t enqueue(const char* cat, const std::string& name, std::int64_t stream,
                       std::int64_t call_start, std::int64_t dur, std::int64_t corr,
                       std::string args = "") {
    const std::int64_t start = std::max(call_start + 3 * kUs, free(stream));
    gpu.push_back({cat, name, stream >= 1000 ? static_cast<int>(stream / 1000) : device, stream,
                   start, dur, corr, true, std::move(args)});
    stream_free[stream] = start + dur;
    return start + dur;
  }
};

inline std::string gzip_bytes(const std::string& text) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace detail

/// The same with quirks given directly (a reference trace for a shape: the model written with the
/// information the shape's writer leaves out); `label` names the files.
inline GeneratedTraces make_traces(const Quirks& q, const std::string& label, int steps_asked = 3) {
  const int steps = q.steps > 0 ? q.steps : steps_asked;
  using detail::HostEvent;
  using detail::kUs;
  using detail::RankModel;
  const std::int64_t base_ns = 1'711'964'646'000'000'000;
  const std::int64_t compute = 7, comm = 13, side = 20, gather = 17;
  const std::string launch = q.xpu               ? "urEnqueueKernelLaunch"
                             : q.rocm_variants   ? "hipModuleLaunchKernel"
                             : q.rocm            ? "hipLaunchKernel"
                             : q.driver_launches ? "cuLaunchKernel"
                             : q.pytorch24       ? "cudaLaunchKernelExC"
                                                 : "cudaLaunchKernel";
  const std::string ext_launch = q.xpu             ? "urEnqueueKernelLaunch"
                                 : q.rocm_variants ? "hipExtLaunchKernel"
                                 : q.rocm          ? "hipExtModuleLaunchKernel"
                                 : q.pytorch24     ? "cuLaunchKernelEx"
                                                   : "cudaLaunchKernel";
  const std::string copy_async = q.xpu    ? "urEnqueueUSMMemcpy"
                                 : q.rocm ? "hipMemcpyAsync"
                                          : "cudaMemcpyAsync";
  const std::string copy_2d = q.launch_variants ? "cudaMemcpy2DAsync" : copy_async;
  const std::string copy_peer = q.launch_variants ? "cudaMemcpyPeerAsync" : copy_async;
  // Synchronous copies (they return once the data has landed).
  const std::string copy_sync = q.rocm_variants ? "hipMemcpyWithStream" : "cudaMemcpy";
  const std::string set_async = q.xpu    ? "urEnqueueUSMFill"
                                : q.rocm ? "hipMemsetAsync"
                                         : "cudaMemsetAsync";
  // SYCL: a barrier on the producing queue gives an event; the consuming queue waits on it.
  const std::string record = q.xpu    ? "urEnqueueEventsWaitWithBarrier"
                             : q.rocm ? "hipEventRecord"
                                      : "cudaEventRecord";
  const std::string wait = q.xpu    ? "urEnqueueEventsWait"
                           : q.rocm ? "hipStreamWaitEvent"
                                    : "cudaStreamWaitEvent";
  const std::string graph_launch = q.rocm ? "hipGraphLaunch" : "cudaGraphLaunch";
  const std::string nccl_kernel =
      q.xpu    ? "oneccl_allreduce_ring_kernel"
      : q.rocm ? "ncclDevKernel_Generic(ncclDevComm*, unsigned long, ncclWork*)"
      : q.nccl_dev_kernels
          ? "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
          : "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)";

  // A stream's id as written (streams of device 1 are keyed 1000 + id in the model): ids above
  // 2^31 with huge_stream_ids, the same ids on both devices.
  auto stream_out = [&](std::int64_t stream) -> std::int64_t {
    if (stream < 0) return stream;
    return q.huge_stream_ids ? 2'147'483'648 + (stream % 1000) * 4096 : stream % 1000;
  };
  std::vector<RankModel> ranks(static_cast<std::size_t>(q.ranks));
  std::vector<std::mt19937_64> noise_of_rank;
  for (int r = 0; r < q.ranks; ++r)
    noise_of_rank.emplace_back(1000003u * static_cast<unsigned>(r) + 17u);
  std::mt19937_64 collective_noise(99);
  std::mt19937_64 member_noise(101);
  auto jitter = [&](std::mt19937_64& rng) -> std::int64_t {
    if (q.jitter_ns <= 0) return 0;
    return std::uniform_int_distribution<std::int64_t>(-q.jitter_ns, q.jitter_ns)(rng);
  };
  for (int r = 0; r < q.ranks; ++r) {
    RankModel& m = ranks[r];
    m.rank = q.first_rank + r;
    m.process = r;
    m.device = q.processes_in_file > 1 ? r : 0;
    m.host_scale = 1.0 + 0.07 * r;
    m.host_ns = base_ns + 1'000'000 + 13 * kUs * r;
    m.correlation = 1000 + 100000 * r;
  }
  int work_pct = 100;  // the GPU work of the current step, % of a full batch's
  auto kernel_us = [&](int r, int i) {
    return std::max<std::int64_t>(1, (35 + (i * 37 + r * 11) % 50) * work_pct / 100);
  };
  std::int64_t event_id = 1;

  // A collective on every rank: each member starts when its stream is ready; all end together
  // (last arrival + wire time), as NCCL kernels do; with absent peers the last one is later.
  // `groups`: 0 the whole world, 1 tensor-parallel groups (blocks of q.tensor_parallel ranks),
  // 2 data-parallel groups (every q.tensor_parallel-th rank), 3 the data-parallel groups of
  // pipeline replicas (every stage's ranks); each group joins on its own.
  std::map<std::pair<int, std::size_t>, std::int64_t> group_sequence;  // (group name, rank)
  // Whether a rank is its pipeline's first or last stage (pipelines of stages × tp ranks, the
  // tensor-parallel ranks adjacent).
  const int tp_ranks = std::max(1, q.tensor_parallel);
  const int pipeline_ranks = q.ranks / std::max(1, q.pipelines);  // stages × tp
  auto in_end_stage = [&](int rank_index) {
    const int stage = (rank_index % pipeline_ranks) / tp_ranks;
    return stage == 0 || stage == pipeline_ranks / tp_ranks - 1;
  };
  auto collective = [&](std::int64_t on_stream, const std::string& kernel_name,
                        const char* collective_name, std::int64_t wire_us, bool in_graph = false,
                        int groups = 0, int sender = -1, int receiver = -1, int only_block = -1) {
    // A point-to-point transfer: only the sender and the receiver take part (a group of two).
    // `only_block`: one tensor-parallel group alone (a pipeline stage's).
    // `groups` 4: the embedding groups, each pipeline's first and last stage (per tensor-parallel
    // rank). `groups` 5: the model-parallel groups, every rank of one pipeline replica.
    const bool p2p_pair = sender >= 0;
    auto takes_part = [&](std::size_t r) {
      const int i = static_cast<int>(r);
      if (only_block >= 0 && i / tp_ranks != only_block) return false;
      if (groups == 4) return in_end_stage(i);
      return !p2p_pair || i == sender || i == receiver;
    };
    // Pipeline replicas' data-parallel groups stride like tensor-parallel ones' (by stages).
    const int tp = groups == 3 ? pipeline_ranks : tp_ranks;
    const int g_kind = groups == 3 ? 2 : groups;
    const int group_count = g_kind == 0   ? 1
                            : g_kind == 1 ? q.ranks / tp
                            : g_kind == 4 ? q.ranks / pipeline_ranks * tp_ranks
                            : g_kind == 5 ? q.ranks / pipeline_ranks
                                          : tp;
    auto group_of = [&](std::size_t r) {
      const int i = static_cast<int>(r);
      if (g_kind == 4) return i / pipeline_ranks * tp_ranks + i % tp_ranks;
      if (g_kind == 5) return i / pipeline_ranks;
      return g_kind == 0 ? 0 : g_kind == 1 ? i / tp : i % tp;
    };
    // Process groups are named in creation order on every rank: world, TP groups, DP groups,
    // embedding groups, model-parallel groups.
    auto group_name = [&](int g) {
      return g_kind == 0   ? 0
             : g_kind == 1 ? 1 + g
             : g_kind == 4 ? 1 + 2 * q.ranks + g
             : g_kind == 5 ? 1 + 3 * q.ranks + g
                           : 1 + q.ranks / tp_ranks + g;
    };
    const int group_size = g_kind == 0   ? q.world_size
                           : g_kind == 1 ? tp
                           : g_kind == 4 ? 2
                           : g_kind == 5 ? pipeline_ranks
                                         : q.ranks / tp;
    // A rank's sequence number counts the operations it took part in (P2P ones too, as
    // ProcessGroupNCCL did before separate P2P counters).
    auto metadata = [&](int g, std::size_t r) {
      const char* name = !p2p_pair                       ? collective_name
                         : static_cast<int>(r) == sender ? "send"
                                                         : "recv";
      return fmt::format(
          "\"Collective name\": \"{}\", \"In msg nelems\": 1048576, \"Out msg "
          "nelems\": 1048576, \"Group size\": {}, \"dtype\": \"Float\", \"Process Group "
          "Name\": \"{}\", \"Seq\": {}",
          name, group_size, group_name(g), group_sequence[{group_name(g), r}]);
    };
    std::vector<std::int64_t> ready(ranks.size());
    std::vector<std::pair<std::int64_t, std::int64_t>> launched(ranks.size());
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      if (!takes_part(r)) continue;
      RankModel& m = ranks[r];
      const std::int64_t op_start = m.host_ns;
      m.host_ns += 2 * kUs;
      const std::string meta = q.nccl_metadata && !in_graph ? metadata(group_of(r), r) : "";
      // A captured collective is replayed by the graph: no c10d op runs on the host.
      launched[r] = m.call(in_graph ? graph_launch : launch, 6 * kUs);
      m.host.push_back({"cpu_op", in_graph ? "CUDAGraph::replay" : "record_param_comms", m.process,
                        1, op_start, m.host_ns - op_start, -1, -1, meta});
      m.host_ns += kUs;
      ready[r] = std::max(launched[r].first + 3 * kUs, m.free(on_stream));
    }
    std::vector<std::int64_t> end(static_cast<std::size_t>(group_count), 0);
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      if (!takes_part(r)) continue;
      auto& e = end[static_cast<std::size_t>(group_of(r))];
      e = std::max(e, ready[r]);
    }
    for (std::int64_t& e : end) {
      if (q.world_size > q.ranks) e += 40 * kUs;  // peers outside the trace arrive later
      e += wire_us * kUs * work_pct / 100 + jitter(collective_noise) + q.jitter_ns;
    }
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      if (!takes_part(r)) continue;
      RankModel& m = ranks[r];
      std::string meta = q.nccl_metadata && !in_graph ? metadata(group_of(r), r) : "";
      if (q.full_nccl) {
        meta += fmt::format(
            ", \"Process Group Description\": \"default_pg\", \"Process Group Ranks\": "
            "\"[0, 1]\", \"Rank\": {}, \"In split size\": \"[]\", \"Out split size\": \"[]\"",
            m.rank);
      }
      const std::int64_t group_end =
          end[static_cast<std::size_t>(group_of(r))] +
          (q.member_end_spread_ns > 0 ? std::uniform_int_distribution<std::int64_t>(
                                            0, q.member_end_spread_ns)(member_noise)
                                      : 0);
      m.gpu.push_back({"kernel", kernel_name, m.device, on_stream, ready[r], group_end - ready[r],
                       launched[r].second, true, meta});
      m.stream_free[on_stream] = group_end;
    }
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      if (takes_part(r)) ++group_sequence[{group_name(group_of(r)), r}];
    }
  };
  auto all_reduce = [&]() {
    collective(comm, nccl_kernel, "allreduce", 180, q.nccl_in_graph, q.tensor_parallel > 1 ? 2 : 0);
  };
  const std::int64_t p2p_stream = 21;
  const std::int64_t tp_comm = 15;
  const std::int64_t embedding_comm = 23;
  const std::int64_t model_parallel_comm = 27;
  const std::string send_recv_kernel =
      q.nccl_dev_kernels ? "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"
                         : "ncclKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)";
  auto each = [&](auto&& f) {
    for (std::size_t r = 0; r < ranks.size(); ++r) f(static_cast<int>(r), ranks[r]);
  };
  auto record_event = [&](RankModel& m, std::int64_t stream, std::int64_t event) {
    auto [start, corr] = m.call(record, 3 * kUs, event);
    (void)start;
    m.host.back().args = fmt::format("\"stream\": {}", stream_out(stream));
    if (!q.write_event_records) m.host.back().cat = nullptr;  // not written
    m.event_time[event] = m.free(stream);
  };
  auto wait_event = [&](RankModel& m, std::int64_t stream, std::int64_t event) {
    m.call(wait, 3 * kUs, event);
    m.stream_free[stream] = std::max(m.free(stream), m.event_time[event]);
  };
  auto op = [&](RankModel& m, const std::string& name, int i, std::int64_t stream,
                const std::string& how) {
    const std::int64_t op_start = m.host_ns;
    m.host_ns += 3 * kUs;
    const auto [start, corr] = m.call(how, 5 * kUs);
    // One process driving two GPUs: every other forward kernel runs on device 1.
    const std::int64_t on =
        q.second_device && name == "linear" && i % 2 == 1 ? 1000 + stream : stream;
    // Triton kernels (torch.compile) are launched through the driver API.
    const bool triton = how.rfind("cuLaunch", 0) == 0 && q.pytorch24;
    m.enqueue(
        "kernel",
        triton ? fmt::format("triton_poi_fused_{}_{}", name, i % 5)
               : fmt::format("kernel_{}_{}", name, i % 5),
        on, start,
        std::max<std::int64_t>(
            kUs / 2, kernel_us(m.rank, i) * kUs +
                         jitter(noise_of_rank[static_cast<std::size_t>(m.rank - q.first_rank)])),
        corr);
    m.host_ns += 2 * kUs;
    m.host.push_back({"cpu_op", "aten::" + name, m.process, 1, op_start, m.host_ns - op_start});
    m.host_ns += 2 * kUs;
  };
  auto copy = [&](RankModel& m, const char* cat, const std::string& call_name,
                  const std::string& gpu_name, std::int64_t stream, std::int64_t dur,
                  bool launchless, bool blocking) {
    const std::int64_t op_start = m.host_ns;
    m.host_ns += 2 * kUs;
    const auto [start, corr] = m.call(call_name, 4 * kUs);
    const std::int64_t end = m.enqueue(cat, gpu_name, stream, start, dur, corr);
    if (launchless) m.gpu.back().linked = false;
    if (blocking) {  // the call returns once the copy has landed
      m.host.back().dur = end + 2 * kUs - start;
      m.host_ns = end + 3 * kUs;
    }
    m.host.push_back({"cpu_op", blocking ? "aten::_local_scalar_dense" : "aten::copy_", m.process,
                      1, op_start, m.host_ns - op_start});
    m.host_ns += 2 * kUs;
  };

  // A synchronizing call that returns once `ready` has passed, with its cuda_sync record.
  auto host_sync = [&](RankModel& m, const std::string& name, const char* kind, std::int64_t stream,
                       std::int64_t ready) {
    const auto [start, corr] = m.call(name, 3 * kUs);
    const std::int64_t end = std::max(start + 3 * kUs, ready + 2 * kUs);
    HostEvent& h = m.host.back();
    h.dur = end - start;
    if (!q.sync_calls_written) h.cat = nullptr;
    h.write_correlation = q.sync_call_correlation;
    m.host_ns = end + kUs;
    if (q.sync_records) m.syncs.push_back({kind, stream, start + kUs, end - start - 2 * kUs, corr});
  };
  // loss.item() in newer PyTorch: an async D2H copy to pinned memory, then a stream sync.
  auto item = [&](RankModel& m) {
    const std::int64_t op_start = m.host_ns;
    m.host_ns += 2 * kUs;
    const auto [start, corr] = m.call(copy_async, 4 * kUs);
    m.enqueue("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", compute, start, 5 * kUs, corr);
    host_sync(m, q.rocm ? "hipStreamSynchronize" : "cudaStreamSynchronize", "Stream Sync", compute,
              m.free(compute));
    m.host_ns += kUs;
    m.host.push_back(
        {"cpu_op", "aten::_local_scalar_dense", m.process, 1, op_start, m.host_ns - op_start});
    m.host_ns += 2 * kUs;
  };

  // Work launched before the profiler started: still running when the window opens.
  if (q.window_cut) {
    each([&](int, RankModel& m) {
      m.gpu.push_back({"kernel", "kernel_before_window", m.device, compute, m.host_ns - 200 * kUs,
                       900 * kUs, m.correlation - 500, false, ""});
      m.stream_free[compute] = m.host_ns + 700 * kUs;
      m.gpu.push_back({"kernel", nccl_kernel, m.device, comm, m.host_ns - 300 * kUs, 500 * kUs,
                       m.correlation - 400, false, ""});
      m.stream_free[comm] = m.host_ns + 200 * kUs;
      m.event_time[999] = m.host_ns + 200 * kUs;  // recorded before the window
    });
  }
  each([&](int, RankModel& m) { m.window_start = m.host_ns; });
  if (q.window_cut) {
    each([&](int, RankModel& m) {
      wait_event(m, compute, 999);  // its cudaEventRecord is outside the window
      copy(m, "gpu_memcpy", copy_async, "Memcpy DtoH (Device -> Pageable)", compute, 20 * kUs,
           false, true);  // blocks on the work launched before the window
    });
  }

  // With a cut last step the model runs one more step; its span is cut when written.
  for (int s = 0; s < steps + (q.cut_last_step ? 1 : 0); ++s) {
    work_pct = q.short_last_step && s == steps - 1 ? 20 : 100;
    each([&](int, RankModel& m) {
      m.steps.emplace_back(m.host_ns, 0);
      m.step_gpu_begin.push_back(m.gpu.size());
      // Room for the compiled region and the inner span between the step's start and its work.
      if (q.nested_step_spans) m.host_ns += 4 * kUs;
    });
    if (q.pipeline_microbatches > 0) {
      // GPipe over the ranks as stages: forwards pass down, backwards come back up; with
      // several pipelines, block p × stages + s is stage s of pipeline p (a "stage" below is a
      // block index), and block b's tensor-parallel ranks are b × tp … b × tp + tp − 1.
      const int pipelines = std::max(1, q.pipelines);
      const int tp_size = std::max(1, q.tensor_parallel);
      const int stages = q.ranks / pipelines / tp_size;
      auto on_stage = [&](int stage, auto&& f) {
        for (int t = 0; t < tp_size; ++t) f(ranks[static_cast<std::size_t>(stage * tp_size + t)]);
      };
      // Each tensor-parallel rank sends to its counterpart in the other stage.
      auto send_between = [&](int from, int to) {
        for (int t = 0; t < tp_size; ++t) {
          collective(p2p_stream, send_recv_kernel, "send", 25, false, 0, from * tp_size + t,
                     to * tp_size + t);
        }
      };
      std::int64_t tp_reductions = 0;
      auto tensor_parallel_all_reduce = [&](int stage) {  // the row-parallel layer's
        if (tp_size < 2) return;
        const std::int64_t tag = 9'000'000 + 2 * (tp_reductions++);
        on_stage(stage, [&](RankModel& m) {
          record_event(m, compute, tag);
          wait_event(m, tp_comm, tag);
        });
        collective(tp_comm, nccl_kernel, "allreduce", 30, false, 1, -1, -1, stage);
        on_stage(stage, [&](RankModel& m) {
          record_event(m, tp_comm, tag + 1);
          wait_event(m, compute, tag + 1);
        });
      };
      auto transfer = [&](int from, int to, std::int64_t tag) {
        // The compute stream's output is ready for the send; the receiver's compute waits.
        on_stage(from, [&](RankModel& m) {
          record_event(m, compute, tag);
          wait_event(m, p2p_stream, tag);
        });
        send_between(from, to);
        on_stage(to, [&](RankModel& m) {
          record_event(m, p2p_stream, tag + 1);
          wait_event(m, compute, tag + 1);
        });
      };
      if (q.one_f_one_b) {
        // Each stage's program; a transfer names its peer and the transfers it carries (ids:
        // forward activation of microbatch i from stage s, backward gradient of i to stage s).
        struct PipeOp {
          char kind;  // 'F', 'B' or 'T'
          int mb = 0, peer = -1;
          std::vector<int> ids{};
        };
        const int m_count = q.pipeline_microbatches;
        auto fa = [](int s_from, int i) { return 1000 * s_from + i; };
        auto bg = [](int s_to, int i) { return 100000 + 1000 * s_to + i; };
        // Virtual stages (interleaved): virtual stage k runs on stage k mod PP.
        const int vstages = stages * std::max(1, q.virtual_stages);
        auto block_of = [&](int base, int vstage) { return base + vstage % stages; };
        std::vector<std::vector<PipeOp>> program(static_cast<std::size_t>(vstages));
        for (int st = 0; st < vstages; ++st) {
          auto& prog = program[static_cast<std::size_t>(st)];
          const bool first = st == 0, last = st == vstages - 1;
          const int warmup = std::min(vstages - st - 1, m_count);
          const int steady = m_count - warmup;
          for (int i = 0; i < warmup; ++i) {
            if (!first) prog.push_back({'T', i, st - 1, {fa(st - 1, i)}});
            prog.push_back({'F', i});
            if (!last) prog.push_back({'T', i, st + 1, {fa(st, i)}});
          }
          if (steady > 0 && !first) prog.push_back({'T', warmup, st - 1, {fa(st - 1, warmup)}});
          for (int i = 0; i < steady; ++i) {
            const int f = warmup + i;
            prog.push_back({'F', f});
            if (!last) prog.push_back({'T', f, st + 1, {fa(st, f), bg(st, i)}});
            prog.push_back({'B', i});
            if (!first) {
              if (i + 1 < steady) {
                prog.push_back({'T', i, st - 1, {bg(st - 1, i), fa(st - 1, f + 1)}});
              } else {
                prog.push_back({'T', i, st - 1, {bg(st - 1, i)}});
              }
            }
          }
          for (int i = steady; i < m_count; ++i) {
            if (!last) prog.push_back({'T', i, st + 1, {bg(st, i)}});
            prog.push_back({'B', i});
            if (!first) prog.push_back({'T', i, st - 1, {bg(st - 1, i)}});
          }
          for (auto& o : prog) std::sort(o.ids.begin(), o.ids.end());
        }
        // Run the programs: local work as soon as a stage reaches it, a transfer once both
        // stages have reached it (each is one kernel per stage that ends when both arrived).
        // Each pipeline replica runs the same programs on its own ranks (base + stage).
        std::int64_t transfers_run = 0;
        for (int replica = 0; replica < pipelines; ++replica) {
          const int base = replica * stages;
          std::vector<std::size_t> pc(static_cast<std::size_t>(vstages), 0);
          for (bool progress = true; progress;) {
            progress = false;
            for (int st = 0; st < vstages; ++st) {
              auto& at = pc[static_cast<std::size_t>(st)];
              const auto& prog = program[static_cast<std::size_t>(st)];
              if (at >= prog.size()) continue;
              const PipeOp& o = prog[at];
              if (o.kind != 'T') {
                on_stage(block_of(base, st), [&](RankModel& m) {
                  for (int i = 0; i < 3; ++i)
                    op(m, o.kind == 'F' ? "linear" : "linear_backward", i + o.mb, compute, launch);
                });
                tensor_parallel_all_reduce(block_of(base, st));
                ++at;
                progress = true;
                continue;
              }
              auto& peer_at = pc[static_cast<std::size_t>(o.peer)];
              const auto& peer_prog = program[static_cast<std::size_t>(o.peer)];
              if (peer_at >= peer_prog.size()) continue;
              const PipeOp& p = peer_prog[peer_at];
              if (p.kind != 'T' || p.peer != st || p.ids != o.ids) continue;
              // Megatron waits on every request of a batch: both stages' compute streams wait for
              // the kernel, and both kernels wait for the work before them.
              const std::int64_t tag = 5'000'000 + 4 * (transfers_run++);
              for (int side : {st, o.peer}) {
                on_stage(block_of(base, side), [&](RankModel& m) {
                  record_event(m, compute, tag + (side == st ? 0 : 1));
                  wait_event(m, p2p_stream, tag + (side == st ? 0 : 1));
                });
              }
              send_between(block_of(base, st), block_of(base, o.peer));
              for (int side : {st, o.peer}) {
                on_stage(block_of(base, side), [&](RankModel& m) {
                  record_event(m, p2p_stream, tag + (side == st ? 2 : 3));
                  wait_event(m, compute, tag + (side == st ? 2 : 3));
                });
              }
              ++at;
              ++peer_at;
              progress = true;
            }
          }
        }
      }
      for (int mb = 0; mb < q.pipeline_microbatches && !q.one_f_one_b; ++mb) {
        for (int stage = 0; stage < stages; ++stage) {
          for (int p = 0; p < pipelines; ++p) {
            const int at = p * stages + stage;
            on_stage(at, [&](RankModel& m) {
              for (int i = 0; i < 3; ++i) op(m, "linear", i + mb, compute, launch);
            });
            tensor_parallel_all_reduce(at);
            if (stage + 1 < stages)
              transfer(at, at + 1, 600000 + 1000 * event_id + 10 * mb + 2 * at);
          }
        }
      }
      for (int mb = 0; mb < q.pipeline_microbatches && !q.one_f_one_b; ++mb) {
        for (int stage = stages - 1; stage >= 0; --stage) {
          for (int p = 0; p < pipelines; ++p) {
            const int at = p * stages + stage;
            on_stage(at, [&](RankModel& m) {
              for (int i = 0; i < 3; ++i) op(m, "linear_backward", i + mb, compute, launch);
            });
            tensor_parallel_all_reduce(at);
            if (stage > 0) transfer(at, at - 1, 700000 + 1000 * event_id + 10 * mb + 2 * at);
          }
        }
      }
      auto embedding_all_reduce = [&] {  // the first and last stages' embedding gradients
        each([&](int r, RankModel& m) {
          if (!in_end_stage(r)) return;
          record_event(m, compute, 850000 + 10 * event_id);
          wait_event(m, embedding_comm, 850000 + 10 * event_id);
        });
        collective(embedding_comm, nccl_kernel, "allreduce", 30, false, 4);
        each([&](int r, RankModel& m) {
          if (!in_end_stage(r)) return;
          record_event(m, embedding_comm, 850001 + 10 * event_id);
          wait_event(m, compute, 850001 + 10 * event_id);
        });
      };
      // An all-reduce of every rank on `stream`, fenced by events from and back to the compute
      // stream (tags from `tag`).
      auto fenced_all_reduce = [&](std::int64_t stream, std::int64_t tag, std::int64_t wire_us,
                                   int groups) {
        each([&](int, RankModel& m) {
          record_event(m, compute, tag + 10 * event_id);
          wait_event(m, stream, tag + 10 * event_id);
        });
        collective(stream, nccl_kernel, "allreduce", wire_us, false, groups);
        each([&](int, RankModel& m) {
          record_event(m, stream, tag + 1 + 10 * event_id);
          wait_event(m, compute, tag + 1 + 10 * event_id);
        });
      };
      if (q.tied_embeddings && !q.embeddings_after_gradients) embedding_all_reduce();
      // Each stage's gradients, all-reduced across the pipelines.
      if (pipelines > 1) fenced_all_reduce(comm, 800000, 180, 3);
      if (q.tied_embeddings && q.embeddings_after_gradients) embedding_all_reduce();
      // The gradient norm over each replica's model-parallel group.
      if (q.model_parallel_norm) fenced_all_reduce(model_parallel_comm, 870000, 12, 5);
      each([&](int, RankModel& m) {
        for (int i = 0; i < 3; ++i) op(m, "adam_step", i, compute, launch);
        copy(m, "gpu_memcpy", copy_2d, "Memcpy DtoH (Device -> Pageable)", compute, 6 * kUs, false,
             true);  // loss.item()
        m.host_ns += 20 * kUs;
        m.steps.back().second = m.host_ns;
      });
      event_id += 3;
      continue;
    }
    if (q.fsdp_two_nccl_streams) {
      // FSDP unshards the parameters first: an all-gather on its own NCCL stream, the compute
      // stream waits for it.
      collective(gather, "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                 "allgather", 60);
      each([&](int, RankModel& m) {
        record_event(m, gather, 100000 + event_id);
        wait_event(m, compute, 100000 + event_id);
      });
    }
    if (q.p2p) {  // the previous stage's activations arrive; the forward waits for them
      collective(p2p_stream, send_recv_kernel, "recv", 30);
      each([&](int, RankModel& m) {
        record_event(m, p2p_stream, 200000 + event_id);
        wait_event(m, compute, 200000 + event_id);
      });
    }
    each([&](int, RankModel& m) {
      copy(m, "gpu_memcpy", copy_2d, "Memcpy HtoD (Pageable -> Device)", compute, 25 * kUs, false,
           false);
    });
    for (int i = 0; i < 6; ++i) {
      each([&](int, RankModel& m) {
        op(m, "linear", i, compute,
           i == 3                        ? ext_launch
           : i == 2 && q.launch_variants ? std::string("cudaLaunchCooperativeKernel")
                                         : launch);
      });
      if (q.tensor_parallel > 1 && i % 3 == 2) {  // the row-parallel layer's all-reduce
        each([&](int, RankModel& m) {
          record_event(m, compute, 400000 + 10 * event_id + i);
          wait_event(m, tp_comm, 400000 + 10 * event_id + i);
        });
        if (q.expert_all_to_all) {
          collective(tp_comm, send_recv_kernel, "all_to_all", 40, false, 1);
        } else {
          collective(tp_comm, nccl_kernel, "allreduce", 40, false, 1);
        }
        each([&](int, RankModel& m) {
          record_event(m, tp_comm, 500000 + 10 * event_id + i);
          wait_event(m, compute, 500000 + 10 * event_id + i);
        });
      }
    }
    each([&](int, RankModel& m) {
      if (q.sync_memcpy) {  // a host-side metric read back synchronously mid-step
        copy(m, "gpu_memcpy", copy_sync, "Memcpy DtoH (Device -> Pageable)", compute, 9 * kUs,
             false, true);
      }
      copy(m, "gpu_memset", set_async, "Memset (Device)", compute, 8 * kUs, q.copies_without_launch,
           false);
      // A call timed at 0 µs, and a 0 µs memset starting at the same ns as the next copy on its
      // stream (an empty tensor's fill).
      if (q.number_forms) {
        m.call("cudaGetLastError", 0);
        copy(m, "gpu_memset", set_async, "Memset (Device)", compute, 0, false, false);
      }
      copy(m, "gpu_memcpy", copy_peer, "Memcpy DtoD (Device -> Device)", compute, 15 * kUs,
           q.copies_without_launch, false);
      if (q.cuda_graphs) {
        const std::int64_t op_start = m.host_ns;
        const auto [start, corr] = m.call(graph_launch, 9 * kUs);
        const std::int64_t graph_ready = m.free(compute);
        for (int k = 0; k < 6; ++k) {
          // With two streams the graph forks: odd kernels run beside the even ones.
          const std::int64_t on = q.graph_two_streams && k % 2 == 1 ? side : compute;
          if (on == side) m.stream_free[side] = std::max(m.free(side), graph_ready);
          m.enqueue(
              "kernel", fmt::format("graph_kernel_{}", k), on, start, (20 + 3 * k) * kUs, corr,
              q.full_nccl ? fmt::format("\"graph id\": 1, \"graph node id\": {}", 40 + k) : "");
          if (q.graph_kernels_uncorrelated) {
            m.gpu.back().linked = false;
            m.gpu.back().zero_correlation = true;
          }
        }
        // ... and joins: later work on the launching stream waits for the whole graph.
        if (q.graph_two_streams) m.stream_free[compute] = std::max(m.free(compute), m.free(side));
        m.host.push_back(
            {"cpu_op", "CUDAGraph::replay", m.process, 1, op_start, m.host_ns - op_start});
        m.host_ns += 2 * kUs;
      }
      for (int i = 0; i < 4; ++i) op(m, "linear_backward", i, compute, launch);
      // Gradient bucket: the communication stream waits for the backward so far.
      record_event(m, compute, event_id);
      wait_event(m, comm, event_id);
      if (q.copies_without_launch) {
        // A side-stream copy of the bucket, ordered after the backward by the same event.
        wait_event(m, side, event_id);
        copy(m, "gpu_memcpy", copy_async, "Memcpy DtoD (Device -> Device)", side, 30 * kUs, true,
             false);
      }
    });
    if (q.p2p) {  // the input gradients go back to the previous stage after the backward
      each([&](int, RankModel& m) {
        record_event(m, compute, 300000 + event_id);
        wait_event(m, p2p_stream, 300000 + event_id);
      });
      collective(p2p_stream, send_recv_kernel, "send", 30);
    }
    all_reduce();
    each([&](int, RankModel& m) {
      if (q.contradicting_waits) {
        // PyTorch-style: a wait on the side stream right after the NCCL launch; the thread's
        // next launch goes to the compute stream, which does not wait.
        record_event(m, comm, event_id + 1);
        wait_event(m, side, event_id + 1);
      }
      for (int i = 4; i < 8; ++i) op(m, "linear_backward", i, compute, launch);
      record_event(m, comm, event_id + 2);
      if (q.event_sync) {  // the host waits for the all-reduce (e.g. a gradient-norm check)
        const auto [start, corr] =
            m.call(q.rocm ? "hipEventSynchronize" : "cudaEventSynchronize", 3 * kUs, event_id + 2);
        (void)corr;
        const std::int64_t end = std::max(start + 3 * kUs, m.event_time[event_id + 2] + 2 * kUs);
        m.host.back().dur = end - start;
        m.host_ns = end + kUs;
        if (q.sync_records) {
          m.syncs.push_back({"Event Sync", -1, start + kUs, end - start - 2 * kUs, corr,
                             q.event_sync_names_stream ? comm : -1});
        }
      }
      wait_event(m, compute, event_id + 2);
      for (int i = 0; i < 4; ++i) op(m, "adam_step", i, compute, launch);
      copy(m, "gpu_memcpy", copy_2d, "Memcpy DtoH (Device -> Pageable)", compute, 6 * kUs, false,
           true);  // loss.item()
      if (q.host_syncs) {
        for (int i = 4; i < 6; ++i) op(m, "adam_step", i, compute, launch);
        item(m);
        for (int i = 6; i < 8; ++i) op(m, "adam_step", i, compute, launch);
        // torch.cuda.synchronize(): no op around it, the step's annotation only.
        std::int64_t ready = 0;
        for (const auto& [stream, free_ns] : m.stream_free) ready = std::max(ready, free_ns);
        host_sync(m, q.rocm ? "hipDeviceSynchronize" : "cudaDeviceSynchronize", "Context Sync", -1,
                  ready);
      }
      if (q.varying_step_ends) {  // a logging call of its own closes each step
        m.host.push_back({"cpu_op", fmt::format("log_metrics_every_{}_steps", s + 1), m.process, 1,
                          m.host_ns, 3 * kUs});
        m.host_ns += 4 * kUs;
      }
      m.host_ns += 20 * kUs;
      m.steps.back().second = m.host_ns;
    });
    event_id += 3;
  }
  // The profiler stopped 40 % into the extra step: its span ends there (its ground truth is not a
  // step); nothing that starts later is written.
  each([&](int, RankModel& m) {
    if (!q.cut_last_step) return;
    const auto [start, end] = m.steps.back();
    m.steps.pop_back();
    m.step_gpu_begin.pop_back();
    m.cut_step = {start, start + (end - start) * 2 / 5};
  });
  // The next step's launches: their GPU work ends after the window closes.
  each([&](int, RankModel& m) {
    for (int i = 0; i < 3; ++i) op(m, "linear", i, compute, launch);
    m.window_end = q.window_cut      ? m.host_ns
                   : q.cut_last_step ? m.cut_step.second
                                     : std::max(m.host_ns, m.free(compute)) + 10 * kUs;
  });

  GeneratedTraces out;
  out.gzip = q.gzip;
  out.steps = steps;

  // Writing.
  // µs with ns digits; with number_forms every second number as a JSON string and every third
  // in exponent form ("1234567e-3"), as some exporters write them.
  int number_form = 0;
  auto us_text = [&](std::string& s, std::int64_t ns) {
    const int form = q.number_forms ? number_form++ % 3 : 0;
    if (form == 1) {
      fmt::format_to(std::back_inserter(s), "\"{}.{:03}\"", ns / 1000, ns % 1000);
    } else if (form == 2) {
      fmt::format_to(std::back_inserter(s), "{}e-3", ns);
    } else {
      fmt::format_to(std::back_inserter(s), "{}.{:03}", ns / 1000, ns % 1000);
    }
  };
  auto ts = [&](std::string& s, std::int64_t ns) {
    if (q.relative_time) {
      us_text(s, ns - base_ns);
    } else {
      fmt::format_to(std::back_inserter(s), "{}", ns / 1000);
    }
  };
  auto dur = [&](std::string& s, std::int64_t ns) {
    if (q.relative_time) {
      us_text(s, ns);
    } else {
      fmt::format_to(std::back_inserter(s), "{}", ns / 1000);
    }
  };
  // duration_pairs: a "B" row at the start and an "E" row at the end of each duration event,
  // written in time order per file (ends before begins at one time, outer begins first, inner
  // ends first) so that each "E" closes the innermost open "B" of its thread.
  struct PairRow {
    std::int64_t ns;
    int phase;  // 0: E, 1: B
    std::int64_t tiebreak;
    std::string text;
  };
  std::vector<PairRow> pair_rows;
  auto add_pair = [&](const std::string& row, const std::string& pid, const std::string& tid,
                      std::int64_t start, std::int64_t length, const std::string& args_text,
                      const std::string& end_cat, const std::string& end_name) {
    std::string b = "{\"ph\": \"B\", " + row + ", \"ts\": ";
    ts(b, start);
    b += ", \"args\": {" + args_text + "}}";
    std::string e = "{\"ph\": \"E\", \"pid\": " + pid + ", \"tid\": " + tid;
    // Each "E" repeats cat and name, as most exporters write them: spans that begin at the same
    // time pair by name even when the file's order is lost (nameless ends: duration_pairs_test).
    if (!end_name.empty()) e += ", \"cat\": \"" + end_cat + "\", \"name\": \"" + end_name + "\"";
    e += ", \"ts\": ";
    ts(e, start + length);
    e += "}";
    if (length == 0) {
      pair_rows.push_back({start, 1, 0, b + ",\n  " + e});
      return;
    }
    pair_rows.push_back({start, 1, -length, std::move(b)});
    pair_rows.push_back({start + length, 0, -start, std::move(e)});
  };
  const int files = q.processes_in_file > 1 ? 1 : q.ranks;
  const int per_file = q.processes_in_file > 1 ? q.ranks : 1;
  for (int f = 0; f < files; ++f) {
    std::int64_t first_start = INT64_MAX, last_end = INT64_MIN;
    for (int p = 0; p < per_file; ++p) {
      first_start = std::min(first_start, ranks[f * per_file + p].steps.front().first);
      last_end = std::max(last_end, ranks[f * per_file + p].steps.back().second);
    }
    // Processes in one file run their steps at the same time: a step of the file is a step of each.
    out.step_time_ns.push_back((last_end - first_start) / steps);
    std::string doc =
        q.xpu ? "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{\"id\": 0, \"name\": "
                "\"Intel(R) Data Center GPU Max 1550\", \"totalGlobalMem\": 68719476736}"
              : "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{\"id\": 0, \"name\": "
                "\"Tesla V100-SXM2-32GB\", \"totalGlobalMem\": 34089730048, \"numSms\": 80}";
    if (q.second_device) {
      doc +=
          ", {\"id\": 1, \"name\": \"Tesla V100-SXM2-32GB\", \"totalGlobalMem\": 34089730048, "
          "\"numSms\": 80}";
    }
    doc += "]";
    if (q.display_ns) doc += ",\n  \"displayTimeUnit\": \"ns\"";
    if (per_file == 1 && q.full_nccl) {
      fmt::format_to(std::back_inserter(doc),
                     ",\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {}, "
                     "\"world_size\": {}, \"pg_count\": 1, \"pg_config\": [{{\"pg_name\": "
                     "\"0\", \"pg_desc\": \"default_pg\", \"backend_config\": \"cuda:nccl\", "
                     "\"pg_size\": {}, \"ranks\": [0, 1]}}], \"nccl_version\": \"2.21.5\"}}",
                     ranks[f].rank, q.world_size, q.world_size);
    } else if (per_file == 1) {
      fmt::format_to(std::back_inserter(doc),
                     ",\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {}, "
                     "\"world_size\": {}}}",
                     ranks[f].rank, q.world_size);
    }
    doc += ",\n  \"traceEvents\": [";
    bool first = true;
    auto sep = [&] {
      doc += first ? "\n  " : ",\n  ";
      first = false;
    };
    auto pid_text = [&](const RankModel& m) {
      return q.string_ids ? fmt::format("\"rank{}-host\"", m.rank)
                          : fmt::format("{}", 4000 + m.process);
    };
    auto tid_text = [&](const RankModel& m) {
      return q.string_ids ? std::string("-549452224") : fmt::format("{}", 4000 + m.process);
    };
    // PyTorch 1.8 category names; driver calls in their own category.
    auto category = [&](const char* cat, const std::string& name) -> std::string {
      const std::string c = cat;
      if (q.xpu && c == "cuda_runtime") return "xpu_runtime";
      if (c == "cuda_runtime" && name.rfind("cu", 0) == 0 && name.rfind("cuda", 0) != 0) {
        return "cuda_driver";
      }
      if (!q.old_names) return c;
      if (c == "cpu_op" || c == "user_annotation") return "Operator";
      if (c == "cuda_runtime") return "Runtime";
      if (c == "kernel") return "Kernel";
      if (c == "gpu_memcpy") return "Memcpy";
      if (c == "gpu_memset") return "Memset";
      return c;
    };
    const char* flow_cat = q.old_names ? "async" : "ac2g";
    for (int p = 0; p < per_file; ++p) {
      RankModel& m = ranks[f * per_file + p];
      const bool cut = q.window_cut || q.cut_last_step;
      auto in_window = [&](std::int64_t start) { return !cut || (start < m.window_end); };
      std::vector<HostEvent> host;
      for (const HostEvent& h : m.host) {
        // A stopped profiler writes no host event still open at the stop.
        if (!q.cut_last_step || h.start + h.dur <= m.window_end) host.push_back(h);
      }
      auto step_span = [&](const char* cat, std::int64_t number, std::int64_t start,
                           std::int64_t end) {
        host.push_back(
            {cat, fmt::format("ProfilerStep#{}", number), m.process, 1, start, end - start});
      };
      for (std::size_t i = 0; i < m.steps.size(); ++i) {
        const auto [start, end] = m.steps[i];
        const std::int64_t number = q.first_step_number + static_cast<std::int64_t>(i);
        if (static_cast<int>(i) == q.missing_step) continue;
        step_span("user_annotation", number, start, end);
        if (q.nested_step_spans) {  // torch.compile'd loop: the step again inside its region
          host.push_back({"cpu_op", "Torch-Compiled Region: 0/0", m.process, 1, start + kUs,
                          end - start - 2 * kUs});
          step_span("user_annotation", number, start + 2 * kUs, end - 2 * kUs);
        }
        // A second profiler started at step 1: its own numbering, its step() 3 µs later.
        if (q.overlapping_schedules && i >= 1)
          step_span("user_annotation", static_cast<std::int64_t>(i) - 1, start + 3 * kUs,
                    end + 3 * kUs);
      }
      if (q.cut_last_step)
        step_span("user_annotation", q.first_step_number + steps, m.cut_step.first,
                  m.cut_step.second);
      int invalid_every = 0;
      int interleave = 0;
      // A deep Python stack around every step (frames end with the last step: the next ops follow).
      for (int k = 0; k < q.python_depth; ++k) {
        const std::int64_t lead = q.python_depth - k;
        host.push_back({"python_function", fmt::format("train.py({}): run_{}", 10 + k, k),
                        m.process, 1, m.steps.front().first - lead,
                        m.steps.back().second - m.steps.front().first + lead, -1, -1,
                        fmt::format("\"Python id\": {}, \"Python parent id\": {}", k + 1, k)});
      }
      for (const HostEvent& h : host) {
        if (h.cat == nullptr || !in_window(h.start) || h.start < m.window_start - q.python_depth) {
          continue;
        }
        // activities=[CPU]: no CUPTI, so no runtime or driver calls either.
        if (q.cpu_activities_only &&
            (h.cat == std::string("cuda_runtime") || h.cat == std::string("cuda_driver"))) {
          continue;
        }
        std::string name = h.name;
        // Older PyTorch wrote some launches' names as "INVALID" (a capture-info record).
        if (q.invalid_names && h.correlation >= 0 && h.name == copy_async &&
            ++invalid_every % 2 == 0)
          name = "INVALID";
        std::vector<std::string> args;
        if (h.correlation >= 0 && q.args_correlation && h.write_correlation) {
          args.push_back(fmt::format("\"correlation\": {}", h.correlation));
          args.push_back(fmt::format("\"External id\": {}", h.correlation));
        }
        if (h.cuda_event >= 0) args.push_back(fmt::format("\"cuda_event\": {}", h.cuda_event));
        if (!h.args.empty()) args.push_back(h.args);
        std::string args_text;
        for (std::size_t a = 0; a < args.size(); ++a) args_text += (a ? ", " : "") + args[a];
        const std::string row =
            fmt::format("\"cat\": \"{}\", \"name\": \"{}\", \"pid\": {}, \"tid\": {}",
                        category(h.cat, h.name), name, pid_text(m), tid_text(m));
        if (q.duration_pairs) {
          add_pair(row, pid_text(m), tid_text(m), h.start, h.dur, args_text,
                   category(h.cat, h.name), name);
          // Rows a replay does not use, between the pairs: an instant, a counter and an async
          // ("b"/"e") span with an id.
          if (++interleave % 5 == 0) {
            sep();
            doc +=
                "{\"ph\": \"i\", \"s\": \"t\", \"name\": \"checkpoint\", \"pid\": " + pid_text(m) +
                ", \"tid\": " + tid_text(m) + ", \"ts\": ";
            ts(doc, h.start);
            doc += "}";
            sep();
            doc +=
                "{\"ph\": \"C\", \"name\": \"queue depth\", \"pid\": " + pid_text(m) + ", \"ts\": ";
            ts(doc, h.start);
            fmt::format_to(std::back_inserter(doc), ", \"args\": {{\"depth\": {}}}}}",
                           interleave % 3);
            for (const char* phase : {"b", "e"}) {
              sep();
              fmt::format_to(std::back_inserter(doc),
                             "{{\"ph\": \"{}\", \"cat\": \"user_annotation\", \"name\": "
                             "\"dataloader_fetch\", \"id\": {}, \"pid\": {}, \"tid\": {}, "
                             "\"ts\": ",
                             phase, interleave, pid_text(m), tid_text(m));
              ts(doc, phase[0] == 'b' ? h.start : h.start + 3 * h.dur);
              doc += "}";
            }
          }
        } else {
          sep();
          doc += "{\"ph\": \"X\", " + row + ", \"ts\": ";
          ts(doc, h.start);
          doc += ", \"dur\": ";
          dur(doc, h.dur);
          doc += ", \"args\": {" + args_text + "}}";
        }
        // PyTorch 2.4+: metadata, counters and instants between the events.
        if (q.pytorch24 && ++interleave % 7 == 0) {
          sep();
          fmt::format_to(std::back_inserter(doc),
                         "{{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": {}, \"pid\": {}, "
                         "\"tid\": {}, \"args\": {{\"name\": \"thread {}\"}}}}",
                         (h.start - base_ns) / 1000, pid_text(m), tid_text(m), interleave);
          sep();
          doc += "{\"ph\": \"C\", \"name\": \"Memory\", \"pid\": ";
          doc += pid_text(m);
          doc += ", \"ts\": ";
          ts(doc, h.start);
          fmt::format_to(std::back_inserter(doc), ", \"args\": {{\"Total Reserved\": {}}}}}",
                         1'000'000 + interleave);
          sep();
          doc +=
              "{\"ph\": \"i\", \"s\": \"t\", \"cat\": \"cpu_instant_event\", \"name\": "
              "\"[memory]\", \"pid\": ";
          doc += pid_text(m);
          doc += ", \"tid\": ";
          doc += tid_text(m);
          doc += ", \"ts\": ";
          ts(doc, h.start);
          doc += ", \"args\": {\"Addr\": 139, \"Bytes\": 512, \"Device Type\": 1}}";
        }
        if (h.correlation >= 0 && q.flows && h.cat == std::string("cuda_runtime") &&
            h.write_correlation) {
          sep();
          fmt::format_to(std::back_inserter(doc),
                         "{{\"ph\": \"s\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": ",
                         h.correlation, pid_text(m), tid_text(m));
          ts(doc, h.start);
          fmt::format_to(std::back_inserter(doc), ", \"cat\": \"{}\", \"name\": \"{}\"}}", flow_cat,
                         flow_cat);
        }
      }
      if (q.string_ids) {  // Kineto's overhead rows
        sep();
        doc +=
            "{\"ph\": \"X\", \"cat\": \"overhead\", \"name\": \"Activity Buffer Request\", "
            "\"pid\": -1, \"tid\": 0, \"ts\": ";
        ts(doc, m.window_start);
        doc += ", \"dur\": 1}";
      }
      for (const detail::SyncRecord& r : m.syncs) {
        if (q.cpu_activities_only) break;
        sep();
        fmt::format_to(std::back_inserter(doc),
                       "{{\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"{}\", \"pid\": {}, "
                       "\"tid\": {}, \"ts\": ",
                       r.kind, m.device, stream_out(r.stream));
        ts(doc, r.start);
        doc += ", \"dur\": ";
        dur(doc, r.dur);
        fmt::format_to(
            std::back_inserter(doc),
            ", \"args\": {{\"External id\": {}, \"cuda_sync_kind\": \"{}\", \"stream\": {}, "
            "\"correlation\": {}, \"device\": {}, \"context\": 1",
            r.correlation, r.kind, stream_out(r.stream), r.correlation, m.device);
        if (r.wait_on_stream >= 0) {
          fmt::format_to(std::back_inserter(doc), ", \"wait_on_stream\": {}",
                         stream_out(r.wait_on_stream));
        }
        doc += "}}";
      }
      if (q.gpu_annotations) {  // a span per step over the step's work on the compute stream
        for (std::size_t k = 0; k < m.step_gpu_begin.size(); ++k) {
          const std::size_t end =
              k + 1 < m.step_gpu_begin.size() ? m.step_gpu_begin[k + 1] : m.gpu.size();
          std::int64_t first = INT64_MAX, last = INT64_MIN;
          for (std::size_t g = m.step_gpu_begin[k]; g < end; ++g) {
            if (m.gpu[g].stream != compute) continue;
            first = std::min(first, m.gpu[g].start);
            last = std::max(last, m.gpu[g].start + m.gpu[g].dur);
          }
          if (first > last) continue;
          sep();
          fmt::format_to(std::back_inserter(doc),
                         "{{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": "
                         "\"ProfilerStep#{}\", \"pid\": {}, \"tid\": {}, \"ts\": ",
                         k, m.device, stream_out(compute));
          ts(doc, first);
          doc += ", \"dur\": ";
          dur(doc, last - first);
          doc += ", \"args\": {}}";
        }
      }
      std::map<std::int64_t, std::int64_t> stream_end;  // per stream: end of the last work
      int queued = 0;
      for (const detail::GpuEvent& g : m.gpu) {
        if (q.cpu_activities_only) break;
        if (!in_window(g.start)) continue;  // cut: the profiler stopped before it ran
        std::int64_t corr = g.zero_correlation ? 0
                            : g.linked         ? g.correlation
                                               : g.correlation + 50'000'000;
        if (q.renumber_gpu_correlations) corr += 70'000'000;
        // XPU: SYCL queue ids (pointer-like) in tid and args.queue instead of a stream.
        const std::int64_t stream =
            q.xpu ? 94'371'245'056'000 + 256 * stream_out(g.stream) : stream_out(g.stream);
        // number_forms: every other queued kernel (it started when its predecessor ended) is
        // written 2 ns earlier, ending where it ended: two clocks rounded apart.
        std::int64_t start = g.start;
        std::int64_t length = g.dur;
        const auto previous = stream_end.find(g.stream);
        if (q.number_forms && previous != stream_end.end() && previous->second == g.start &&
            g.dur > 0 && ++queued % 2 == 0) {
          start -= 2;
          length += 2;
        }
        stream_end[g.stream] = g.start + g.dur;
        std::string args_text =
            fmt::format("\"device\": {}, \"{}\": {}", g.device, q.xpu ? "queue" : "stream", stream);
        if (q.args_correlation || !g.linked) {
          fmt::format_to(std::back_inserter(args_text),
                         ", \"correlation\": {}, \"External id\": {}", corr, corr);
        }
        if (!g.args.empty()) args_text += ", " + g.args;
        const std::string row =
            fmt::format("\"cat\": \"{}\", \"name\": \"{}\", \"pid\": {}, \"tid\": {}",
                        category(g.cat, g.name), g.name, g.device, stream);
        if (q.duration_pairs) {
          add_pair(row, fmt::format("{}", g.device), fmt::format("{}", stream), start, length,
                   args_text, category(g.cat, g.name), g.name);
        } else {
          sep();
          doc += "{\"ph\": \"X\", " + row + ", \"ts\": ";
          ts(doc, start);
          doc += ", \"dur\": ";
          dur(doc, length);
          doc += ", \"args\": {" + args_text + "}}";
        }
        if (q.flows && g.linked) {
          sep();
          fmt::format_to(std::back_inserter(doc),
                         "{{\"ph\": \"f\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": ", corr,
                         g.device, stream);
          ts(doc, start);
          fmt::format_to(std::back_inserter(doc),
                         ", \"cat\": \"{}\", \"name\": \"{}\", \"bp\": \"e\"}}", flow_cat,
                         flow_cat);
        }
      }
      std::stable_sort(pair_rows.begin(), pair_rows.end(), [](const PairRow& a, const PairRow& b) {
        if (a.ns != b.ns) return a.ns < b.ns;
        if (a.phase != b.phase) return a.phase < b.phase;
        return a.tiebreak < b.tiebreak;
      });
      for (const PairRow& row : pair_rows) {
        sep();
        doc += row.text;
      }
      pair_rows.clear();
    }
    doc += "\n  ]";
    if (q.relative_time)
      fmt::format_to(std::back_inserter(doc), ",\n  \"baseTimeNanoseconds\": {}", base_ns);
    doc += "\n}\n";
    out.names.push_back(fmt::format("{}_rank{}.json{}", label, f, q.gzip ? ".gz" : ""));
    out.files.push_back(q.gzip ? detail::gzip_bytes(doc) : std::move(doc));
  }
  return out;
}

/// Runs the ground-truth model of `steps` training steps on every rank of the shape and writes
/// the traces. Deterministic.
inline GeneratedTraces make_shape_traces(Shape shape, int steps = 3) {
  return make_traces(quirks_of(shape), shape_name(shape), steps);
}

}  // namespace powertrain::test_support
