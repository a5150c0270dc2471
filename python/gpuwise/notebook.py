"""gpuwise inside Jupyter (IPython): `%load_ext gpuwise`, then

- `%gpuwise monitor` shows the Live GPUs panel of `gpuwise serve` inline (the server is started on demand,
  once per kernel, on loopback; behind jupyter-server-proxy the panel is reached through /proxy/PORT/);
- `%%gpuwise doctor [--steps N] [--profile-at N] [--profile-steps N]` runs the cell under the same probe
  `gpuwise doctor` injects (steps, DataLoader waits, allocator memory, a profiler window, the OOM observer),
  in the kernel's own process, hands its records to the server while the cell runs (the run page streams
  them), and shows the doctor report inline when the cell ends; the run is saved in the history like any
  other. An exception in the cell, out of memory included, ends the run (explained in the report) and the
  kernel keeps running;
- `gpuwise.memory_report(path=None)` explains a CUDA memory snapshot inline (by default the last
  out-of-memory snapshot a doctor cell took, else a snapshot taken now).

The Node side is found through GPUWISE_CLI (a command line, e.g. "node /path/gpuwise.mjs"), else `gpuwise` on
PATH, else the repository's dist/gpuwise.mjs run by `node`. The history folder is GPUWISE_STORE (else
~/.gpuwise), as for the CLI. Nothing here imports torch before the cell does.
"""
import atexit
import html
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

_SERVER = None
_LAST_OOM_SNAPSHOT = None
START_TIMEOUT_S = 30.0


class GpuwiseNotebookError(Exception):
    """A problem the user can act on, shown as one line."""


# ---------------------------------------------------------------- the server ----------


def _cli_command():
    env = os.environ.get("GPUWISE_CLI")
    if env:
        return shlex.split(env)
    found = shutil.which("gpuwise")
    if found:
        return [found]
    bundle = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "dist", "gpuwise.mjs")
    node = shutil.which("node")
    if node and os.path.exists(bundle):
        return [node, bundle]
    raise GpuwiseNotebookError(
        "cannot find the gpuwise command: install it (npm, or the pip wheel), or set GPUWISE_CLI, e.g. GPUWISE_CLI='node /path/to/dist/gpuwise.mjs'"
    )


class Server(object):
    """One `gpuwise serve` per kernel, on loopback, stopped when the kernel exits."""

    def __init__(self, url, token, proc):
        self.url = url  # http://127.0.0.1:PORT/
        self.token = token
        self.proc = proc
        self.port = int(re.search(r":(\d+)/$", url).group(1))

    def request(self, path, body=None, content_type="application/json", timeout=600):
        req = urllib.request.Request(self.url + path, data=body, method="POST" if body is not None else "GET")
        req.add_header("Authorization", "Bearer " + self.token)
        if body is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                data = r.read()
        except urllib.error.HTTPError as e:
            text = e.read().decode("utf-8", "replace")
            try:
                text = json.loads(text).get("error", text)
            except ValueError:
                pass
            raise GpuwiseNotebookError("gpuwise serve: %s" % text)
        return data

    def post_json(self, path, obj, timeout=600):
        return json.loads(self.request(path, json.dumps(obj).encode("utf-8"), timeout=timeout).decode("utf-8"))

    def alive(self):
        return self.proc is None or self.proc.poll() is None

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def server():
    """The kernel's `gpuwise serve`, started on first use."""
    global _SERVER
    if _SERVER is not None and _SERVER.alive():
        return _SERVER
    cmd = _cli_command() + ["serve", "--port", "0", "--host", "127.0.0.1"]
    if os.environ.get("GPUWISE_STORE"):
        cmd += ["--store", os.environ["GPUWISE_STORE"]]
    log = tempfile.NamedTemporaryFile(prefix="gpuwise-serve-", suffix=".log", delete=False)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL)
    line = [None]

    def read_first():
        line[0] = proc.stdout.readline().decode("utf-8", "replace")

    t = threading.Thread(target=read_first, daemon=True)
    t.start()
    t.join(START_TIMEOUT_S)
    m = re.match(r"gpuwise serve: (http://[^/]+/)\?token=(\S+)", line[0] or "")
    if not m:
        proc.kill()
        log.close()
        with open(log.name, "r", errors="replace") as f:
            why = f.read().strip().splitlines()
        raise GpuwiseNotebookError("gpuwise serve did not start (%s)" % (why[-1] if why else "no output in %.0f s" % START_TIMEOUT_S))
    _SERVER = Server(m.group(1), m.group(2), proc)
    atexit.register(_SERVER.stop)
    return _SERVER


