# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What the role shows: the plan before the first step, after a step its progress line and one line per failed pod,
and its rollout_result at the end."""

import time

from ansible_collections.inplace.k8s.plugins.module_utils.config.rollout import lines as config_lines


def progress_lines(batch, out, failures, check_mode=False):
    """What the role shows after a step (``out``, its ``failures``: rollout/stepresult.py) of ``batch`` (a Step): a
    line (its label, its pods, how many are done, failed and not started, the window, the time since the rollout
    started), then one line per failed pod."""
    names, step = list(batch.names), out
    failed_here = failures.names_in(names)
    not_started = set(step.get('not_started') or [])
    gone_here = set(item['name'] for item in step.get('gone') or [] if item.get('name') in names)
    if check_mode:
        counts = 'would update %d pod(s) (check mode: nothing written)' % len(names)
    else:
        earlier = failures.earlier(names)
        counts = '%d done, %d failed%s; %s/%s pods run the target' % (
            len([name for name in names if name not in failed_here | not_started | gone_here]),
            len([name for name in names if name in failed_here]),
            ', %d earlier pod(s) failed after they were counted done' % earlier if earlier else '',
            step.get('updated', '?'), step.get('total', '?'))
    if not_started:
        counts += ', %d not started' % len(not_started)
    if step.get('gone'):
        counts += ', %d gone (deleted, evicted or preempted: not failed, nothing to undo)' % len(step['gone'])
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
                     for item in step.get('failed_pods') or []] + [gone_line(item) for item in step.get('gone') or []]


def gone_line(item):
    """What the role shows of a pod that went away (a ``gone`` entry)."""
    return 'gone: %s (%s, %s): %s' % (item.get('name'), item.get('cause'), {
        'before': 'before its turn', 'in_flight': 'while its change was in flight',
        'after': 'after it was done'}.get(item.get('when'), item.get('when')), item.get('detail'))


def plan_lines(plan, options, check_mode=False):
    """The plan as the role shows it after the first call (written here, not in the role's Jinja: each task's
    templating costs Ansible time on every run)."""
    pods, batches = plan.get('pods') or [], plan.get('batches') or []
    if plan.get('window'):
        steps = 'steps (%d), a sliding window of %d pod(s) in flight: %s' % (
            len(batches), plan['window'], ', then '.join('%d pod(s)' % len(batch) for batch in batches) or 'none')
    else:
        steps = 'batches (%d): %s' % (len(batches), [list(batch) for batch in batches])
    lines = [
        'drain mode: none (rollout_readiness_gate is not set): pods are changed while they serve traffic'
        if not (options.readiness_gate or options.drain_label) else '',
        '%s %s: %s, %d pod(s), %d already updated%s' % (
            options.kind or 'pods', options.name or ','.join(options.label_selectors), plan.get('mode'), len(pods),
            len([pod for pod in pods if pod.get('updated')]), ' (check mode: nothing is written)' if check_mode else ''),
        steps,
        'left on the old version (partition): %s' % list(plan.get('kept') or []),
        'each pod counts as done after %ss running and ready; on failure: %s' % (
            options.min_ready_seconds, 'rollback' if options.on_failure == 'rollback' else 'halt'),
        'PodDisruptionBudgets: %s%s' % ([pdb.get('name') for pdb in plan.get('pdbs') or []], _drain_wait(
            plan.get('pdbs'), options)),
        'not in place: %s' % list(plan.get('refusals') or []),
    ]
    lines.extend(config_lines(plan.get('config')))
    owners = plan.get('owners')
    if owners is not None:
        found = '; '.join('%s (reverts it: %s)' % (item.get('owner'), item.get('reverts'))
                          for item in owners.get('found') or []) or 'none found'
        unchecked = owners.get('unchecked') or []
        lines.append('owners (%s): %s%s' % (options.owners, found,
                                            '; not checked: ' + '; '.join(unchecked) if unchecked else ''))
    return [line for line in lines if line]


def _drain_wait(pdbs, options):
    """How long our pods in flight can block a drain of the pods the budgets select (docs/rollouts.md "When pods go
    away"): the eviction of a pod they select waits while our changes use up a budget, each time one pod's change."""
    if not pdbs:
        return ''
    return ('; a drain (kubectl drain, an autoscaler) evicting their pods is refused (429) while our pods in flight '
            'use up a budget: each time at most as long as one pod\'s change, up to wait_timeout (%ss), until the '
            'rollout ends' % options.wait_timeout)


def plan_facts(plan):
    """What the summary needs of a plan (prepare's result), kept in the run for the calls after the first."""
    return {'mode': plan.get('mode'), 'uids': [pod.get('uid') for pod in plan.get('pods') or []],
            'after_uids': [pod.get('uid') for pod in plan['after']] if plan.get('after') is not None else None,
            'kept': plan.get('kept') or [], 'message': plan.get('message'), 'history': plan.get('history'),
            'owners': plan.get('owners'), 'batches': len(plan.get('batches') or [])}


def summary(facts, run=None, ended=None, check_mode=False):
    """The role's ``rollout_result`` as far as the module knows it, in its order (the role fills in ``changed``,
    ``action``, ``released``, ``analysis``, ``undo``, ``suspended``, ``elapsed_seconds`` and a rollback it was asked
    for): from the plan's ``facts`` (plan_facts), the ``run`` of state rollout, or what state rollback or release
    returned (``ended``). Computed here, not in the role: the role's Jinja over the whole result was slow
    (docs/performance.md)."""
    run, ended = run or {}, ended or {}
    rollback = run['rollback'] if 'rollback' in run else ended
    finished = run['finished'] if 'finished' in run else ended.get('finished', ended)
    before = facts.get('uids') or [pod.get('uid') for pod in rollback.get('pods') or []]
    if finished.get('pods') is not None:
        after = [pod.get('uid') for pod in finished['pods']]
    else:
        after = facts['after_uids'] if facts.get('after_uids') is not None else before
    failed = list(run.get('failed_pods') or []) + list((run.get('finished') or {}).get('failed_pods') or [])
    history = facts.get('history')
    return {
        'changed': None, 'check_mode': check_mode, 'action': None, 'mode': facts.get('mode'), 'pods': len(before),
        'batches_planned': facts.get('batches') or 0, 'batches_run': run.get('steps_run', 0), 'failed_pods': failed,
        'not_started': list(run.get('not_started') or []), 'gone': list(run.get('gone') or []),
        'replaced': list(run.get('replaced') or []), 'rolled_back': bool(run.get('rolled_back')),
        'released': False, 'stopped': bool(run.get('stopped')),
        # A pod that went away (gone) was not recreated by us: its replacement is the controller's.
        'recreated_pods': len(set(before) - set(after) - set(item.get('uid') for item in run.get('gone') or [])),
        'workload': finished.get('workload') or {},
        'left_on_old_version': finished['old'] if 'old' in finished else facts.get('kept') or [],
        'timings': run.get('timings') or {}, 'config_checks': run.get('config_checks') or {}, 'analysis': [],
        'message': finished['message'] if 'message' in finished else facts.get('message') or '',
        'history': history if history is not None else rollback.get('history') or {}, 'undo': {},
        'owners': facts.get('owners') or {}, 'suspended': [], 'elapsed_seconds': None,
        'verified_at': run.get('verified_at'),
    }
