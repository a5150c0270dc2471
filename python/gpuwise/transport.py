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
        self.fd = None  # the records file, a raw descriptor: no file object whose finalizer could close a reused number
        self.owned = None  # (st_dev, st_ino) of what the probe opened: its descriptor may since be the script's
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
                self.owned = _identity(s.fileno())
                self.mode = "socket"
                return
            except OSError:
                self.sock = None
        self._open_file()

    def _open_file(self):
        self._let_go()
        self.mode = "none"
        if self.run_dir:
            try:
                os.makedirs(self.run_dir, exist_ok=True)
                # Appended and unbuffered: each batch reaches the disk even if the process is killed.
                path = os.path.join(self.run_dir, "probe-%d.jsonl" % self.pid)
                self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
                self.owned = _identity(self.fd)
                self.mode = "file"
            except OSError:
                self.fd = None  # no place for records: the training goes on without them

    def _ours(self, fd):
        """Whether descriptor `fd` is still what the probe opened. A script may close every descriptor
        (os.closerange, as daemonizing code does) and open its own under the same number: writing there would put
        records in the script's file or socket, closing it would close the script's."""
        return self.owned is not None and _identity(fd) == self.owned

    def _let_go(self):
        """Gives up the socket and the file: closed if still the probe's, else only forgotten."""
        if self.sock is not None:
            if self._ours(self.sock.fileno()):
                try:
                    self.sock.close()
                except OSError:
                    pass
            else:
                self.sock.detach()
        if self.fd is not None and self._ours(self.fd):
            try:
                os.close(self.fd)
            except OSError:
                pass
        self.sock = None
        self.fd = None
        self.owned = None

    def after_fork(self):
        """In a forked child (a DataLoader worker, most often): its copy of the parent's socket is closed at once, so
        the collector sees the parent's end when the parent ends, not when its last worker does (a SIGKILLed rank's
        workers outlive it). Only this process's descriptor is closed; the parent's connection is untouched. The
        file's copy too; the next write opens this process's own."""
        self._let_go()
        self.pid = os.getpid()
        self.opened = False

    def write(self, data, block=True):
        """Writes complete JSON lines (bytes, one batch); never raises, whatever became of the collector or of the
        probe's descriptors. Returns what was not written: with `block=False`, the part the socket did not take at
        once (b"" when all of it went)."""
        if os.getpid() != self.pid:
            self.after_fork()  # a forked child never shares the parent's socket or file
        if not self.opened:
            self._open()
        if self.sock is not None:
            if not self._ours(self.sock.fileno()):
                self._open_file()  # the script closed the connection's descriptor: the records go to the file
            else:
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
        for attempt in (0, 1):
            if self.fd is None:
                return b""
            if not self._ours(self.fd):
                self._open_file()  # closed under the probe: the same file, opened again
                continue
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self.fd, view):]
                return b""
            except OSError:
                data = bytes(view)
                if attempt == 0:
                    self._open_file()
        self._let_go()  # the file takes nothing (a full disk): the records stop, the training goes on
        self.mode = "none"
        return b""

    def _wait_writable(self):
        """Waits until the socket takes more, at most SEND_TIMEOUT_S (then the collector is taken to be gone)."""
        p = select.poll()
        p.register(self.sock, select.POLLOUT)
        if not p.poll(SEND_TIMEOUT_S * 1000):
            raise TimeoutError("the collector took nothing for %.0f s" % SEND_TIMEOUT_S)

    def close(self):
        self._let_go()


def _identity(fd):
    try:
        st = os.fstat(fd)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)
