# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure: what a rollout's change (images, resources) does to a pod template - whether pods of the
template can take it in place (and why not), the template after it, the JSON patch writing it, and the
values it replaces."""

import copy

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate
from ansible_collections.inplace.k8s.plugins.module_utils.pods import resources as resources_util
from ansible_collections.inplace.k8s.plugins.module_utils.pods.images import pins_tag


def _as_pod(template):
    return {'spec': (template or {}).get('spec') or {}}


def template_refusals(template, images=None, resources=None):
    """Why the change cannot be made in place on pods of this template: [{field, reason}].

    A container unknown to the template raises ValidationError (a typo, not a recreate case).
    """
    pod = _as_pod(template)
    unknown = sorted(set(images or {}).union(resources or {}) - set(podstate.container_names(pod)))
    if unknown:
        raise ValidationError('unknown container(s) %s; the template has: %s' % (
            ', '.join(unknown), ', '.join(podstate.container_names(pod))))
    refusals = []
    for name, image in sorted((images or {}).items()):
        info = podstate.find_container(pod, name)
        if info.kind == podstate.INIT and not podstate.same_image(info.spec.get('image'), image):
            refusals.append({'field': 'spec.initContainers[%s].image' % name,
                             'reason': 'a plain init container has already run in existing pods; its image '
                                       'only applies to new pods'})
    wanted, errors = resources_util.normalize_input(resources) if resources else ({}, [])
    if errors:
        raise ValidationError('invalid resources: %s' % '; '.join(errors))
    overrides = {}
    for name, partial in sorted(wanted.items()):
        info = podstate.find_container(pod, name)
        if not resources_util.resources_differ(info.spec, partial):
            continue
        if info.kind == podstate.INIT:
            refusals.append({'field': 'spec.initContainers[%s].resources' % name,
                             'reason': 'plain init containers cannot be resized'})
            continue
        after = resources_util.desired_resources(info.spec, partial)
        overrides[name] = after
        for error in resources_util.container_errors(name, resources_util.of_spec(info.spec), after):
            refusals.append({'field': 'spec.containers[%s].resources' % name, 'reason': error})
    if overrides and not refusals:
        reason = resources_util.qos_error(pod['spec'], overrides)
        if reason:
            refusals.append({'field': 'spec.containers[*].resources', 'reason': reason})
    return refusals


def apply_change(template, images=None, resources=None):
    """A copy of the template with the images and resources set."""
    result = copy.deepcopy(template)
    pod = _as_pod(result)
    for name, image in (images or {}).items():
        podstate.find_container(pod, name).spec['image'] = image
    for name, wanted in (resources or {}).items():
        spec = podstate.find_container(pod, name).spec
        spec['resources'] = resources_util.full_resources(spec, wanted)
    return result


def change_ops(template, base, images=None, resources=None):
    """JSON patch operations setting images and resources in the template found at ``base``
    (for example '/spec/template'); each guarded by a test of the container name."""
    ops = []
    pod = _as_pod(template)
    for name in sorted(set(images or {}).union(resources or {})):
        info = podstate.find_container(pod, name)
        path = base + podstate.spec_path(info)
        changed = []
        current = info.spec.get('image')
        # The tag pinned to its digest (an admission policy does that to templates too) is the tag.
        if name in (images or {}) and current != images[name] and not pins_tag(current or '', images[name]):
            changed.append({'op': 'add', 'path': path + '/image', 'value': images[name]})
        if name in (resources or {}) and resources_util.resources_differ(info.spec, resources[name]):
            changed.append({'op': 'add', 'path': path + '/resources', 'value': resources_util.full_resources(info.spec, resources[name])})
        if changed:
            ops.append({'op': 'test', 'path': path + '/name', 'value': name})
            ops.extend(changed)
    return ops


def label_ops(template, base, labels):
    """JSON patch operations adding ``labels`` to the metadata of the template found at ``base``."""
    have = ((template or {}).get('metadata') or {}).get('labels')
    missing = {k: v for k, v in (labels or {}).items() if (have or {}).get(k) != v}
    if not missing:
        return []
    if have is None:
        prefix = [] if (template or {}).get('metadata') is not None else [
            {'op': 'add', 'path': base + '/metadata', 'value': {}}]
        return prefix + [{'op': 'add', 'path': base + '/metadata/labels', 'value': missing}]
    return [{'op': 'add', 'path': base + '/metadata/labels/' + k.replace('~', '~0').replace('/', '~1'), 'value': v}
            for k, v in sorted(missing.items())]


def snapshot(template, images=None, resources=None):
    """The template's current values of what the change touches: {images: {...}, resources: {...}}."""
    pod = _as_pod(template)
    return {
        'images': {n: podstate.find_container(pod, n).spec.get('image') for n in (images or {})},
        'resources': {n: resources_util.of_spec(podstate.find_container(pod, n).spec) for n in (resources or {})},
    }
