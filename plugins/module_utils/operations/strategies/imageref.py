# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The ``image_reference`` restart strategy: switch a container's image string between its tag and
the digest the container runs (``status.imageID``). The kubelet's container hash covers the image
string, so it restarts the container through its normal path (preStop hook, grace period), and the
digest keeps the image content the same.

The switch is recorded in the pod's state record (operation ``recreate``): the record's ``before``
holds the tag form and its ``target`` the digest form. ``images.recorded_tag()`` reads it back, so a
later run switches back to the tag, and ``images.is_recorded_digest_of()`` tells other code (the
rollout, an image update) that a digest-pinned container still runs "its" tag.
"""

from ansible_collections.inplace.k8s.plugins.module_utils.operations.strategies import restart
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate
from ansible_collections.inplace.k8s.plugins.module_utils.pods.images import (
    RESTART_RECORD, is_digest_form, recorded_tag, repository, same_repository,
)

RECORD_KEY = RESTART_RECORD   # the state record written by container_recreate
STRATEGY = 'image_reference'


def repo_digest(image_id):
    """The repository digest in a ``status.imageID`` (``docker.io/library/app@sha256:ab..`` or
    ``docker-pullable://app@sha256:ab..`` -> ``sha256:ab..``); None for a bare image ID (``sha256:..``
    alone names the local image configuration, not something a registry serves)."""
    if not image_id or '@' not in image_id:
        return None
    digest = image_id.rsplit('@', 1)[1]
    return digest if podstate.pinned_digest('x@' + digest) else None


def digest_form(spec_image, image_id):
    """(the digest form of ``spec_image`` for the content it runs, None) or (None, why not)."""
    error = podstate.image_error(spec_image)
    if error:
        return None, error
    digest = repo_digest(image_id)
    if not digest:
        return None, ('status.imageID %r carries no repository digest (the image was not pulled from a '
                      'registry); there is no digest to switch to' % (image_id or ''))
    pinned = podstate.pinned_digest(spec_image)
    if pinned and pinned != digest:
        return None, 'the image pins %s but the container runs %s' % (pinned, digest)
    return '%s@%s' % (repository(spec_image), digest), None


def switch_target(spec_image, image_id, recorded=None):
    """(the other form of the container's image, None) or (None, why not).

    A tag form (``repo:tag``, ``repo``, ``repo:tag@digest``) switches to ``repo@<digest of imageID>``;
    the digest form switches back to the ``recorded`` tag form when it names the same repository.
    """
    if is_digest_form(spec_image):
        if recorded and not is_digest_form(recorded) and same_repository(recorded, spec_image):
            return recorded, None
        return None, ('the image %s is pinned by digest and no earlier tag of it is recorded on the pod; '
                      'there is no other reference to the same content to switch to' % spec_image)
    return digest_form(spec_image, image_id)


def switch_ops(pod, cplans):
    """JSON patch operations switching the image of each container plan (``current`` -> ``desired``),
    each guarded by a ``test`` of the container's name and current image."""
    ops = []
    for cplan in cplans:
        path = podstate.spec_path(podstate.find_container(pod, cplan.name))
        ops.append({'op': 'test', 'path': path + '/name', 'value': cplan.name})
        ops.append({'op': 'test', 'path': path + '/image', 'value': cplan.current})
        ops.append({'op': 'replace', 'path': path + '/image', 'value': str(cplan.desired)})
    return ops


class ImageReferenceStrategy(restart.Strategy):
    """Restart by switching the image reference (see the module docstring)."""

    name = STRATEGY
    spec_change = True   # the kubelet restarts a changed container whatever the pod's restartPolicy

    def target(self, pod, info):
        return switch_target(info.spec.get('image'), info.status.get('imageID'), recorded_tag(pod, info.name))

    def current(self, info):
        return info.spec.get('image')

    def act(self, kube, pod, cplans, tracked):
        return kube.patch_pod(podstate.meta(pod, 'namespace'), podstate.meta(pod, 'name'), switch_ops(pod, cplans))

    def finished(self, pod, cplan, tracked):
        info = podstate.find_container(pod, cplan.name)
        return info is not None and podstate.running_image_is(info.status, cplan.desired)

    def describe(self, cplan, tracked):
        return {'old_image': cplan.current, 'new_image': cplan.desired}
