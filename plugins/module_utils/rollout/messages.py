# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The text the role prints after its calls of rollout_workload, built here rather than in the role's Jinja: the
drain label's report (state drain_label), what a rollback did (state rollback), the line of an analysis between the
steps and the failure of a rollout that did not reach its target (state rollout). The module's action (plugins/action/rollout_workload.py) adds them to the
result of the role's calls; the role only prints them."""

ROLLED_BACK_TAIL = '. Every updated pod runs the values from before again and the controller is released'
HELD_TAIL = ('. The workload stays held: run the same change again to resume (%s), set rollout_action=rollback to '
             'restore the template and the pods from before, or rollout_action=release to release the controller '
             'and leave the pods as they are')


def drain_label_lines(label, found, workload=True, enabling=False, check_mode=False):
    """The drain mode by ``label`` as the role reports it before the first call: what state drain_label ``found``
    (pods without the label, the template, the Service), and whether ``enabling`` (rollout_enable_drain_label)
    writes what is missing; for pods chosen by label selectors (no ``workload``), that those without it change
    without draining."""
    lines = ['drain mode: label %s (set to drained while a pod changes; a pod leaves the EndpointSlices before its '
             'restart and is back after)' % label]
    if not workload:
        return lines + ['pods (label_selectors): those without the label are changed without draining']
    found = found or {}
    verb = 'would label' if check_mode else 'labelled'
    unlabelled = found.get('unlabelled') or []
    if not unlabelled:
        pods = 'none'
    elif enabling:
        pods = '%s (%s in place)' % (', '.join(unlabelled), verb)
    else:
        pods = '%s - changed without draining; set rollout_enable_drain_label to add it in place, no pod is ' \
               'recreated' % ', '.join(unlabelled)
    if found.get('template_labelled'):
        template = 'yes'
    elif enabling:
        template = 'no (%s under the hold)' % verb
    else:
        template = 'no - pods the controller creates later would not serve; set rollout_enable_drain_label'
    service = found.get('service')
    if not service:
        selecting = 'not checked (set rollout_drain_label_service); the Service must select %s or draining takes ' \
                    'no pod out' % label
    elif found.get('service_selects'):
        selecting = '%s (yes)' % service
    elif enabling:
        selecting = '%s (%s to its selector)' % (service, 'would add' if check_mode else 'added')
    else:
        selecting = '%s (not yet: set rollout_enable_drain_label)' % service
    return lines + ['pods without the label: ' + pods, 'template carries it: ' + template,
                    'Service selecting it: ' + selecting,
                    'left drained by an interrupted run: ' + (', '.join(found.get('drained') or []) or 'none')]


def analysis_line(after, outcome, summary, on_failure):
    """The line the role shows after the analysis at the point after ``after`` (the canary, batch N, the last
    batch): its ``outcome`` and ``summary`` (rollout_analysis'), and what the rollout does next (``on_failure``,
    rollout_on_failure: halt or rollback)."""
    if outcome == 'failure':
        then = '; rollout_on_failure=%s: %s' % (
            on_failure, 'rolling back' if on_failure == 'rollback' else 'halted, the workload stays held')
    elif outcome == 'inconclusive':
        then = '; halted, the workload stays held (run the same change again to check again and resume)'
    else:
        then = ''
    return 'analysis after %s: %s%s' % (after, summary, then)


def analysis_lines(after, on_failure):
    """analysis_line for each outcome of the analysis at the point after ``after``, its summary left as ``%s`` (the
    role fills it in once the checks ran: the call that returned at the point does not know it)."""
    return dict((outcome, analysis_line(_literal(after), outcome, '%s', _literal(on_failure)))
                for outcome in ('success', 'failure', 'inconclusive'))


def _literal(value):
    """``value`` as text that a %-format leaves as it is."""
    return ('%s' % (value,)).replace('%', '%%')


def rollback_lines(groups, check_mode=False):
    """What state rollback put back: how many pods, to which images and resources (the first group's); none
    when no pod ran the rollout's values."""
    groups = groups or []
    if not groups:
        return []
    names = [name for group in groups for name in group.get('names') or []]
    return ['%s %d pod(s) to %s %s' % ('would roll back' if check_mode else 'rolled back', len(names),
                                       groups[0].get('images'), groups[0].get('resources'))]


def failure(report, recreated=(), analysis=None):
    """Why the rollout did not reach its target, and the ways out; '' when it did. ``report``: the module's
    rollout_result (report.summary); ``recreated``: pods recreated instead of updated in place; ``analysis``: the
    analysis this call judged (``after``, ``outcome``, ``summary``), which stops the run unless it succeeded."""
    failed, recreated = report.get('failed_pods') or [], list(recreated or [])
    analysis = analysis or {}
    judged = analysis.get('outcome') in ('failure', 'inconclusive')
    if not (failed or recreated or judged):
        return ''
    outcome = 'rolled back' if report.get('rolled_back') else 'halted'
    if failed:
        why = '%s after %d failed pod(s): %s' % (outcome, len(failed), '; '.join(
            ': '.join('%s' % value for value in item.values()) for item in failed))
        not_started = report.get('not_started') or []
        if not_started:
            why += '; %d pod(s) not started (the window halted): %s' % (len(not_started), ', '.join(not_started))
    elif judged:
        why = '%s after the analysis (%s): %s' % (outcome, analysis.get('after'), analysis.get('summary'))
    else:
        why = 'halted'
    prefix = 'pods recreated instead of updated in place: %s; ' % ', '.join(recreated) if recreated else ''
    if report.get('rolled_back'):
        return prefix + why + ROLLED_BACK_TAIL
    return prefix + why + HELD_TAIL % (
        'the checks run again' if not failed and not recreated else 'the failed pods are tried again')
