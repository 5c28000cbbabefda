# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Another writer's template is never handed to the controller as ours (issue 33).

Each step of a rollout checks that the workload's template still has the values the rollout wrote
(``check``); the release - the write that gives the controller its strategy back (StatefulSet and
DaemonSet updateStrategy, Deployment ``paused: false``) - makes the same check on the very read its
write is guarded by (``release_check`` with workload.write_record: the patch carries that read's
resourceVersion, so a template written in between fails it with 409, and the check runs again on a fresh
read). A changed template is a ConcurrentChange naming the fields - raised by ``check`` (a step's), returned by
``conflict`` and ``release_check`` (the finish reports it: rollout/finish.py); nothing is written, the workload
stays held and no pod is replaced."""

import json

from ansible_collections.inplace.k8s.plugins.module_utils.operations.engine import CONFLICT, ConcurrentChange
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.templates import change_ops

WAYS_OUT = ('nothing was overwritten and the workload stays held: when the other writer is done, run the rollout '
            'again (it writes its target again) or end it with rollout_action=rollback or release')


def drift(template, images, resources):
    """The template fields (spec.template.…) whose values are not ``images`` / ``resources``; [] when they are."""
    try:
        ops = change_ops(template, '', images, resources)
    except AttributeError:   # a container of the change is gone from the template
        ops = [{'op': 'remove', 'path': '/spec/containers'}]
    return sorted(set('spec.template' + op['path'].replace('/', '.') for op in ops if op['op'] != 'test'))


def brief(target):
    """A rollout target for messages: only what it changes."""
    return {k: v for k, v in (target or {}).items() if v} or target


def check(workload, images, resources, when='during this rollout'):
    """Raise the ConcurrentChange of ``conflict`` when there is one."""
    found = conflict(workload, images, resources, when)
    if found is not None:
        raise found


def conflict(workload, images, resources, when='during this rollout', failed_pods=False):
    """The ConcurrentChange when the workload's template (as last read) is not at ``images`` / ``resources``, else
    None. ``failed_pods``: it carries a failed_pods entry for the workload (the role counts it as a conflict)."""
    if not (images or resources):
        return None
    fields = drift(workload.template, images, resources)
    if not fields:
        return None
    msg = ('%s %s/%s: its template was changed by another writer %s (%s no longer %s); %s' % (
        workload.kind, workload.namespace, workload.name, when, ', '.join(fields),
        json.dumps(brief({'images': images, 'resources': resources}), sort_keys=True), WAYS_OUT))
    details = {}
    if failed_pods:
        details['failed_pods'] = [{'name': '%s/%s' % (workload.kind, workload.name), 'status': CONFLICT,
                                   'reason': 'its template was changed by another writer before the release (%s); '
                                             'not released, no pod replaced' % ', '.join(fields)}]
    return ConcurrentChange(msg, **details)


def release_check(images, resources):
    """The check for workload.write_record's ``check``, run on the read the release write is guarded by: the
    ConcurrentChange that refuses the release (with a failed_pods entry), or None."""
    def run(workload):
        return conflict(workload, images, resources, when='before the release', failed_pods=True)
    return run
