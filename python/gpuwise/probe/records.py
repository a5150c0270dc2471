"""The records the probe sends (hello, end, and the sending itself); see src/run/records.ts for the wire format."""
import os
import platform
import socket
import sys
import time

from .. import PROTOCOL_VERSION, __version__


class RecordsMixin(object):
    def _send(self, kind, fields, wait_s=None):
        rec = {"v": PROTOCOL_VERSION, "type": kind, "pid": os.getpid(), "rank": self.rank, "t": time.time()}
        rec.update(fields)
        if wait_s is None:
            with self.lock:
                self.sink.send(rec)
            return
        # From the watchdog: never wait long on a main thread that is itself stuck sending.
        if not self.lock.acquire(timeout=wait_s):
            return
        try:
            self.sink.send(rec)
        finally:
            self.lock.release()

    def _announce(self):
        if self.announced:
            return
        self.announced = True
        torch = self.torch
        cuda = {"available": False, "initialized": False, "version": None, "devices": [], "currentDevice": None}
        if torch is not None:
            cuda["version"] = getattr(torch.version, "cuda", None)
            try:
                cuda["available"] = bool(torch.cuda.is_available())
                cuda["initialized"] = bool(torch.cuda.is_initialized())
            except Exception:
                pass
            if cuda["initialized"]:
                cuda["currentDevice"] = torch.cuda.current_device()
                for i in range(torch.cuda.device_count()):
                    p = torch.cuda.get_device_properties(i)
                    cuda["devices"].append(
                        {"index": i, "name": p.name, "totalMemoryBytes": p.total_memory, "capability": "%d.%d" % (p.major, p.minor)}
                    )
        cudnn = None
        try:
            cudnn = torch.backends.cudnn.version() if torch is not None else None
        except Exception:
            pass
        self._send(
            "hello",
            {
                "probeVersion": __version__,
                "python": platform.python_version(),
                "torch": getattr(torch, "__version__", None),
                "cudnn": cudnn,
                "cuda": cuda,
                "hostname": socket.gethostname(),
                "argv": list(sys.argv),
                "localRank": self.local_rank,
                "worldSize": self.world_size,
                "stepHook": getattr(self, "step_hook", None),
                "profileAt": self.profile_at,
                "profileSteps": self.profile_steps,
                "maxSteps": self.max_steps,
            },
        )

    def _end(self, reason):
        if self.ended:
            return
        self.ended = True
        gpu_times = []
        if reason in ("exit", "max-steps") and self.gpu_events:
            try:
                self.gpu_events[-1][1].synchronize()  # the last steps' work: bounded, at the very end
                gpu_times = self._gpu_step_times(record=False)
            except Exception:
                gpu_times = []
        self._send("end", {"reason": reason, "steps": self.step, "exception": self.exception, "gpuStepTimes": gpu_times})
