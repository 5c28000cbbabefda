# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""PodDisruptionBudgets: which select the rollout's pods, and the one check of whether a budget lets pods go.

A budget allows as many disruptions as it has healthy pods beyond its desiredHealthy. The batch gate asks the
disruption controller's count (status.disruptionsAllowed); the sliding window counts the healthy pods itself from
its watch (the controller's status lags behind our own changes), less the pods in flight: the same rule.
"""

from ansible_collections.inplace.k8s.plugins.module_utils.connection import paths
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.selectors import selector_matches, selector_string


def budgets(kube, namespace, pods):
    """PodDisruptionBudgets of ``namespace`` that select any of ``pods``: [(pdb, [pod names])]."""
    answer = kube.request('GET', paths.api_path('policy/v1', 'poddisruptionbudgets', namespace))
    found = []
    for pdb in answer.get('items') or []:
        selector = (pdb.get('spec') or {}).get('selector')
        names = [podstate.meta(p, 'name') for p in pods if selector_matches(selector, podstate.meta(p, 'labels'))]
        if names:
            found.append((pdb, names))
    return found


def allowed(pdb, healthy=None):
    """Disruptions ``pdb`` allows now: the controller's count, or, given ``healthy`` (its healthy pods as counted
    by the caller), those beyond its desiredHealthy."""
    status = pdb.get('status') or {}
    if healthy is None:
        return status.get('disruptionsAllowed', 0)
    return healthy - status.get('desiredHealthy', 0)


def refusal(pdb, disrupting, healthy=None):
    """Why ``pdb`` does not let ``disrupting`` more pods go (None: it does); ``healthy`` as for allowed()."""
    left = allowed(pdb, healthy)
    if disrupting <= left:
        return None
    if healthy is None:
        return 'PodDisruptionBudget %s allows %d disruption(s), the batch would disrupt %d' % (
            podstate.meta(pdb, 'name'), left, disrupting)
    return 'PodDisruptionBudget %s: %d healthy pod(s) not in flight, it needs %d' % (
        podstate.meta(pdb, 'name'), healthy, healthy - left)


def summary(pdb, names):
    """A budget as the plan reports it, with the names of the rollout's pods it selects."""
    status = pdb.get('status') or {}
    return {'name': podstate.meta(pdb, 'name'), 'disruptions_allowed': status.get('disruptionsAllowed', 0),
            'current_healthy': status.get('currentHealthy'), 'desired_healthy': status.get('desiredHealthy'),
            'pods': names, 'selector': selector_string((pdb.get('spec') or {}).get('selector'))}
