"""Where probe records go: JSON lines to the collector's Unix socket, else appended to a file.

The socket (GPUWISE_SOCKET) is tried first; when nothing listens there, or the collector goes
away mid-run, records are appended to GPUWISE_RUN_DIR/probe-<pid>.jsonl instead, so the training
never waits on or fails because of gpuwise. Sends use a short timeout for the same reason.
"""
import os
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
            # Line-buffered append: every record reaches the disk even if the process is killed.
            self.file = open(os.path.join(self.run_dir, "probe-%d.jsonl" % self.pid), "a", buffering=1)
            self.mode = "file"
        else:
            self.mode = "none"

    def write(self, text):
        """Writes complete JSON lines (one batch); never raises for a collector that went away."""
        if os.getpid() != self.pid:
            # A forked child: never share the parent's socket or file.
            self.pid = os.getpid()
            self.sock = None
            self.file = None
            self.opened = False
        if not self.opened:
            self._open()
        if self.sock is not None:
            try:
                self.sock.sendall(text.encode("utf-8"))
                return
            except OSError:
                self._open_file()  # the collector went away: keep the records in files
        if self.file is not None:
            self.file.write(text)

    def close(self):
        for f in (self.sock, self.file):
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass
        self.sock = None
        self.file = None
