# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Request trace for the benchmarks (tests/bench): loaded by every Python process whose PYTHONPATH
holds this directory, active only when INPLACE_BENCH_TRACE names a file.

When urllib3's connection pools are imported, their urlopen is wrapped so that each HTTP request the process makes
(every Kubernetes client goes through one: the kubernetes package's pool manager and our modules' transport alike)
appends one JSON line to the trace:
pid, start time, method, path, whether it is a watch, HTTP status, and the process start time
(from /proc, 10 ms resolution). The rollout steps' prepare, batch and finish each append a line with
their start and end (event phase) and the process's CPU seconds at both. A process that makes no request
writes nothing but, at exit, a line with its exit time, its peak resident set (VmHWM) and its own CPU
seconds (user + system) once it has made one.

With INPLACE_BENCH_PROFILE naming a directory as well, every process that loads this hook runs under
cProfile and writes its statistics to <directory>/<pid>.prof at exit: where a rollout's CPU goes,
function by function (``hack/bench.sh`` with PROFILE=dir).
"""

import atexit
import importlib.machinery
import json
import os
import sys
import time

TRACE = os.environ.get('INPLACE_BENCH_TRACE')
PROFILE = os.environ.get('INPLACE_BENCH_PROFILE')


def process_start():
    """Epoch seconds at which this process started, from /proc (clock ticks since boot)."""
    with open('/proc/self/stat') as stat:
        fields = stat.read().rsplit(')', 1)[1].split()
    with open('/proc/uptime') as uptime:
        up = float(uptime.read().split()[0])
    return time.time() - (up - int(fields[19]) / os.sysconf('SC_CLK_TCK'))


def peak_mib():
    """This process's peak resident set (VmHWM) in MiB, or None."""
    try:
        with open('/proc/self/status') as status:
            for line in status:
                if line.startswith('VmHWM:'):
                    return round(int(line.split()[1]) / 1024.0, 1)
    except (IOError, OSError, ValueError):
        pass
    return None


class Recorder(object):
    """Appends JSON lines to the trace file (one write per line, O_APPEND: safe across processes)."""

    def __init__(self, path):
        self.path = path
        self.started = None
        self.fd = None

    def write(self, **fields):
        if self.fd is None:
            self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            self.started = process_start()
            atexit.register(self.exit)
        fields.update(pid=os.getpid(), proc_start=self.started)
        os.write(self.fd, (json.dumps(fields, sort_keys=True) + '\n').encode('utf-8'))

    def exit(self):
        self.write(event='exit', t=time.time(), peak_mib=peak_mib(), cpu=cpu_seconds())


def traced(original, recorder):
    def urlopen(self, method, url, *args, **kwargs):
        start = time.time()
        status = None
        try:
            response = original(self, method, url, *args, **kwargs)
            status = getattr(response, 'status', None)
            return response
        finally:
            target = url.partition('://')[2].partition('/')[2] if '://' in url else url.lstrip('/')   # a proxy's URL
            path, dummy, query = target.partition('?')
            recorder.write(event='request', t=start, method=method, path='/' + path,
                           watch='watch=true' in query or 'watch=1' in query, status=status)
    return urlopen


class PatchHook(object):
    """Meta path finder: ``patch(module)`` right after the module ``name`` is imported. The spec gets a loader of
    its own; the found one is not patched in place (a zip's loader serves every module of the zip)."""

    def __init__(self, name, patch):
        self.name, self.patch = name, patch

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = Loader(spec.loader, self.patch)
        return spec


class Loader(object):
    """``inner``'s module, then ``after(module)``."""

    def __init__(self, inner, after):
        self.inner, self.after = inner, after

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        self.after(module)


ROLLOUT = 'ansible_collections.inplace.k8s.plugins.module_utils.rollout.'
# phase -> (module, class, method): the rollout's steps are collaborators of Rollout (rollout/steps.py), each its own
# class; the finish's method is the one both the loop and state finish run.
PHASES = {'prepare': (ROLLOUT + 'plan', 'PlanStep', 'prepare'), 'batch': (ROLLOUT + 'batch_step', 'BatchStep', 'batch'),
          'finish': (ROLLOUT + 'finish', 'FinishStep', 'run_finish')}


def cpu_seconds():
    """This process's CPU seconds so far (user + system, all its threads)."""
    usage = os.times()
    return round(usage.user + usage.system, 3)


def timed(original, recorder, phase):
    def method(self, *args, **kwargs):
        start, cpu = time.time(), cpu_seconds()
        try:
            return original(self, *args, **kwargs)
        finally:
            recorder.write(event='phase', phase=phase, t=start, end=time.time(), cpu=cpu, cpu_end=cpu_seconds())
    return method


def trace_requests(recorder):
    """Each HTTP request sent by a urllib3 connection pool (a pool manager's requests go through one of its pools;
    our modules talk to the API server's pool directly)."""
    def patch(module):
        module.HTTPConnectionPool.urlopen = traced(module.HTTPConnectionPool.urlopen, recorder)
    return PatchHook('urllib3.connectionpool', patch)


def time_steps(recorder):
    """The rollout steps (PlanStep.prepare, BatchStep.batch, FinishStep.run_finish) of a module process, so that one
    process running them all (state rollout) still shows where its prepare ends and its finish starts: a hook per
    module of a step."""
    def patcher(phase, cls, method):
        def patch(module):
            owner = getattr(module, cls)
            setattr(owner, method, timed(getattr(owner, method), recorder, phase))
        return patch
    return [PatchHook(name, patcher(phase, cls, method)) for phase, (name, cls, method) in sorted(PHASES.items())]


def profile(directory):
    """cProfile for this whole process, its statistics written to ``directory``/<pid>.prof at exit (a forked
    child that ends with os._exit, as Ansible's workers do, writes none)."""
    import cProfile
    profiler = cProfile.Profile()

    def dump():
        profiler.disable()
        profiler.dump_stats(os.path.join(directory, '%d.prof' % os.getpid()))
    atexit.register(dump)
    profiler.enable()


if TRACE:
    _recorder = Recorder(TRACE)
    sys.meta_path[:0] = [trace_requests(_recorder)] + time_steps(_recorder)
    if PROFILE:
        profile(PROFILE)