def _panel_src(srv, path):
    """Where the browser reaches a server page: through jupyter-server-proxy when it is installed (the browser may
    not be on the kernel's machine), else the loopback URL. GPUWISE_NOTEBOOK_PROXY=0/1 forces the choice."""
    want = os.environ.get("GPUWISE_NOTEBOOK_PROXY")
    if want is None:
        try:
            import jupyter_server_proxy  # noqa: F401

            want = "1"
        except ImportError:
            want = "0"
    sep = "&" if "?" in path else "?"
    if want == "1":
        prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/")
        return "%sproxy/%d/%s%stoken=%s" % (prefix if prefix.endswith("/") else prefix + "/", srv.port, path, sep, srv.token)
    return "%s%s%stoken=%s" % (srv.url, path, sep, srv.token)


def _display(html_text, text):
    from IPython.display import display

    display({"text/html": html_text, "text/plain": text}, raw=True)


def _inline_page(page_html, title, height=900):
    """A self-contained report page shown in an iframe: its styles cannot leak into the notebook, and the output
    keeps it (the notebook shows it again without any server)."""
    return '<iframe title="%s" style="width:100%%;height:%dpx;border:1px solid #ddd" srcdoc="%s"></iframe>' % (html.escape(title), height, html.escape(page_html, quote=True))


# ---------------------------------------------------------------- %gpuwise monitor ----------


def monitor(height=560):
    srv = server()
    src = _panel_src(srv, "live-panel")
    _display(
        '<iframe title="gpuwise live GPUs" src="%s" style="width:100%%;height:%dpx;border:0"></iframe>' % (html.escape(src, quote=True), height),
        "gpuwise live GPUs: %s" % src,
    )
    return None


# ---------------------------------------------------------------- %%gpuwise doctor ----------


class _Streamer(threading.Thread):
    """Sends the probe's record file to the server as it grows (complete lines only), once a second."""

    def __init__(self, srv, run_id, path):
        threading.Thread.__init__(self, daemon=True)
        self.srv, self.run_id, self.path = srv, run_id, path
        self.offset = 0
        self.done = threading.Event()
        self.error = None

    CHUNK = 4 << 20  # the server takes bodies up to 8 MB

    def flush(self):
        if not os.path.exists(self.path):
            return
        while True:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read(self.CHUNK)
            end = data.rfind(b"\n") + 1
            if end <= 0:
                return
            self.srv.request("api/runs/live/records?id=" + urllib.parse.quote(self.run_id), data[:end], "application/x-ndjson")
            self.offset += end

    def run(self):
        while not self.done.wait(1.0):
            try:
                self.flush()
            except Exception as e:  # the final flush reports it; the training never waits on the server
                self.error = e

    def finish(self):
        self.done.set()
        self.join(5)
        self.flush()


def _parse_doctor_args(line):
    import argparse

    p = argparse.ArgumentParser(prog="%%gpuwise doctor", add_help=False)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--profile-at", type=int, default=None)
    p.add_argument("--profile-steps", type=int, default=None)
    p.add_argument("--out", default=None)
    try:
        return p.parse_args(shlex.split(line))
    except SystemExit:
        raise GpuwiseNotebookError("usage: %%gpuwise doctor [--steps N] [--profile-at N] [--profile-steps N] [--out DIR]")


