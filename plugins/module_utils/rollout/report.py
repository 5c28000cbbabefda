# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What the role shows after a step: its progress line and one line per failed pod."""

import time


def progress_lines(batch, out, check_mode=False):
    """What the role shows after a step (``out``) of ``batch`` (a Step): a line (its label, its pods, how many are
    done, failed and not started, the window, the time since the rollout started), then one line per failed pod."""
    names, step = list(batch.names), out
    failed = [item['name'] for item in step.get('failed_pods') or []]
    failed_here = set(name for item in failed for name in item.split(','))   # a whole-batch entry names all
    not_started = set(step.get('not_started') or [])
    if check_mode:
        counts = 'would update %d pod(s) (check mode: nothing written)' % len(names)
    else:
        earlier = len([name for name in failed if name not in names and ',' not in name])
        counts = '%d done, %d failed%s; %s/%s pods run the target' % (
            len([name for name in names if name not in failed_here and name not in not_started]),
            len([name for name in names if name in failed_here]),
            ', %d earlier pod(s) failed after they were counted done' % earlier if earlier else '',
            step.get('updated', '?'), step.get('total', '?'))
    if not_started:
        counts += ', %d not started' % len(not_started)
    window = step.get('window')
    if window:
        counts += '; window %s wide%s, pods waited %ss for their turn in all' % (
            window['width'], ', halted: %s' % window['halted'] if window.get('halted') else '',
            window['waited_seconds'])
    shown = ', '.join(names) if len(names) <= 6 else '%s ... %s, %d pods' % (
        ', '.join(names[:3]), ', '.join(names[-2:]), len(names))
    line = '%s (%s): %s' % (batch.label or 'step', shown, counts)
    if batch.started:
        line += '; elapsed %.1fs' % (time.time() - batch.started)
    return [line] + ['failed: ' + ': '.join('%s' % item.get(key) for key in ('name', 'status', 'reason') if key in item)
                     for item in step.get('failed_pods') or []]
