"""powertrain: Perseus time-energy frontiers, Kineto trace replay and the training-side plan client.

    import powertrain
    run = powertrain.frontier()                       # built-in example; numpy arrays + summary
    run = powertrain.frontier("profile.csv", pp=4, p_blocking_w=83.6)
    run = powertrain.frontier(model="gpt3-2.7b", gpu="a100-sxm", pp=4)
    summary = powertrain.replay(["trace_rank0.json.gz"])

A Megatron/PyTorch loop that uses Zeus's pipeline frequency optimizer switches with one line:

    # from zeus.optimizer.pipeline_frequency import PipelineFrequencyOptimizer
    from powertrain import PipelineFrequencyOptimizer
"""

import sys

from ._core import Client, frontier, replay  # noqa: F401

__all__ = ["Client", "frontier", "replay", "PipelineFrequencyOptimizer", "PerseusOptimizer"]


def _default_sync(device_id):
    """Zeus synchronizes the device before changing its clock; do the same when torch is in use."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    return lambda: torch.cuda.synchronize(device_id)


class PipelineFrequencyOptimizer:
    """Drop-in for zeus.optimizer.pipeline_frequency.PipelineFrequencyOptimizer.

    Same constructor arguments and callbacks (on_step_begin, on_step_end, on_instruction_begin,
    on_instruction_end). Differences: clock changes run on a native background thread through NVML
    (dlopen; missing NVML disables clock control with one message), the schedule is fetched in
    the background (it applies from the first step that begins after it arrived; pass
    wait_for_schedule_s to block at construction as Zeus does), and measured iteration time and
    energy are posted to the server every report_every_iterations iterations.

    Rank 0 registers the job; other ranks get its id from torch.distributed (as Zeus does) or
    from the job_id argument.

    In-vivo profiling (Perseus §5; docs/client.md): with start_profiling={...} (usually on rank 0:
    the POST /profiling settings, e.g. microbatches=, iterations_per_clock=) or
    profile_in_vivo=True (the other ranks), the same callbacks follow the server's clock sweep:
    each step runs the clocks the server assigns, the stage's reporting rank posts every swept
    iteration's per-instruction time and energy, and once the server has characterized the
    frontier every rank follows its planned schedule. When the server asks this rank to measure
    P_blocking, on_step_begin first calls p_blocking_probe() (which must keep the GPU blocked on
    P2P communication, e.g. a recv whose peer sleeps) inside a measured window.
    """

    def __init__(self, rank, dp_rank, pp_rank, tp_rank, device_id, dp_degree, pp_degree,
                 tp_degree, world_size, server_url, job_metadata=None, *, job_id=None,
                 nvml_library="", report_every_iterations=0, wait_for_schedule_s=0.0,
                 sync=None, available_frequencies_mhz=None, quiet=False,
                 refresh_schedule_every_iterations=0, profile_in_vivo=False,
                 start_profiling=None, p_blocking_probe=None, num_microbatches=0,
                 job_poll_period_s=0.25):
        if job_id is None and rank != 0:
            job_id = self._receive_job_id()
        common = dict(server_url=server_url, rank=rank, dp_rank=dp_rank, pp_rank=pp_rank,
                      tp_rank=tp_rank, dp_degree=dp_degree, pp_degree=pp_degree,
                      tp_degree=tp_degree, world_size=world_size, device_id=device_id,
                      job_metadata=job_metadata or "", nvml_library=nvml_library,
                      report_every_iterations=report_every_iterations,
                      available_frequencies_mhz=list(available_frequencies_mhz or []),
                      quiet=quiet,
                      refresh_schedule_every_iterations=refresh_schedule_every_iterations,
                      profile_in_vivo=profile_in_vivo, start_profiling=start_profiling,
                      num_microbatches=num_microbatches, job_poll_period_s=job_poll_period_s)
        self._client = Client(job_id=job_id or "", **common)
        if rank == 0 and job_id is None and self._distributed():
            self._send_job_id(self._client.wait_for_job_id(60.0))
        if wait_for_schedule_s > 0 and not self._client.wait_for_schedule(wait_for_schedule_s):
            raise RuntimeError("no schedule from the plan server in %s s: %s"
                               % (wait_for_schedule_s,
                                  self._client.status["last_background_error"]))
        self._sync = sync if sync is not None else _default_sync(device_id)
        self._p_blocking_probe = p_blocking_probe

    @staticmethod
    def _distributed():
        dist = sys.modules.get("torch.distributed")
        return dist is not None and dist.is_available() and dist.is_initialized()

    def _send_job_id(self, job_id):
        import torch.distributed as dist
        dist.broadcast_object_list([job_id], src=0)

    def _receive_job_id(self):
        if not self._distributed():
            raise RuntimeError("ranks other than 0 need job_id= or an initialized torch.distributed")
        import torch.distributed as dist
        objects = [None]
        dist.broadcast_object_list(objects, src=0)
        return objects[0]

    @property
    def client(self):
        """The underlying powertrain.Client (status, iterations, straggler reports, frontier)."""
        return self._client

    @property
    def job_id(self):
        return self._client.job_id

    def on_step_begin(self):
        if self._p_blocking_probe is not None and self._client.p_blocking_requested:
            if self._sync is not None:
                self._sync()
            self._client.on_p_blocking_begin()
            try:
                self._p_blocking_probe()
                if self._sync is not None:
                    self._sync()
            finally:
                self._client.on_p_blocking_end()
        self._client.on_step_begin()

    @property
    def profiling_phase(self):
        """off, waiting, p_blocking, sweep, characterizing or planned (see docs/client.md)."""
        return self._client.status["profiling_phase"]

    def on_step_end(self):
        self._client.on_step_end()

    def on_instruction_begin(self, name):
        if self._sync is not None:
            self._sync()
        self._client.on_instruction_begin(name)

    def on_instruction_end(self, name):
        self._client.on_instruction_end(name)


# The class's name in older Zeus releases.
PerseusOptimizer = PipelineFrequencyOptimizer