def _probe_for_cell(env):
    """A fresh probe for this cell, installed into torch for the cell and taken out at its end (_finish_probe), so
    nothing of gpuwise's stays in the kernel between cells."""
    from gpuwise import probe as probe_mod

    p = probe_mod.start(env)
    probe_mod._PROBE = p
    if p.torch is not None and p.step_hook == "optimizer-step-wrapper":
        p.guarded(_wrap_existing_optimizers, p, p.torch)
    # An optimizer built in an earlier cell went past the probe's constructor hook: without this the DataLoader's
    # batches took over as the step source before the optimizer stepped (torch 2.11 on an H100: "no optimizer").
    p.steps.saw_optimizer_built()
    # The cell's allocations are recorded from its start (not only over the profiled window), so an out-of-memory
    # error anywhere in it is explained by memory_report(): on an H100, a cell run with --profile-steps 0 left an OOM
    # snapshot without history, and its report had nothing to say. CUDA initialised in an earlier cell never calls
    # the probe's init hook again, so the history starts here; a cell that initialises CUDA starts it there.
    p.cfg.memory_history_always = True
    _start_cell_history(p)
    return p


def _start_cell_history(p):
    """Fail-open: a history that cannot be recorded (another backend, an old torch) leaves the rest of the probe on."""
    torch = p.torch
    try:
        if torch is not None and not p.gpu.history_on and torch.cuda.is_available() and torch.cuda.is_initialized():
            p.gpu.start_history()
    except Exception:
        pass


def _wrap_existing_optimizers(p, torch):
    """torch < 2.0 has no global optimizer hook: the probe wraps an optimizer class's `step` when one is built. In a
    notebook the optimizer is often built in an earlier cell, before the probe: wrap the classes that exist now, with
    the probe's own wrapper (one per class, reporting to the cell's probe)."""
    from gpuwise import probe as probe_mod

    todo, seen = [torch.optim.Optimizer], set()
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        todo.extend(cls.__subclasses__())
        probe_mod.wrap_optimizer_step(torch, p.steps, p.patches, cls)
    p.steps.saw_optimizer_built()


def _finish_probe(p, error):
    if error is not None and not (isinstance(error, SystemExit) and p.ended):
        p.guarded(p.on_exception, type(error), error)
    else:
        p.guarded(p.window.stop, "exit")
        p.background.wait_jobs(60.0)
        if p.announced and not p.ended:
            p.guarded(p.end, "exit")
    if p.gpu is not None and p.gpu.history_on:
        try:
            p.gpu.stop_history()  # the OOM snapshot, if any, was written when the error happened
        except Exception:
            pass
    p.sender.flush()
    p.switch_off()  # nothing of the probe's stays in the kernel between cells
    p.sink.close()


def _release_after_error(shell):
    """After an exception (out of memory above all) IPython keeps the traceback, and with it every tensor of the
    failed frames; dropping it lets the allocator give the memory back, so the kernel can go on."""
    for name in ("last_type", "last_value", "last_traceback"):
        if hasattr(sys, name):
            setattr(sys, name, None)
    try:
        shell.InteractiveTB.tb = None
    except Exception:
        pass
    import gc

    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_initialized():
                torch.cuda.empty_cache()
        except Exception:
            pass


