# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Starts the benchmark's measured children from a small process of its own.

Linux keeps a process's peak RSS (ru_maxrss) across exec: a child forked by the benchmark runner (which
holds the cluster client and every result, well over 100 MiB at N=1000) and then exec'ing ansible-playbook
reports at least the runner's size, whatever ansible-playbook and its modules use. The launcher is started
before the runner grows and stays small, so the peak wait4 reports for a child is that of the child and
its descendants (ansible-playbook, its workers, the modules).

Protocol (JSON lines): the runner writes {command, env, log}; the launcher answers {code, wall, cpu, rss_mib}.
"""

import json
import os
import subprocess
import sys
import time


class Launcher(object):
    """The runner's side: ``run(command, env, log)`` -> (exit code, wall s, CPU s, peak RSS MiB)."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, universal_newlines=True)

    def run(self, command, env, log):
        self.proc.stdin.write(json.dumps({'command': command, 'env': env, 'log': log}) + '\n')
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError('the benchmark launcher exited (%s)' % self.proc.poll())
        answer = json.loads(line)
        return answer['code'], answer['wall'], answer['cpu'], answer['rss_mib']

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def serve(requests, answers):
    for line in requests:
        ask = json.loads(line)
        with open(ask['log'], 'w') as out:
            start = time.time()
            proc = subprocess.Popen(ask['command'], stdout=out, stderr=subprocess.STDOUT, env=ask['env'])
            _pid, status, usage = os.wait4(proc.pid, 0)
            wall = time.time() - start
        answers.write(json.dumps({'code': os.waitstatus_to_exitcode(status), 'wall': wall,
                                  'cpu': usage.ru_utime + usage.ru_stime, 'rss_mib': usage.ru_maxrss / 1024.0}) + '\n')
        answers.flush()


if __name__ == '__main__':
    serve(sys.stdin, sys.stdout)
