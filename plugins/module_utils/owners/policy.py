# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure: what each owner does to a change, and the policy (``owners``: refuse, warn, proceed).

An owner entry says when it reverts the change (``reverts``): CONTINUOUSLY (a controller that reconciles on its
own: Argo CD with self-heal, Flux, a VPA in an updating mode), WHEN_RUN (only when someone runs it: Helm's next
upgrade, a suspended GitOps object once resumed, another server-side apply), or NEVER (it does not touch what this
change writes). The policy ``refuse`` (the default) refuses the change when an owner reverts it continuously and
warns about the others; ``warn`` warns about every owner; ``proceed`` goes on and only lists them.
"""

from ansible_collections.inplace.k8s.plugins.module_utils.owners import markers
from ansible_collections.inplace.k8s.plugins.module_utils.owners.manages import NOT_MANAGED

CONTINUOUSLY = 'continuously'
WHEN_RUN = 'when run'
NEVER = 'never'
POLICIES = ('refuse', 'warn', 'proceed')
SUSPENDED = 'inplace.k8s/suspended'   # annotation of a GitOps object suspended by a run (owners/suspend.py)
UPDATING_VPA_MODES = ('Auto', 'Recreate', 'InPlaceOrRecreate', 'InPlace')
SUSPEND_HINT = 'suspend it for the run (role: rollout_suspend_owners: true; module: inplace.k8s.gitops_suspend)'


def _values(change):
    return ', '.join('%s=%s' % (name, value) for name, value in sorted(change['containers'].items()))


def gitops_state(tool, obj):
    """(reverts, state) of an Application, Kustomization or HelmRelease (None: not found)."""
    if obj is None:
        return CONTINUOUSLY, 'its object was not found or could not be read: assumed to sync on its own'
    spec = obj.get('spec') or {}
    suspended = ((obj.get('metadata') or {}).get('annotations') or {}).get(SUSPENDED)
    if tool == markers.ARGOCD:
        automated = (spec.get('syncPolicy') or {}).get('automated')
        if automated is None or automated.get('enabled') is False:
            return WHEN_RUN, 'suspended by a run' if suspended else 'no automated sync: syncs when someone syncs it'
        if automated.get('selfHeal'):
            return CONTINUOUSLY, 'automated sync with selfHeal: reverts live changes within seconds'
        return WHEN_RUN, 'automated sync without selfHeal: reverts at its next sync (a new commit)'
    if spec.get('suspend'):
        return WHEN_RUN, 'suspended by a run' if suspended else 'suspended'
    if tool == markers.FLUX_HELMRELEASE and ((spec.get('driftDetection') or {}).get('mode') != 'enabled'):
        return WHEN_RUN, 'no drift detection: reverts at its next upgrade (a chart or values change)'
    return CONTINUOUSLY, 'reconciles every %s' % (spec.get('interval') or 'interval')


def judge(owner, change, gitops=(None, False, None), above=None):
    """The owner entry of the result: ``owner`` (markers.found) with when it reverts the change, its effect and
    the fix. ``gitops``: (object, manages, why) of the GitOps object the owner names (lookup.Reader.gitops); one
    whose status does not show that it manages the workload is only warned about. ``above``: the object the
    owner manages when it is a controller above the written pods (a GitOps tool does not write pods: it keeps
    that template, and pods it recreates come back with the old value)."""
    tool, name = owner['tool'], owner['name']
    gitops_obj, managed, why = gitops
    label = '%s %s' % (tool, name) if name else tool
    entry = dict(owner, reverts=WHEN_RUN, state=None)
    if tool == markers.HELM:
        entry['effect'] = ('its next upgrade puts back the old value unless its values carry %s; the Deployment '
                           'controller then replaces every pod' % _values(change))
        entry['fix'] = ('run the upgrade of release %s with values that carry %s (a no-op then)'
                        % (name or '(unnamed)', _values(change)))
    elif tool == markers.APPLY:
        entry['effect'] = 'its next apply writes its own value of these fields again'
        entry['fix'] = 'change the manifests %s applies to carry %s' % (name, _values(change))
    else:
        entry['reverts'], entry['state'] = gitops_state(tool, gitops_obj)
        entry['object'] = gitops_obj and '%s %s/%s' % (gitops_obj.get('kind'), gitops_obj['metadata'].get('namespace'),
                                                       gitops_obj['metadata'].get('name'))
        entry['effect'] = '%s (%s)' % ('reverts the template to its source' if entry['reverts'] == CONTINUOUSLY
                                       else 'reverts when it next syncs', entry['state'])
        entry['fix'] = ('commit %s to its source (git) before or right after the rollout, so that its next sync is '
                        'a no-op; or %s' % (_values(change), SUSPEND_HINT))
        if gitops_obj is not None and not managed:
            entry.update(reverts=WHEN_RUN, state=why, effect='%s (%s): not suspended' % (NOT_MANAGED, why),
                         fix='check the labels and annotations of the workload: they name an object that does not '
                             'list it')
    if above is not None and entry['reverts'] == CONTINUOUSLY:
        entry['reverts'] = WHEN_RUN
        entry['effect'] = ('keeps the template of %s with the old value: pods its controller recreates come back '
                           'with it' % above)
    entry['owner'] = label
    return entry


def _on_utilization(metric):
    """An autoscaler metric that scales on the utilization of the containers' requests."""
    if metric.get('type') not in ('Resource', 'ContainerResource'):
        return False
    source = metric.get('resource') or metric.get('containerResource') or {}
    return (source.get('target') or {}).get('type') == 'Utilization'