def doctor_cell(shell, line, cell):
    global _LAST_OOM_SNAPSHOT
    args = _parse_doctor_args(line)
    srv = server()
    started = time.time()
    if args.out:
        run_dir = os.path.abspath(args.out)
        os.makedirs(run_dir, exist_ok=True)
    else:
        run_dir = os.path.abspath(os.path.join("gpuwise-runs", "nb-" + time.strftime("%Y%m%d-%H%M%S", time.localtime(started))))
        base, n = run_dir, 2
        while os.path.exists(run_dir):
            run_dir, n = "%s-%d" % (base, n), n + 1
        os.makedirs(run_dir)
    env = {"GPUWISE_RUN_DIR": run_dir}
    for flag, name in (("steps", "GPUWISE_MAX_STEPS"), ("profile_at", "GPUWISE_PROFILE_AT"), ("profile_steps", "GPUWISE_PROFILE_STEPS")):
        if getattr(args, flag) is not None:
            env[name] = str(getattr(args, flag))
    first = next((l.strip() for l in cell.splitlines() if l.strip() and not l.strip().startswith("#")), "")
    command = ["%%gpuwise doctor" + (" " + line.strip() if line.strip() else ""), first[:120]]
    run_id = srv.post_json("api/runs/live/start", {"command": command, "runDir": run_dir, "startedAtMs": int(started * 1000)})["id"]
    live_src = _panel_src(srv, "run?id=" + urllib.parse.quote(run_id))
    _display('<div style="font-size:12px;color:#666">gpuwise doctor: profiling this cell (<a href="%s" target="_blank">follow it live</a>)</div>' % html.escape(live_src, quote=True), "gpuwise doctor: profiling this cell")

    p = _probe_for_cell(env)
    records = os.path.join(run_dir, "probe-%d.jsonl" % os.getpid())
    streamer = _Streamer(srv, run_id, records)
    streamer.start()
    error = None
    try:
        result = shell.run_cell(cell, store_history=False)
        error = result.error_in_exec
    finally:
        _finish_probe(p, error)
        if p.oom_snapshot:
            _LAST_OOM_SNAPSHOT = p.oom_snapshot
        try:
            streamer.finish()
        except Exception as e:
            raise GpuwiseNotebookError("the records could not be handed to gpuwise serve (%s); they are in %s" % (e, records))
    exit_code = 0
    if error is not None:
        exit_code = 0 if isinstance(error, SystemExit) and p.ended and not p.exception else 1
        _release_after_error(shell)
    notes = []
    if p.steps.step == 0:
        notes.append("no training step was seen in the cell (no optimizer step, no DataLoader batch, no gpuwise.step())")
    try:
        out = srv.post_json("api/runs/live/end?id=" + urllib.parse.quote(run_id), {"exitCode": exit_code, "notes": notes, "cwd": os.getcwd()})
    except (OSError, ValueError) as e:
        raise GpuwiseNotebookError("gpuwise serve did not build the report (%s); the records are in %s" % (e, records))
    saved = "saved as run %s (gpuwise runs show %s)" % (out["runId"], out["runId"]) if out.get("runId") else "not saved in the history: %s" % out.get("saveError")
    _display(
        _inline_page(out["html"], "gpuwise doctor report") + '<div style="font-size:12px;color:#666">gpuwise doctor: %s; run directory %s</div>' % (html.escape(saved), html.escape(run_dir)),
        out["text"] + "\n" + saved + "\n",
    )
    return None


# ---------------------------------------------------------------- memory_report() ----------


def memory_report(path=None):
    """Explains a CUDA memory snapshot inline: `path`, else the last out-of-memory snapshot of a doctor cell, else
    one taken now (with allocation history when it was being recorded)."""
    if path is None:
        path = _LAST_OOM_SNAPSHOT
    if path is None:
        torch = sys.modules.get("torch")
        if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
            raise GpuwiseNotebookError("no snapshot to explain: give a path, run the training in a %%gpuwise doctor cell (it keeps the out-of-memory snapshot), or use CUDA first")
        path = os.path.join(tempfile.mkdtemp(prefix="gpuwise-snapshot-"), "snapshot.pickle")
        torch.cuda.memory._dump_snapshot(path)
    srv = server()
    with open(path, "rb") as f:
        data = f.read()
    opened = json.loads(srv.request("api/reports/upload?name=" + urllib.parse.quote(os.path.basename(path)), data, "application/octet-stream").decode("utf-8"))
    page = srv.request("report-full?id=" + urllib.parse.quote(opened["id"])).decode("utf-8")
    _display(_inline_page(page, "gpuwise memory report"), "gpuwise memory: %s: %s" % (path, opened.get("headline", "")))
    return None


# ---------------------------------------------------------------- the magics ----------


def load(ip):
    from IPython.core.magic import Magics, line_cell_magic, magics_class

    @magics_class
    class GpuwiseMagics(Magics):
        @line_cell_magic
        def gpuwise(self, line, cell=None):
            """%gpuwise monitor | %%gpuwise doctor [--steps N] [--profile-at N] [--profile-steps N] [--out DIR]"""
            words = line.split(None, 1)
            sub = words[0] if words else ""
            rest = words[1] if len(words) > 1 else ""
            try:
                if sub == "monitor" and cell is None:
                    return monitor()
                if sub == "doctor" and cell is not None:
                    return doctor_cell(self.shell, rest, cell)
                raise GpuwiseNotebookError("usage: %gpuwise monitor, or %%gpuwise doctor [options] on the first line of a cell that trains")
            except GpuwiseNotebookError as e:
                sys.stderr.write("gpuwise: %s\n" % e)
                return None

    ip.register_magics(GpuwiseMagics)
