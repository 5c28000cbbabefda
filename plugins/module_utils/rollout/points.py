# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The points of a rollout run: where the loop (rollout/loop.py) returns to Ansible for the role's own tasks (the
user's verification tasks, an analysis), and how many a run can still reach. The role runs its points in one loop
(roles/rollout/tasks/main.yml) of as many turns as the first call's ``points_left``: an upper bound, exact unless the
run stops early or the steps added for pods the plan did not have (sweeps) are not needed."""


def after(index, count, canary, analysis_after, verify, check_mode=False):
    """The point after step ``index`` of ``count`` (``canary``: step 0 is the canary), or None: the verification
    tasks after every step (``verify``), an analysis after the canary, a batch (not the last when the end has one)
    or none in check mode (nothing changed to judge)."""
    last = index + 1 == count
    if index == 0 and canary:
        analysis = 'canary' in analysis_after
    else:
        analysis = 'batch' in analysis_after and not (last and 'end' in analysis_after)
    analysis = bool(analysis and not check_mode)
    if not (analysis or verify):
        return None
    return {'after': 'the canary' if index == 0 and canary else 'batch %d' % (index + 1), 'verify': bool(verify),
            'analysis': analysis}


def left(run, analysis_after, verify, check_mode=False, sweeps=0, end=True):
    """How many points the run can still reach, the one it stands at (``run.point``) included: one per later step
    that has one, per step that may still be added (``sweeps``, each the last when it runs), and the analysis at the
    end (``end``: the plan changes pods). 0 when the run stands at no point (it ended)."""
    if not run.point:
        return 0
    count, steps = len(run.batches), range(run.next, len(run.batches))
    later = [after(index, count, run.canary, analysis_after, verify, check_mode) for index in steps]
    added = [after(count + extra, count + extra + 1, False, analysis_after, verify, check_mode)
             for extra in range(sweeps)]
    at_end = end and 'end' in analysis_after and not check_mode and not run.analysed_end
    return 1 + len([point for point in later + added if point]) + int(bool(at_end))
