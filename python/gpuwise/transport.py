"""Where probe records go: JSON lines to the collector's Unix socket, else appended to a file.

The socket (GPUWISE_SOCKET) is tried first; when nothing listens there, or the collector goes
away mid-run, records are appended to GPUWISE_RUN_DIR/probe-<pid>.jsonl instead, so the training
never waits on or fails because of gpuwise. The socket is non-blocking: a write that may not wait returns what the
socket did not take, and one that may waits at most SEND_TIMEOUT_S.
"""
import os
import select
import socket

SEND_TIMEOUT_S = 1.0


class Sink(object):
    def __init__(self, socket_path, run_dir):
        self.socket_path = socket_path or None
        self.run_dir = run_dir or None
        self.pid = os.getpid()
        self.sock = None
        self.file = None
        self.mode = "none"
        self.opened = False  # connect on the first record: a process that never reports leaves no trace

    def _open(self):
        self.opened = True
        if self.socket_path:
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(SEND_TIMEOUT_S)
                s.connect(self.socket_path)
                s.setblocking(False)  # a write never waits unless asked to, and then at most SEND_TIMEOUT_S
                self.sock = s
                self.mode = "socket"
                return
            except OSError:
                self.sock = None
        self._open_file()

    def _open_file(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None
        if self.run_dir:
            os.makedirs(self.run_dir, exist_ok=True)
            # Each batch written at once (flushed): it reaches the disk even if the process is killed.
            self.file = open(os.path.join(self.run_dir, "probe-%d.jsonl" % self.pid), "ab")
            self.mode = "file"
        else:
            self.mode = "none"

    def after_fork(self):
        """In a forked child (a DataLoader worker, most often): its copy of the parent's socket is closed at once, so
        the collector sees the parent's end when the parent ends, not when its last worker does (a SIGKILLed rank's
        workers outlive it). Only this process's descriptor is closed; the parent's connection is untouched. The file,
        flushed after every write, is left to the next write's reopen."""
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        self.pid = os.getpid()
        self.sock = None
        self.file = None
        self.opened = False

    def write(self, data, block=True):
        """Writes complete JSON lines (bytes, one batch); never raises for a collector that went away. Returns what
        was not written: with `block=False`, the part the socket did not take at once (b"" when all of it went)."""
        if os.getpid() != self.pid:
            # A forked child: never share the parent's socket or file.
            self.pid = os.getpid()
            self.sock = None
            self.file = None
            self.opened = False
        if not self.opened:
            self._open()
        if self.sock is not None:
            sent = 0
            try:
                while sent < len(data):
                    try:
                        sent += self.sock.send(data[sent:])
                    except BlockingIOError:
                        if not block:
                            return data[sent:]
                        self._wait_writable()
                return b""
            except OSError:
                self._open_file()  # the collector went away: keep the records in files
                data = data[sent:]
        if self.file is not None:
            self.file.write(data)
            self.file.flush()
        return b""

    def _wait_writable(self):
        """Waits until the socket takes more, at most SEND_TIMEOUT_S (then the collector is taken to be gone)."""
        p = select.poll()
        p.register(self.sock, select.POLLOUT)
        if not p.poll(SEND_TIMEOUT_S * 1000):
            raise TimeoutError("the collector took nothing for %.0f s" % SEND_TIMEOUT_S)

    def close(self):
        for f in (self.sock, self.file):
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass
        self.sock = None
        self.file = None