def judge_autoscaler(kind, obj, change):
    """The owner entry of a VPA or HPA that targets the workload."""
    meta = obj.get('metadata') or {}
    spec = obj.get('spec') or {}
    entry = {'tool': kind, 'name': meta.get('name'), 'namespace': meta.get('namespace'), 'owner': '%s %s' % (
        kind, meta.get('name')), 'evidence': ['%s %s targets the workload' % (kind, meta.get('name'))],
        'reverts': NEVER, 'state': None, 'effect': 'does not touch images', 'fix': None}
    if change['field'] != 'resources':
        return entry
    if kind == 'VerticalPodAutoscaler':
        mode = (spec.get('updatePolicy') or {}).get('updateMode') or 'Auto'
        entry['state'] = 'updateMode %s' % mode
        policies = dict((p.get('containerName'), p.get('mode')) for p in
                        (spec.get('resourcePolicy') or {}).get('containerPolicies') or [])
        off = [c for c in change['containers'] if policies.get(c, policies.get('*')) == 'Off']
        if len(off) == len(change['containers']):
            entry['effect'] = 'its container policies leave these containers alone (mode Off)'
        elif mode in UPDATING_VPA_MODES:
            entry.update(reverts=CONTINUOUSLY, effect='resizes (or evicts) the same containers back to its '
                         'recommendation: the two fight', fix='set its updateMode to Off or Initial for the run, '
                         'or its containerPolicies mode Off for these containers, or give it minAllowed/maxAllowed '
                         'that hold the new values')
        elif mode == 'Initial':
            entry.update(reverts=WHEN_RUN, effect='pods recreated later get its recommendation, not these values',
                         fix='give it minAllowed/maxAllowed that hold the new values')
        else:
            entry['effect'] = 'updateMode Off: recommends only'
        return entry
    utilization = [m for m in spec.get('metrics') or [] if _on_utilization(m)]
    if utilization:
        entry.update(reverts=WHEN_RUN, state='scales on utilization of requests',
                     effect='its utilization is measured against the requests: new requests change when it scales',
                     fix='check its averageUtilization targets against the new requests')
    else:
        entry['effect'] = 'does not scale on utilization of requests'
    return entry


def decide(entries, policy):
    """(refusal message or None, warnings) of the owner entries under ``policy``."""
    if policy == 'proceed':
        return None, []
    blocking = [e for e in entries if e['reverts'] == CONTINUOUSLY]
    warned = [e for e in entries if e['reverts'] == WHEN_RUN or (policy == 'warn' and e in blocking)]
    warnings = ['%s: %s; fix: %s' % (e['owner'], e['effect'], e['fix']) for e in warned]
    if policy == 'refuse' and blocking:
        return ('refused: %s; nothing was changed. To go on: update the source of truth first or right after, '
                'suspend the controller for the run, or set owners: proceed (role: rollout_owners: proceed) to go '
                'on knowingly' % '; '.join('%s (%s) %s; fix: %s' % (
                    e['owner'], ', '.join(e['evidence'] + [e['state']] if e['state'] and e['state'] not in e['effect']
                                          else e['evidence']), e['effect'], e['fix']) for e in blocking)), warnings
    return None, warnings
