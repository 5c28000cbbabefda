# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""drain_label: make a workload drainable by a label in place (pods, template under the usual hold, then the
Service's selector)."""

import json

from ansible_collections.inplace.k8s.plugins.module_utils.connection import access, paths
from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import MERGE_PATCH, retry_conflict
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ApiError, ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.pods import drain, podstate, record
from ansible_collections.inplace.k8s.plugins.module_utils.pods.record import DONE, IN_PROGRESS
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import guard
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.context import WAY_OUT
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.selectors import selector_matches
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.rolloutrecord import RolloutRecord
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.workload import write_record


class LabelDrainStep:
    """The drain_label step of a rollout, an object of its own: ``drain_label()`` is its interface. Its dependencies
    are passed in: ``shared``, what the steps share (rollout/context.py RolloutContext: the options, the client, the
    workload and its pods, the drainer, the hold, the result shape), and ``finish``, the finish step
    (rollout/finish.py) whose ``release_held`` ends the label's hold on the workload."""

    def __init__(self, shared, finish):
        self.shared, self.finish = shared, finish

    def drain_label(self):
        """Make the workload drainable by ``drain_label`` in place: the label on every pod (a metadata write,
        no restart), on the template under the usual hold (the controller keeps its pods: Deployment's
        current ReplicaSet first, StatefulSet/DaemonSet pods relabelled with the new revision), then on the
        selector of ``service`` once every pod carries it. Check mode reports what is missing."""
        shared = self.shared
        w, drainer = shared.workload, shared.drainer
        if w is None or not isinstance(drainer, drain.LabelDrain):
            raise ValidationError('state drain_label needs kind and name of a workload and drain_label')
        w.read()
        key, value = drainer.key, drainer.value
        if key in drain.selector_keys(w.spec.get('selector')):
            raise ValidationError('drain_label: %s %s/%s selects its pods by %s; choose a label only the Service '
                                  'selects; nothing was changed' % (w.kind, w.namespace, w.name, key))
        rec, held = w.record or {}, w.held
        labels_target = {'labels': {key: value}}
        if held.active and held.target != labels_target:
            raise ValidationError('%s %s/%s has an unfinished rollout to %s: finish it first (%s)' % (
                w.kind, w.namespace, w.name, json.dumps(guard.brief(held.target), sort_keys=True), WAY_OUT))
        service = self._drain_service(key, value)
        pods = w.pods()
        unlabelled = [p for p in pods if not drainer.applies(p)]
        template_labels = (w.template.get('metadata') or {}).get('labels') or {}
        report = {'label': drainer.name, 'pods': len(pods),
                  'unlabelled': [podstate.meta(p, 'name') for p in unlabelled],
                  'drained': [podstate.meta(p, 'name') for p in pods if drainer.left_drained(p)],
                  'template_labelled': template_labels.get(key) == value,
                  'service': service and podstate.meta(service, 'name'),
                  'service_selects': bool(service) and (service.get('spec') or {}).get('selector', {}).get(key) == value}
        changed = bool(unlabelled or not report['template_labelled'] or (service and not report['service_selects']))
        if shared.check_mode or not changed:
            return shared.result(pods, changed=changed, drain_label=report)
        for pod in unlabelled:
            self._label_pod(pod, key, value)
        if not report['template_labelled'] or held.target == labels_target:
            if held.target != labels_target or not held.active:
                rec = {'state': IN_PROGRESS, 'target': labels_target, 'before': {'labels': {key: template_labels.get(key)}},
                       'saved': w.saved_strategy(), 'started': record.timestamp()}
            write_record(w, rec, w.hold_spec(), stamp=shared.stamp)
            w.set_template_labels({key: value})
            revision_labels, _revision = w.revision(shared.options.wait_timeout)
            w.relabel(w.pods(), revision_labels)
            self.finish.release_held(RolloutRecord(w.record or rec), {}, {}, DONE)
        if service and not report['service_selects']:
            self._select_by_drain_label(service, key, value)
        return shared.result(w.pods(), changed=True, drain_label=report)

    def _select_by_drain_label(self, service, key, value):
        """Add the drain label to the Service's selector, once every pod of the workload carries it (guarded by the
        Service's resourceVersion); ValidationError naming the pods that do not carry it yet (created meanwhile)."""
        shared = self.shared
        w, drainer, name = shared.workload, shared.drainer, podstate.meta(service, 'name')
        left = [podstate.meta(p, 'name') for p in w.pods() if not drainer.applies(p)]
        if left:
            raise ValidationError('drain_label: pod(s) %s do not carry %s yet (created meanwhile?); the selector of '
                                  'Service %s is left as it is: run this again' % (', '.join(left), drainer.name, name))
        shared.kube.request('PATCH', paths.api_path('v1', 'services', w.namespace, name),
                            body={'metadata': {'resourceVersion': podstate.meta(service, 'resourceVersion')},
                                  'spec': {'selector': {key: value}}}, content_type=MERGE_PATCH)

    def _drain_service(self, key, value):
        """The Service of ``service`` (None when not given); ValidationError when it does not select the
        workload's pods (its selector without the drain label must match the template's labels)."""
        shared = self.shared
        name = shared.options.service
        if not name:
            return None
        w = shared.workload
        if not shared.check_mode:   # the opt-in role inplace-k8s-service: checked before the pods are labelled
            access.require(shared.kube, w.namespace, [('get', 'services', ''), ('patch', 'services', '')])
        try:
            service = shared.kube.request('GET', paths.api_path('v1', 'services', w.namespace, name))
        except ApiError as exc:
            raise ValidationError('service: cannot read Service %s/%s: %s; nothing was changed'
                                  % (w.namespace, name, exc.msg))
        selector = dict((service.get('spec') or {}).get('selector') or {})
        selector.pop(key, None)
        labels = (w.template.get('metadata') or {}).get('labels') or {}
        if not selector or not selector_matches({'matchLabels': selector}, labels):
            raise ValidationError('service: Service %s/%s does not select the pods of %s %s (selector %s); '
                                  'nothing was changed' % (w.namespace, name, w.kind, w.name, json.dumps(selector)))
        return service

    def _label_pod(self, pod, key, value):
        """Put the serving label on a pod that lacks it (guarded by resourceVersion, re-read on a conflict)."""
        shared = self.shared
        state = {'pod': pod}

        def reread(_exc):
            state['pod'] = shared.kube.get_pod(podstate.meta(pod, 'namespace'), podstate.meta(pod, 'name'))

        @retry_conflict(on_retry=reread)
        def attempt():
            current = state['pod']
            if (podstate.meta(current, 'labels') or {}).get(key) in (value, drain.DRAINED_VALUE):
                return
            shared.kube.patch_pod(podstate.meta(current, 'namespace'), podstate.meta(current, 'name'), {'metadata': {
                'resourceVersion': podstate.meta(current, 'resourceVersion'), 'labels': {key: value}}},
                content_type=MERGE_PATCH)
        attempt()
