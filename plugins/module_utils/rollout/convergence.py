# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure: has a pod reached a rollout's target? ``pod_matches``: its spec has the target images and
resources; ``pod_converged``: it also runs them (containers started and ready on the images, the kubelet
reports the resources). Image equivalence (a pinned tag, what admission stored, a digest switch) is
images.satisfies / effective_image."""

from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate
from ansible_collections.inplace.k8s.plugins.module_utils.pods import resources as resources_util
from ansible_collections.inplace.k8s.plugins.module_utils.pods.images import effective_image, satisfies


def pod_matches(pod, images=None, resources=None):
    """The pod's spec already has the target images and resources."""
    for name, image in (images or {}).items():
        info = podstate.find_container(pod, name)
        if info is None:
            return False
        # The tag pinned to its digest (by admission, or by container_recreate's image_reference) counts as the tag.
        if not satisfies(pod, name, image):
            return False
    for name, wanted in (resources or {}).items():
        info = podstate.find_container(pod, name)
        if info is None or resources_util.resources_differ(info.spec, wanted):
            return False
    return True


def pod_converged(pod, images=None, resources=None):
    """The pod runs the target: spec matches, the containers run the images, started and ready, and
    the kubelet reports the resources."""
    if not pod_matches(pod, images, resources):
        return False
    for name, image in (images or {}).items():
        info = podstate.find_container(pod, name)
        if info.kind != podstate.INIT and not podstate.image_converged(
                info.status, effective_image(pod, name, image)):
            return False
    for name, wanted in (resources or {}).items():
        info = podstate.find_container(pod, name)
        reported = info.status.get('resources')
        if reported is not None and not resources_util.reported_matches(reported, resources_util.desired_resources(info.spec, wanted)):
            return False
    return not podstate.condition_is(pod, 'PodResizePending', 'True') and \
        not podstate.condition_is(pod, 'PodResizeInProgress', 'True')
