"""CUDA: step timing events, allocator statistics, allocation history and the out-of-memory observer."""
import os


class GpuMixin(object):
    def _on_cuda_init(self):
        torch = self.torch
        attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
        if attach is not None:
            attach(lambda device, alloc, device_alloc, device_free: self._guarded(self._on_oom, device, alloc, device_alloc, device_free))
        if self.memory_history_always:
            self._start_history()
        self._arm_time_window()

    def _on_oom(self, device, alloc_bytes, device_allocated_bytes, device_free_bytes):
        path = None
        if self.oom_snapshot is None and self.run_dir:
            path = os.path.join(self.run_dir, "oom-%s.pickle" % self.tag)
            self.torch.cuda.memory._dump_snapshot(path)
            self.oom_snapshot = path
        self._announce()
        self._send(
            "oom",
            {
                "step": self.step + 1,
                "device": device,
                "allocBytes": alloc_bytes,
                "deviceAllocatedBytes": device_allocated_bytes,
                "deviceFreeBytes": device_free_bytes,
                "snapshot": path,
            },
        )

    def _gpu_step_times(self, record=True):
        """Records this step's end event (when CUDA is in use) and returns [[step, seconds], ...] for
        the steps whose end event the GPU has reached since the last call. Never blocks."""
        torch = self.torch
        if self.gpu_events_failed:
            return []
        try:
            if not torch.cuda.is_initialized():
                return []
            capturing = getattr(torch.cuda, "is_current_stream_capturing", None)
            if record and capturing is not None and capturing():
                return []  # inside a CUDA graph capture an event would become part of the graph
            if record:
                ev = torch.cuda.Event(enable_timing=True)
                ev.record()
                self.gpu_events.append((self.step, ev))
            done = []
            while len(self.gpu_events) >= 2 and self.gpu_events[1][1].query():
                (_, a), (step, b) = self.gpu_events[0], self.gpu_events[1]
                done.append([step, a.elapsed_time(b) / 1000.0])
                self.gpu_events.pop(0)
            if len(self.gpu_events) > 4096:  # the GPU is stuck: keep memory bounded
                del self.gpu_events[:-2]
            return done
        except Exception:
            # e.g. a stream capture (CUDA graphs) in progress: host timing only, not an error.
            self.gpu_events_failed = True
            self.gpu_events = []
            return []

    def _memory_stats(self):
        torch = self.torch
        try:
            if not torch.cuda.is_initialized():
                return None
        except Exception:
            return None
        device = torch.cuda.current_device()
        raw = getattr(torch._C, "_cuda_memoryStats", None)
        if raw is not None:
            # The C call's nested dict: torch.cuda.memory_stats() flattens it in Python, which
            # cost most of the probe's per-step time on an H200 (0.6 ms on a 15 ms step).
            try:
                n = raw(device)
                return {
                    "device": device,
                    "allocatedBytes": n["allocated_bytes"]["all"]["current"],
                    "reservedBytes": n["reserved_bytes"]["all"]["current"],
                    "peakAllocatedBytes": n["allocated_bytes"]["all"]["peak"],
                    "peakReservedBytes": n["reserved_bytes"]["all"]["peak"],
                    "allocRetries": n.get("num_alloc_retries"),
                    "ooms": n.get("num_ooms"),
                }
            except Exception:
                pass
        s = torch.cuda.memory_stats()
        return {
            "device": device,
            "allocatedBytes": s.get("allocated_bytes.all.current"),
            "reservedBytes": s.get("reserved_bytes.all.current"),
            "peakAllocatedBytes": s.get("allocated_bytes.all.peak"),
            "peakReservedBytes": s.get("reserved_bytes.all.peak"),
            "allocRetries": s.get("num_alloc_retries"),
            "ooms": s.get("num_ooms"),
        }

    def _start_history(self):
        rec = self.torch.cuda.memory._record_memory_history
        try:
            rec(max_entries=100000)
        except TypeError:  # torch < 2.1
            rec(True)
        self.history_on = True

    def _stop_history(self):
        rec = self.torch.cuda.memory._record_memory_history
        try:
            rec(enabled=None)
        except TypeError:
            rec(False)
        self.history_on = False
