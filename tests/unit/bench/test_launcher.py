# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The benchmark's launcher: the peak RSS of a child is its own, not the size of the process that asked for it."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', 'bench'))

import launcher  # noqa: E402  pylint: disable=wrong-import-position


def test_a_small_child_of_a_big_process_reports_its_own_peak(tmp_path):
    started = launcher.Launcher()
    try:
        ballast = bytearray(300 * 2 ** 20)   # the runner grows after the launcher started (results, clients)
        ballast[::4096] = b'x' * len(ballast[::4096])
        code, wall, cpu, rss = started.run([sys.executable, '-c', 'x = bytearray(40 * 2 ** 20); x[::4096] = b"y" * len(x[::4096])'],
                                           dict(os.environ), str(tmp_path / 'child.log'))
        assert code == 0 and wall > 0 and cpu >= 0
        assert 40 <= rss < 150, rss   # its 40 MiB and the interpreter, not the 300 MiB of its asker
        code, _wall, _cpu, _rss = started.run([sys.executable, '-c', 'import sys; sys.exit(3)'], dict(os.environ),
                                              str(tmp_path / 'child.log'))
        assert code == 3
        del ballast
    finally:
        started.close()
