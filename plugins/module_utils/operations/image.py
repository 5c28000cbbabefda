# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The image operation: set container / sidecar images in place (what inplace_image runs)."""

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ConflictError, ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.operations.operation import Operation
from ansible_collections.inplace.k8s.plugins.module_utils.operations.podrun import ConcurrentChange
from ansible_collections.inplace.k8s.plugins.module_utils.pods import images, plan, podstate, record


def validate_images(images, field='containers'):
    """Raise ValidationError naming every invalid reference (before anything is written); ``field``
    names the option in the message."""
    if not images:
        raise ValidationError('%s: give at least one container name -> image' % field)
    errors = ['%s.%s: %s' % (field, name, podstate.image_error(image)) for name, image in sorted(images.items())
              if podstate.image_error(image)]
    if errors:
        raise ValidationError('invalid image reference(s), nothing was changed: %s; give references such as '
                              'registry.example.com/app:1.2 or app@sha256:<64 hex digits>' % '; '.join(errors))


class ImageOperation(Operation):
    """containers {name: image}. A changed image string restarts that container (not plain init
    containers, which are refused); done = new container running the image, started and ready.

    The image a container must run is images.effective_image: what the API server stored for the
    requested image (admission may pin a digest or rewrite the registry; the record keeps ``stored``),
    or the digest form a restart switched the tag to. The requested string alone is never the target."""

    name = 'image'
    can_rollback = True

    def __init__(self, images, labels=None):
        validate_images(images)
        self.target = dict(images)
        # Labels written with the image (the rollout's revision labels), and per pod the values they replaced,
        # which a rollback of that pod in this run writes back.
        self.labels = dict(labels or {})
        self._replaced = {}

    def desired(self, pod):
        return images.effective_images(pod, self.target)

    def images(self, pod_plan):
        return set(c.desired for c in pod_plan.updates() if c.desired)

    def settled(self, pod, rec):
        target = rec.get('target') if isinstance(rec, dict) else None
        if not isinstance(target, dict) or not target:
            return None
        return plan.plan_pod(pod, images.effective_images(pod, target), self.judge).action == plan.UNCHANGED

    def admitted(self, kube, written, pod_plan, rec):
        """Admission stored another image than the one written: record it (``stored``, beside the
        requested ``target``) and make it the target of the wait. The record write is guarded by the
        record and the stored images, not by resourceVersion (the kubelet's status writes would race it)."""
        requested = {c.name: c.desired for c in pod_plan.updates()}
        stored = images.stored_images(written, requested)
        if not stored:
            return written, pod_plan, rec
        rec = record.transition(rec, rec['state'], stored=stored)
        annotation = record.pointer('metadata', 'annotations', record.ANNOTATION)
        ops = [{'op': 'test', 'path': annotation,
                'value': (podstate.meta(written, 'annotations') or {}).get(record.ANNOTATION)}]
        for name, image in sorted(stored.items()):
            ops.append({'op': 'test', 'path': podstate.spec_path(podstate.find_container(written, name)) + '/image',
                        'value': image})
        ops.append({'op': 'add', 'path': annotation, 'value': record.encode(written, self.name, rec)})
        name = podstate.meta(written, 'name')
        try:
            written = kube.patch_pod(podstate.meta(written, 'namespace'), name, ops)
        except ConflictError:
            raise ConcurrentChange('pod %s: changed by another writer right after its image was written '
                                   '(stored %s); not overwritten' % (name, _pairs(stored)))
        retargeted = pod_plan.retarget(stored)
        # Admission stored the very image the container had (a record that no longer counts: copied, or not a
        # plausible rewrite): nothing restarts; it is done once it runs that image, started and ready.
        same = set(c.name for c in pod_plan.updates() if stored.get(c.name) == c.current)
        retargeted.containers = [c._replace(restart=False) if c.name in same else c for c in retargeted.containers]
        return written, retargeted, rec

    def preview(self, kube, pod_plan):
        """Server-side dry run of the image write: admission answers as for the real write. Returns a
        note when the server would store other images than the ones requested."""
        pod = pod_plan.pod
        answer = kube.patch_pod(podstate.meta(pod, 'namespace'), podstate.meta(pod, 'name'),
                                self.changes(pod, pod_plan), dry_run=True)
        stored = images.stored_images(answer, {c.name: c.desired for c in pod_plan.updates()})
        if stored:
            return 'admission would store %s (the target then)' % _pairs(stored)
        return None

    def judge(self, info, value):
        current = info.spec.get('image')
        if not podstate.same_image(current, value):
            return plan.verdict(plan.UPDATE, current, restart=True)
        if info.kind == podstate.INIT or podstate.image_converged(info.status, value):
            return plan.verdict(plan.UNCHANGED, current)
        return plan.verdict(plan.PENDING, current, reason='spec already set, waiting for the container')

    def snapshot(self, info):
        snap = super().snapshot(info)
        snap.update(image=info.spec.get('image'), imageID=info.status.get('imageID'))
        return snap

    def changes(self, pod, pod_plan):
        ops = []
        for cplan in pod_plan.updates():
            path = podstate.spec_path(podstate.find_container(pod, cplan.name))
            ops.append({'op': 'test', 'path': path + '/name', 'value': cplan.name})
            ops.append({'op': 'replace', 'path': path + '/image', 'value': cplan.desired})
        return ops + self._label_ops(pod, pod_plan)

    def _label_ops(self, pod, pod_plan):
        """The revision labels in the image write: set going to the target, put back going back from it."""
        if not self.labels:
            return []
        name, have = podstate.meta(pod, 'name'), podstate.meta(pod, 'labels') or {}
        desired = self.desired(pod)
        forward = all(cplan.desired == desired.get(cplan.name) for cplan in pod_plan.updates())
        if forward:
            wanted = {k: v for k, v in self.labels.items() if v and have.get(k) != v}
            self._replaced.setdefault(name, {k: have.get(k) for k in wanted})
        else:
            wanted = {k: v for k, v in self._replaced.get(name, {}).items() if v and have.get(k) != v}
        if not wanted:
            return []
        if not podstate.meta(pod, 'labels'):
            return [{'op': 'add', 'path': '/metadata/labels', 'value': wanted}]
        return [{'op': 'add', 'path': record.pointer('metadata', 'labels', key), 'value': value}
                for key, value in sorted(wanted.items())]

    def failure(self, pod, cplan, before, generation):
        """A failure counts only if it is about the desired image: the kubelet keeps reporting the
        last error of an earlier image (pull back-off, crash loop) for a while after a new change."""
        found = super().failure(pod, cplan, before, generation)
        if found is None:
            return None
        if found[0] in podstate.IMAGE_REASONS:
            return found if cplan.desired in (found[1] or '') else None
        return found if podstate.running_image_is(podstate.container_status(pod, cplan.name), cplan.desired) else None

    def applied(self, pod, cplan, before):
        """Without status.observedGeneration (before Kubernetes 1.34): a new container, or a failing pull of
        the desired image, which leaves the old container ID in the status (no new container is made)."""
        if super().applied(pod, cplan, before):
            return True
        waiting = (podstate.container_status(pod, cplan.name).get('state') or {}).get('waiting') or {}
        return waiting.get('reason') in podstate.IMAGE_REASONS and cplan.desired in (waiting.get('message') or '')

    def overwritten(self, pod, cplan):
        info = podstate.find_container(pod, cplan.name)
        current = info.spec.get('image') if info is not None else None
        if current is None or current == cplan.desired or images.satisfies(pod, cplan.name, cplan.desired):
            return None
        return ('container %s: its image was changed to %s by another writer while this run waited for %s'
                % (cplan.name, current, cplan.desired))

    def done(self, pod, cplan, before):
        """The container runs the desired image, started and ready: a new container, unless the write changed
        nothing that restarts it (an update without restart: admitted())."""
        info = podstate.find_container(pod, cplan.name)
        old = None if cplan.action == plan.UPDATE and not cplan.restart else before.get('containerID')
        return info is not None and podstate.image_converged(info.status, cplan.desired, old)

    @staticmethod
    def rollback_target(rec):
        target = rec.get('target') or {}
        return {name: snap['image'] for name, snap in (rec.get('before') or {}).items()
                if name in target and snap.get('image')}

    def describe(self, cplan, before_info, after_info):
        status = (after_info or before_info).status if (after_info or before_info) else {}
        return {'old_image': cplan.current, 'new_image': cplan.desired,
                'requested_image': self.target.get(cplan.name, cplan.desired),
                'running_image': status.get('image'), 'image_id': status.get('imageID')}


def build(kube, task, warn=None, run_command=None):
    """The operation of an options.ImageChange (runner.build)."""
    return ImageOperation(task.change.containers, task.change.labels), task


def _pairs(images):
    return ', '.join('%s=%s' % item for item in sorted(images.items()))
