"""Where probe records go: JSON lines to the collector's Unix socket, else appended to a file.

The socket (GPUWISE_SOCKET) is tried first; when nothing listens there, or the collector goes
away mid-run, records are appended to GPUWISE_RUN_DIR/probe-<pid>.jsonl instead, so the training
never waits on or fails because of gpuwise. The socket is non-blocking: a write that may not wait returns what the
socket did not take, and one that may waits at most SEND_TIMEOUT_S.

The socket is the one resource of the probe's that stays in the process. It is connected when the probe starts
(`connect_early`, before the script runs: an audit hook or a socket guard the script installs never meets it), made
with `_socket` (a guard that replaces `socket.socket` does not see it), close-on-exec, and moved to a high descriptor
number, so the script's own descriptors get the numbers they get without doctor and a script that closes fd 1 never
finds the probe's socket there. A forked child gives up its copy (`after_fork`).
"""
import _socket
import os
import select

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

    def connect_early(self):
        """The socket connected now, when the probe starts; left for the first record when no collector answers."""
        if not self.opened and self.socket_path:
            self._connect()
            self.opened = self.sock is not None

    def _open(self):
        self.opened = True
        if not self._connect():
            self._open_file()

    def _connect(self):
        if not self.socket_path:
            return False
        try:
            s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            try:
                s.settimeout(SEND_TIMEOUT_S)
                s.connect(self.socket_path)
                high = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM, 0, _high_fd(s.fileno()))
            finally:
                s.close()
            high.setblocking(False)  # a write never waits unless asked to, and then at most SEND_TIMEOUT_S
            self.sock = high
            self.owned = _identity(high.fileno())
            self.mode = "socket"
            return True
        except OSError:
            self.sock = None
            return False

    def _open_file(self):
        self._let_go()
        self.mode = "none"
        if self.run_dir:
            try:
                os.makedirs(self.run_dir, exist_ok=True)
                # Appended and unbuffered: each batch reaches the disk even if the process is killed.
                path = os.path.join(self.run_dir, "probe-%d.jsonl" % self.pid)
                low = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
                try:
                    self.fd = _high_fd(low)
                finally:
                    os.close(low)
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


# The lowest number tried for the probe's descriptors: high, but under the usual soft limit of 1024 (select() and
# scripts that walk 0..1023 stay in range); lower floors where the limit is lower.
_HIGH_FLOORS = (960, 448, 192, 64, 10)


def _high_fd(fd):
    """A close-on-exec duplicate of `fd` at a high number (the caller closes `fd`)."""
    import fcntl

    for floor in _HIGH_FLOORS:
        try:
            return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, floor)
        except OSError:
            continue  # EINVAL: the floor is at or above RLIMIT_NOFILE
    return os.dup(fd)


def _identity(fd):
    try:
        st = os.fstat(fd)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)
